"""The names a new plugin is known by, all derived from the one its author chose."""

from __future__ import annotations

import re
from dataclasses import dataclass

from brokerlab.errors import BrokerlabError

__all__ = ["PluginNames", "ScaffoldError", "plugin_names"]

# Lowercase words joined by single hyphens or underscores: a valid distribution name that maps
# onto a valid module name, record name, entry-point name and settings namespace.
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_MAX_LENGTH = 30  # longer names would push generated lines past 100 characters


class ScaffoldError(BrokerlabError):
    """A plugin that cannot be generated as asked: a bad name, kind or output folder."""


@dataclass(frozen=True)
class PluginNames:
    """``name`` (distribution, record, entry point and ``sim.<name>.`` namespace) and the
    import name ``module``."""

    name: str
    module: str


def plugin_names(name: str) -> PluginNames:
    """The names of a plugin called ``name``; a :class:`ScaffoldError` says why one is refused."""
    if len(name) > _MAX_LENGTH or _NAME.fullmatch(name) is None:
        raise ScaffoldError(
            f"the plugin name {name!r} is not usable: use lowercase letters, digits and single "
            "'-' or '_' between them, starting with a letter, at most "
            f"{_MAX_LENGTH} characters (e.g. 'clock-cache' or 'brokerlab_lfu')"
        )
    return PluginNames(name=name, module=name.replace("-", "_"))
