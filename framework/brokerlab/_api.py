"""The functions behind ``brokerlab.load_profile`` and friends: host wired to domain code."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.profiles import load_profile as _load_profile
from brokerlab.simulation import simulate

__all__ = ["load_profile", "make_host", "simulate"]


def make_host(modules: Sequence[str] = ()) -> PluginHost:
    """A plugin host with the installed plugins, ``modules`` and ``BROKERLAB_DISABLE_PLUGINS``."""
    return PluginHost(modules=modules)


def load_profile(
    path: str | Path | None,
    overrides: Mapping[str, str] | Iterable[str] | None = None,
    *,
    host: PluginHost | None = None,
    mode: Literal["strict", "lenient"] | None = None,
) -> Profile:
    """Load and validate a profile, including the keys of every installed plugin.

    ``overrides`` are ``--set`` values (``{"key": "value"}`` or ``["key=value", ...]``); they win
    over the environment, the file, its includes and the defaults. Raises
    :class:`~brokerlab.errors.ProfileError` with file, line, key and allowed values.
    """
    host = host or make_host()
    return _load_profile(path, overrides, plugin_settings=host.plugin_settings(), mode=mode)
