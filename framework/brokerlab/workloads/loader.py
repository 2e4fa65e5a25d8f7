"""Load a workload: TOML text -> a validated document, with errors that point at a line.

The document's ``simulator`` key (default ``pulsar``) picks the model that validates it:
:class:`WorkloadSpec` for the Pulsar broker model, or the model another simulator registered.

tomllib reports the line of a syntax error but keeps no positions for the values it returns, and
pydantic reports a key path (``('topics', 1, 'subscriptions', 0, 'type')``) but no line. A small
key locator (:func:`toml_key_lines`) re-reads the text and records the line of every key, table
header and array element under the same path shape, so a validation error can name the line a
person has to fix.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from brokerlab.errors import Origin, PluginError, WorkloadError, did_you_mean
from brokerlab.inputs import InputFileError, read_input_file
from brokerlab.records import WorkloadRecord
from brokerlab.workloads.model import (
    Bound,
    SubscriptionSpec,
    TopicSpec,
    WorkloadDocument,
    WorkloadSpec,
)

Models = Mapping[str, type[WorkloadDocument]]
"""Simulator name -> the model of its workload documents."""

PULSAR_ONLY: Models = {"pulsar": WorkloadSpec}

__all__ = [
    "Loc",
    "format_key",
    "load_workload_file",
    "parse_workload",
    "resolve_workload",
    "toml_key_lines",
]

Loc = tuple[str | int, ...]
"""A key path in pydantic's shape: table keys are strings, array positions are ints."""

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_AT_END = re.compile(r"\s*\(at end of document\)$")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


# --- public API ------------------------------------------------------------------------------


