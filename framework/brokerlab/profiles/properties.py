"""Java ``.properties`` files, read the way ``java.util.Properties.load`` reads them.

Pulsar's ``broker.conf`` is a properties file, so a profile is one too. Unlike the JDK this parser
remembers the file and line of every key, so every later error can point at the line to fix, and it
reads UTF-8 (as ``Properties.load(Reader)`` does) rather than ISO-8859-1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from brokerlab.errors import Origin, ProfileError
from brokerlab.inputs import InputFileError, read_input_file

__all__ = [
    "PropertyLine",
    "format_properties",
    "format_property",
    "parse_properties",
    "read_properties",
]

# Java's whitespace and line terminators; str.isspace() and str.splitlines() know many more.
_WHITESPACE = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BYTE_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(u)|(.)|$)", re.DOTALL)
_LETTER_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LETTER_FOR = {char: f"\\{letter}" for letter, char in _LETTER_ESCAPES.items()}
_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class PropertyLine:
    """One key of a properties file: its unescaped key and value and where the key starts."""

    key: str
    value: str
    origin: Origin


def parse_properties(text: str, source: str) -> list[PropertyLine]:
    """Parse properties ``text``; ``source`` names it in origins and errors (usually the path).

    Follows ``java.util.Properties.load``: ``#``/``!`` comment lines, ``key=value``,
    ``key: value`` and ``key value``, continuation lines, and the ``\\t \\n \\r \\f \\\\ \\uXXXX``
    escapes (any other escaped character stands for itself). A later duplicate key overrides an
    earlier one; the result holds each key once, at the position and line of the winning one.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _LINE_BREAK.split(text)
    found: dict[str, PropertyLine] = {}
    index = 0
    while index < len(lines):
        first_line = index + 1
        logical = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not logical or logical[0] in "#!":
            continue  # comment lines never continue, even when they end in a backslash
        while _continues(logical):
            logical = logical[:-1]
            if index == len(lines):
                break  # a backslash at the end of the file is dropped, as Java does
            logical += lines[index].lstrip(_WHITESPACE)
            index += 1
        origin = Origin(source, first_line)
        key, value = _split(logical, origin)
        found.pop(key, None)  # re-insert so the order follows the winning line
        found[key] = PropertyLine(key, value, origin)
    return list(found.values())


def read_properties(path: Path) -> list[PropertyLine]:
    """Read and parse the UTF-8 properties file at ``path`` (a UTF-8 byte-order mark is accepted).

    Raises :class:`ProfileError` naming the path when the file is missing, not a regular file (a
    directory, a FIFO, a device) or unreadable, and naming the line when it is not valid UTF-8.
    """
    origin = Origin.file(path)
    try:
        data = read_input_file(path, "profile file")
    except InputFileError as exc:
        problem = "profile file not found" if exc.missing else exc.problem
        raise ProfileError(problem, origin=origin) from None
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = len(_BYTE_LINE_BREAK.split(before))
        column = exc.start - max(before.rfind(b"\n"), before.rfind(b"\r"))
        raise ProfileError(
            f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
            "save the file as UTF-8",
            origin=Origin.file(path, line),
        ) from exc
    return parse_properties(text, str(path))


def format_properties(mapping: Mapping[str, str]) -> str:
    """Write ``mapping`` as properties text, one ``key=value`` line per item, escaping as needed.

    ``parse_properties(format_properties(m), src)`` gives back ``m`` for every mapping of non-empty
    keys to values. Characters that are not printable are written as ``\\uXXXX`` (astral ones as a
    UTF-16 surrogate pair, as Java would), so the text survives any editor. The one exception is a
    string holding a lone high surrogate directly followed by a lone low surrogate: that is not
    valid Unicode, and Java (UTF-16) cannot tell it from the astral character the pair encodes.
    """
    return "".join(format_property(key, value) for key, value in mapping.items())


def format_property(key: str, value: str) -> str:
    """Write one ``key=value`` line (with its newline); see :func:`format_properties`."""
    if not key:
        raise ValueError("a property key cannot be empty")
    return f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}\n"


def _continues(line: str) -> bool:
    """An odd number of trailing backslashes joins the next line; an even number is escapes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str, origin: Origin) -> tuple[str, str]:
    """Split a logical line (leading whitespace already gone) into unescaped key and value."""
    end = len(line)
    key_end = value_start = end
    has_separator = False
    escaped = False
    for position, char in enumerate(line):
        if not escaped and (char in "=:" or char in _WHITESPACE):
            key_end, value_start = position, position + 1
            has_separator = char in "=:"
            break
        escaped = char == "\\" and not escaped
    # Whitespace, then at most one '=' or ':' (when whitespace ended the key), then whitespace.
    while value_start < end:
        char = line[value_start]
        if char not in _WHITESPACE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    key = _unescape(line[:key_end], origin, None)
    if not key:
        raise ProfileError(
            "has a value but no key", origin=origin, value=line[value_start:] or None
        )
    return key, _unescape(line[value_start:], origin, key)


def _unescape(text: str, origin: Origin, key: str | None) -> str:
    if "\\" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        code, bad_u, other = match.groups()
        if code is not None:
            return chr(int(code, 16))
        if bad_u is not None:
            raise ProfileError(
                "has a malformed \\uXXXX escape",
                origin=origin,
                key=key,
                value=text,
                allowed="\\u followed by exactly four hexadecimal digits",
            )
        # A lone backslash can only survive at the very end of the file; Java drops it.
        return "" if other is None else _LETTER_ESCAPES.get(other, other)

    result = _ESCAPE.sub(replace, text)
    if _SURROGATE.search(result):
        # Java strings are UTF-16: an escaped surrogate pair is one astral character.
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return result


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for position, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in _LETTER_FOR:
            out.append(_LETTER_FOR[char])
        elif char == " " and (is_key or position == 0):
            out.append("\\ ")  # a space ends a key, and leading spaces of a value are skipped
        elif is_key and char in "=:#!":
            out.append("\\" + char)  # separators end a key; '#' and '!' first make a comment
        elif not char.isprintable() or _SURROGATE.match(char):
            out.append(_unicode_escape(char))
        else:
            out.append(char)
    return "".join(out)


def _unicode_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
