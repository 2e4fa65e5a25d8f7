"""Typed errors for bad input.

Everything below the CLI raises one of these; only :mod:`brokerlab.cli` turns them into text on
stderr and exit code 2. Each error carries where the bad input came from, so the message can point
at the file, line and key a person has to fix.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BrokerlabError",
    "Origin",
    "OutputError",
    "PluginError",
    "ProfileError",
    "WorkloadError",
    "clip",
    "did_you_mean",
]

QUOTE_LIMIT = 80
"""At most this many characters of a value (or key) are quoted in an error line: a value of
megabytes pasted by mistake would otherwise be echoed in full."""


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` itself, or its first ``limit`` characters and how long it really is."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file and line, or a named source such as ``--set`` or ``env``."""

    source: str
    line: int | None = None

    @classmethod
    def file(cls, path: str | Path, line: int | None = None) -> Origin:
        return cls(str(path), line)

    def __str__(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"


_PATH_LIMIT = 256  # a file named on the command line: longer than a value, still not megabytes

# A quoted value inside a problem's own words ("names topic 'x...'"), longer than the limit.
# Quotes that open after no letter and close before none: "machine's" is no quote.
_LONG_QUOTE = re.compile(rf"(?<!\w)'([^'\n]{{{QUOTE_LIMIT + 1},}})'(?!\w)")


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 3) -> list[str]:
    """Return up to ``n`` choices close to ``word`` (case-insensitive), best first."""
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[c] for c in close]


class BrokerlabError(Exception):
    """Base class of the errors a user can fix by changing their input."""


class _LocatedError(BrokerlabError):
    """An error about one key (or one place) of an input file.

    The message reads ``FILE:LINE: key 'K': value 'V' <problem>; allowed: A (did you mean 'X'?)``;
    every part that is unknown is left out.
    """

    def __init__(
        self,
        problem: str,
        *,
        origin: Origin | None = None,
        key: str | None = None,
        value: object = None,
        allowed: str | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.problem = problem
        self.origin = origin
        self.key = key
        self.value = value
        self.allowed = allowed
        self.suggestions = tuple(suggestions)
        super().__init__(self.render())

    def render(self) -> str:
        parts: list[str] = []
        if self.origin is not None:
            parts.append(f"{clip(str(self.origin), _PATH_LIMIT)}:")
        if self.key is not None:
            parts.append(f"key '{clip(self.key)}':")
        if self.value is not None:
            # Booleans as both file formats spell them (TOML, broker.conf), not as Python does.
            shown = str(self.value).lower() if isinstance(self.value, bool) else str(self.value)
            parts.append(f"value {clip(shown)!r}")
        parts.append(_LONG_QUOTE.sub(lambda m: repr(clip(m.group(1))), self.problem))
        text = " ".join(parts)
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        if self.suggestions:
            text += " (did you mean " + " or ".join(repr(clip(s)) for s in self.suggestions) + "?)"
        return text


class ProfileError(_LocatedError):
    """A profile (broker.conf-style file, ``--set`` or environment value) is invalid."""


class WorkloadError(_LocatedError):
    """A workload file or named workload is malformed or invalid."""


class PluginError(_LocatedError):
    """A plugin cannot be loaded, two plugins clash, or a selected plugin is not there."""


class OutputError(BrokerlabError):
    """An output folder or file cannot be written (a clash, a full disk, another run's lock).

    The message names the path and the operating system's reason, and says what was kept.
    """