def parse_workload(text: str, origin: str, models: Models = PULSAR_ONLY) -> WorkloadDocument:
    """Parse and validate a workload document; ``origin`` names it in errors (a path, say).

    ``models`` maps simulator names to document models (a host's
    :meth:`~brokerlab.host.PluginHost.workload_models`); the default knows only ``pulsar``.

    Raises :class:`WorkloadError` for the first problem by line: a TOML syntax error, an unknown
    key, a value of the wrong type or out of range, or a rule that spans keys.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problem, line = _toml_error(str(exc), text)
        raise WorkloadError(f"invalid TOML: {problem}", origin=Origin(origin, line)) from None
    lines = _LazyLines(text)
    bad_float = _first_non_finite(data, ())
    if bad_float is not None:
        # TOML allows inf and nan; a simulation of infinite duration would never end.
        loc, value = bad_float
        raise WorkloadError(
            "is not a finite number",
            origin=Origin(origin, _line_for(loc, lines.get())),
            key=format_key(loc),
            value=value,
        )
    model = _model_for(data, models, lines, origin)
    try:
        # JSON mode in strict mode: TOML is typed, so "5" is not a number and 1.5 not an integer,
        # while tables still validate as models and arrays as tuples. Dates become strings, which
        # no field accepts, so they fail with a plain message.
        # The context tells a model where the document came from (relative paths in it).
        return model.model_validate_json(
            json.dumps(data, default=str), strict=True, context={"origin": origin}
        )
    except ValidationError as exc:
        raise _validation_error(exc, model, data, lines.get(), origin) from None


def _model_for(
    data: Mapping[str, Any], models: Models, lines: _LazyLines, origin: str
) -> type[WorkloadDocument]:
    name = data.get("simulator", "pulsar")
    model = models.get(name) if isinstance(name, str) else None
    if model is None:
        raise WorkloadError(
            "is not an installed simulator",
            origin=Origin(origin, _line_for(("simulator",), lines.get())),
            key="simulator",
            value=name if isinstance(name, str | int | float) else None,
            allowed=", ".join(sorted(models)),
            suggestions=did_you_mean(str(name), list(models)),
        )
    return model


def load_workload_file(
    path: str | os.PathLike[str], models: Models = PULSAR_ONLY
) -> WorkloadDocument:
    """Read and validate a workload file; every failure is a :class:`WorkloadError` naming it."""
    file = Path(path)
    try:
        raw = read_input_file(file, "workload file")
    except InputFileError as exc:
        problem = "no such workload file" if exc.missing else exc.problem
        raise WorkloadError(problem, origin=Origin.file(file)) from None
    try:
        text = raw.decode("utf-8-sig")  # tolerate a BOM that some editors write
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise WorkloadError(
            f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            origin=Origin.file(file, line),
        ) from None
    return parse_workload(text, str(file), models)


def resolve_workload(
    name_or_path: str, records: Mapping[str, WorkloadRecord], models: Models = PULSAR_ONLY
) -> WorkloadDocument:
    """A workload named on the command line: an existing file or directory or a ``*.toml`` path is
    loaded as a file (so a missing ``.toml`` is reported as a missing file, and a directory as
    one); anything else is a record name or alias."""
    # os.path: pathlib raises on a name too long to be a path, which is then simply no file.
    if name_or_path.endswith(".toml") or os.path.lexists(name_or_path):
        return load_workload_file(name_or_path, models)
    record = records.get(name_or_path)
    if record is None:
        record = next((r for r in records.values() if name_or_path in r.aliases), None)
    if record is None:
        names = sorted({n for r in records.values() for n in r.names} | set(records))
        raise WorkloadError(
            "is neither a named workload nor a workload file",
            value=name_or_path,
            allowed=", ".join(names) + " or a path to a .toml file",
            suggestions=did_you_mean(name_or_path, names),
        )
    origin = record.origin or f"workload record {record.name}"  # a third party's: not builtin
    document = parse_workload(record.document, origin, models)
    if document.name != record.name:
        # Results carry the document's name: they would be filed under another workload.
        raise PluginError(
            f"has the name {document.name!r}, but its workload record is named {record.name!r}",
            origin=Origin(origin, toml_key_lines(record.document).get(("name",))),
            key="name",
            value=document.name,
            allowed=repr(record.name),
        )
    return document


def format_key(loc: Loc) -> str:
    """``('topics', 0, 'subscriptions', 1, 'type')`` -> ``topics[0].subscriptions[1].type``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def toml_key_lines(text: str) -> dict[Loc, int]:
    """The line (1-based) of every key, table header and array element of a valid TOML document.

    ``[[topics]]`` opens ``('topics', n)``; ``[[topics.subscriptions]]`` opens the next
    subscription of the latest topic; ``[a.b]`` headers and dotted keys nest as TOML says. A key
    whose value is an inline table or a multi-line array is on the line where the key starts, and
    each element and inline key inside it on its own line. The first line wins for a path seen
    twice (an array of tables is where its first element starts).
    """
    locator = _KeyLocator(text)
    with contextlib.suppress(IndexError):  # only on text tomllib rejected: keep what was found
        locator.run()
    return locator.lines


# --- the key locator -------------------------------------------------------------------------


