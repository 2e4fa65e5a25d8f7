"""Profiles: broker.conf-style files, read with line origins, layered and validated.

``load_profile`` is the entry point; ``render_reference`` writes the reference profile from the
settings model. ``BrokerSettings`` is imported on first use.
"""

from __future__ import annotations

from typing import Any

from brokerlab.profiles.loader import KeyInfo, Profile, load_profile, profile_keys
from brokerlab.profiles.properties import (
    PropertyLine,
    format_properties,
    parse_properties,
    read_properties,
)
from brokerlab.profiles.reference import render_reference

__all__ = [
    "KeyInfo",
    "Profile",
    "PropertyLine",
    "format_properties",
    "load_profile",
    "parse_properties",
    "profile_keys",
    "read_properties",
    "render_reference",
]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that loading a profile with another model never builds this one.
    if name == "BrokerSettings":
        from brokerlab.profiles.model import BrokerSettings

        return BrokerSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