class _KeyLocator:
    """A forgiving single-pass scanner: it assumes tomllib has already accepted the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines: dict[Loc, int] = {}
        self.array_lengths: dict[Loc, int] = {}  # arrays of tables seen so far -> elements

    def run(self) -> None:
        table: Loc = ()
        while True:
            self._skip(newlines=True)
            if self.pos >= len(self.text):
                return
            start_line, start_pos = self.line, self.pos
            if self.text.startswith("[[", self.pos):
                self._advance(2)
                keys = self._key()
                self._advance_past("]]")
                array = (*self._resolve(keys[:-1]), keys[-1])
                index = self.array_lengths.get(array, 0)
                self.array_lengths[array] = index + 1
                table = (*array, index)
                self._record(table, start_line)
            elif self.text[self.pos] == "[":
                self._advance(1)
                keys = self._key()
                self._advance_past("]")
                table = self._resolve(keys)
                self._record(table, start_line)
            else:
                self._key_value(table)
            self._skip(newlines=False)
            if self.pos == start_pos:  # never loop on something unexpected
                self._advance(1)

    def _record(self, loc: Loc, line: int) -> None:
        # Record every prefix too, so an error about a table implied by a dotted key has a line.
        for end in range(1, len(loc) + 1):
            self.lines.setdefault(loc[:end], line)

    def _resolve(self, keys: list[str]) -> Loc:
        """A header's path: each segment that names an array of tables means its latest element."""
        loc: Loc = ()
        for key in keys:
            loc = (*loc, key)
            if loc in self.array_lengths:
                loc = (*loc, self.array_lengths[loc] - 1)
        return loc

    def _key_value(self, table: Loc) -> None:
        line = self.line
        loc = (*table, *self._key())
        self._record(loc, line)
        self._skip(newlines=False)
        if self.text.startswith("=", self.pos):
            self._advance(1)
            self._value(loc)

    def _value(self, loc: Loc) -> None:
        self._skip(newlines=False)
        char = self.text[self.pos]
        if char in "\"'":
            self._string()
        elif char == "[":
            self._advance(1)
            index = 0
            while True:
                self._skip(newlines=True)
                if self.text[self.pos] == "]":
                    self._advance(1)
                    return
                self._record((*loc, index), self.line)
                self._value((*loc, index))
                index += 1
                self._skip(newlines=True)
                if self.text[self.pos] == ",":
                    self._advance(1)
        elif char == "{":
            self._advance(1)
            while True:
                self._skip(newlines=True)
                if self.text[self.pos] == "}":
                    self._advance(1)
                    return
                self._key_value(loc)
                self._skip(newlines=True)
                if self.text[self.pos] == ",":
                    self._advance(1)
        else:  # a number, boolean or date: up to the next delimiter
            end = self.pos
            while end < len(self.text) and self.text[end] not in ",]}#\r\n":
                end += 1
            self._advance(max(end - self.pos, 1))

    def _key(self) -> list[str]:
        keys: list[str] = []
        while True:
            self._skip(newlines=False)
            char = self.text[self.pos]
            if char in "\"'":
                start = self.pos
                self._string()
                keys.append(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                if match is None:
                    return keys or [""]
                keys.append(match.group())
                self._advance(match.end() - self.pos)
            self._skip(newlines=False)
            if not self.text.startswith(".", self.pos):
                return keys
            self._advance(1)

    def _string(self) -> None:
        quote = self.text[self.pos]
        if self.text.startswith(quote * 3, self.pos):
            end = self._find_closing(quote * 3, self.pos + 3, escapes=quote == '"')
            while self.text.startswith(quote, end + 3):  # up to two quotes may end the content
                end += 1
            self._advance(end + 3 - self.pos)
        else:
            end = self._find_closing(quote, self.pos + 1, escapes=quote == '"')
            self._advance(end + 1 - self.pos)

    def _find_closing(self, delimiter: str, start: int, *, escapes: bool) -> int:
        index = start
        while not self.text.startswith(delimiter, index):
            if index >= len(self.text):
                raise IndexError("unterminated string")
            index += 2 if escapes and self.text[index] == "\\" else 1
        return index

    def _skip(self, *, newlines: bool) -> None:
        """Skip blanks and comments, and line breaks too when ``newlines``."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r" or (newlines and char == "\n"):
                self._advance(1)
            elif char == "#":
                end = text.find("\n", self.pos)
                self._advance((len(text) if end < 0 else end) - self.pos)
            else:
                return

    def _advance_past(self, delimiter: str) -> None:
        end = self.text.index(delimiter, self.pos)
        self._advance(end + len(delimiter) - self.pos)

    def _advance(self, count: int) -> None:
        self.line += self.text.count("\n", self.pos, self.pos + count)
        self.pos += count


class _LazyLines:
    """Run the locator only when an error needs a line: valid documents skip the second pass."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: dict[Loc, int] | None = None

    def get(self) -> dict[Loc, int]:
        if self._lines is None:
            self._lines = toml_key_lines(self._text)
        return self._lines


def _line_for(loc: Loc, lines: Mapping[Loc, int]) -> int | None:
    """The line of the deepest prefix of ``loc`` the locator found (a missing key: its table)."""
    for end in range(len(loc), 0, -1):
        line = lines.get(loc[:end])
        if line is not None:
            return line
    return None


# --- turning errors into one clear message ---------------------------------------------------


def _toml_error(message: str, text: str) -> tuple[str, int | None]:
    """tomllib's message without its position suffix, and the line (Python 3.11 has no lineno)."""
    match = _TOML_POSITION.search(message)
    if match:
        problem = f"{message[: match.start()]} (column {match.group(2)})"
        return _lower_first(problem), int(match.group(1))
    match = _TOML_AT_END.search(message)
    if match:
        return _lower_first(f"{message[: match.start()]} at the end of the document"), max(
            text.count("\n") + (0 if text.endswith("\n") else 1), 1
        )
    return _lower_first(message), None


def _first_non_finite(value: object, loc: Loc) -> tuple[Loc, float] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return loc, value
    items: list[tuple[str | int, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, item in items:
        found = _first_non_finite(item, (*loc, key))
        if found is not None:
            return found
    return None


def _validation_error(
    exc: ValidationError,
    root: type[BaseModel],
    data: Mapping[str, Any],
    lines: Mapping[Loc, int],
    origin: str,
) -> WorkloadError:
    errors = exc.errors()
    locs = [tuple(e["loc"]) for e in errors]
    # pydantic adds a follow-on "too short" error on an array whose items failed; the item's own
    # error is the one to report, so drop any error whose path another error's path extends.
    errors = [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)
    ]
    located = [(_error_loc(e, data), e) for e in errors]
    by_line = sorted(
        enumerate(located),
        key=lambda item: (_line_for(item[1][0], lines) or math.inf, item[0]),
    )
    loc, error = by_line[0][1]
    return _describe(error, root, loc, Origin(origin, _line_for(loc, lines)))


# Rules that span several tables (WorkloadSpec's, and TopicSpec's over its subscriptions) quote
# the value at fault: an event's unknown group (the first event naming it is pointed at), or a
# topic or subscription name given twice (the first table that repeats it; a table without the
# key has the default name). Entries: array, key, point at the repeat, default. A rule's tables
# are looked for in the table the error belongs to.
_QUOTED_KEYS: tuple[tuple[str, str, bool, str | None], ...] = (
    ("events", "group", False, None),
    ("topics", "name", True, TopicSpec.model_fields["name"].default),
    ("subscriptions", "name", True, SubscriptionSpec.model_fields["name"].default),
)


def _error_loc(error: ErrorDetails, data: Mapping[str, Any]) -> Loc:
    loc: Loc = tuple(error["loc"])
    if error["type"] != "value_error":
        return loc
    # Point at the table holding the quoted value rather than at the whole table (or document).
    owner: Any = data
    for part in loc:
        try:
            owner = owner[part]
        except (KeyError, IndexError, TypeError):
            return loc
    if not isinstance(owner, Mapping):
        return loc
    message = str(error.get("ctx", {}).get("error", ""))
    for array, key, repeat, default in _QUOTED_KEYS:
        tables = owner.get(array)
        if not isinstance(tables, list):
            continue
        found = [
            index
            for index, table in enumerate(tables)
            if isinstance(table, dict)
            and isinstance(value := table.get(key, default), str)
            and repr(value) in message
        ]
        if found:
            return (*loc, array, found[min(1, len(found) - 1)] if repeat else found[0], key)
    return loc


_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_TYPE_PROBLEMS = {
    "float_type": "is not a number",
    "float_parsing": "is not a number",
    "int_type": "is not an integer",
    "int_parsing": "is not an integer",
    "int_from_float": "is not an integer",
    "string_type": "is not a string",
    "bool_type": "is not true or false",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "dict_type": "must be a table",
    "tuple_type": "must be an array",
    "list_type": "must be an array",
}


def _describe(
    error: ErrorDetails, root: type[BaseModel], loc: Loc, origin: Origin
) -> WorkloadError:
    kind = error["type"]
    key = format_key(loc) or None
    value = error.get("input")
    shown = value if isinstance(value, str | int | float | bool) else None
    field = _field_at(root, loc)
    allowed = _allowed(field) if field is not None else None
    if kind == "extra_forbidden":
        name = str(loc[-1])
        fields = _model_fields_at(root, loc[:-1])
        return WorkloadError(
            "unknown key",
            origin=origin,
            key=key,
            allowed=", ".join(fields),
            suggestions=did_you_mean(name, fields),
        )
    if kind == "missing":
        return WorkloadError(
            "is missing and has no default", origin=origin, key=key, allowed=allowed
        )
    if kind == "value_error":
        problem = str(error.get("ctx", {}).get("error", error["msg"]))
        return WorkloadError(problem, origin=origin, key=key, value=shown)
    if kind == "literal_error":
        problem = "is not one of the allowed values"
    elif kind in _RANGE_ERRORS:
        why = _bound_reason(field) if kind.startswith("less") and field is not None else None
        problem = "is out of range" + (f": {why}" if why else "")
    elif kind == "too_short":
        least = error.get("ctx", {}).get("min_length", 1)
        problem = "must not be empty" if least == 1 else f"must hold at least {least} entries"
    else:
        problem = _TYPE_PROBLEMS.get(kind) or _lower_first(error["msg"])
    return WorkloadError(problem, origin=origin, key=key, value=shown, allowed=allowed)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# --- reading the model: which fields a table has, what a field allows ------------------------


def _model_fields_at(root: type[BaseModel], loc: Loc) -> list[str]:
    model = _model_at(root, loc)
    return list(model.model_fields) if model is not None else []


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that validates the table at ``loc`` (array positions are skipped)."""
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        model = _nested_model(model.model_fields[part].annotation)
    return model


def _field_at(root: type[BaseModel], loc: Loc) -> FieldInfo | None:
    names = [part for part in loc if isinstance(part, str)]
    if not names:
        return None
    parent = _model_at(root, loc[: max(i for i, part in enumerate(loc) if isinstance(part, str))])
    return parent.model_fields.get(names[-1]) if parent is not None else None


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _bound_reason(field: FieldInfo) -> str | None:
    """Why the field has its upper bound (its :class:`Bound` metadata), if it says."""
    pending: list[Any] = [*field.metadata, field.annotation]
    while pending:
        item = pending.pop()
        if isinstance(item, Bound):
            return item.why
        if isinstance(item, FieldInfo):
            pending.extend(item.metadata)
        elif get_origin(item) is not None:
            pending.extend(get_args(item))
    return None


def _allowed(field: FieldInfo) -> str | None:
    """What a field accepts, in words: ``'fixed', 'uniform' or 'lognormal'``, ``a number > 0``."""
    annotation: Any = field.annotation
    metadata: list[Any] = list(field.metadata)
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        annotation = members[0] if len(members) == 1 else annotation
    if get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        for item in extra:
            metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    if get_origin(annotation) is Literal:
        choices = [repr(c) for c in get_args(annotation)]
        text = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
    elif annotation is int:
        text = "an integer"
    elif annotation is float:
        text = "a number"
    elif annotation is str:
        text = "a string"
    elif annotation is bool:
        text = "true or false"
    elif _nested_model(annotation) is not None:
        model = _nested_model(annotation)
        assert model is not None
        kind = "an array of tables" if get_origin(annotation) is tuple else "a table"
        text = f"{kind} with keys {', '.join(model.model_fields)}"
    else:
        return None
    bounds = [
        f"{symbol} {getattr(item, attr)}"
        for item in metadata
        for cls, attr, symbol in (
            (annotated_types.Gt, "gt", ">"),
            (annotated_types.Ge, "ge", ">="),
            (annotated_types.Lt, "lt", "<"),
            (annotated_types.Le, "le", "<="),
        )
        if isinstance(item, cls)
    ]
    if bounds:
        text += " " + " and ".join(bounds)
    return f"{text} (or omitted)" if optional else text
