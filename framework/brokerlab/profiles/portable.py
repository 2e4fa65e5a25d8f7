"""A profile as plain data, and the profile rebuilt from it in another process.

A Spark executor and the contract kit's second interpreter get a profile this way instead of a
pickled :class:`Profile`, which would need every plugin's settings model importable just to
unpickle. The data is the values of the keys the profile sets explicitly, as profile text: loaded
on the defaults (files and environment are not read again), they give the same effective
settings wherever brokerlab and the plugins are the same. Callers compare
fingerprints to prove it (:func:`differing_keys` says where two profiles part).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from brokerlab.profiles.loader import Profile, profile_from_values, property_text
from brokerlab.records import SettingsRecord

__all__ = ["differing_keys", "portable_settings", "rebuild_profile"]


def portable_settings(profile: Profile) -> dict[str, str]:
    """Every key ``profile`` sets explicitly (in any layer) -> its effective value as text.

    Only the set keys, not every resolved one: which keys are set is itself part of a profile
    (it pairs a profile with its simulator's workloads), and defaults travel with the code.
    """
    # sim.include too: its value (the files read) is part of the fingerprint.
    return {key: _text_of(profile.get(key)) for key in sorted(profile.origins)}


def _text_of(value: Any) -> str:
    # An empty value means "not set" in a profile; an empty list set over a longer one is ",".
    return "," if isinstance(value, list | tuple) and not value else property_text(value)


def rebuild_profile(
    settings: Mapping[str, str], plugin_settings: Sequence[SettingsRecord]
) -> Profile:
    """The profile :func:`portable_settings` described, validated with ``plugin_settings``.

    The environment is not read (it is this process's, not the one that described the profile).
    Raises :class:`~brokerlab.errors.ProfileError` when a key is unknown here or a value invalid.
    """
    return profile_from_values(settings, plugin_settings=plugin_settings, origin="cell settings")


def differing_keys(expected: Mapping[str, Any], actual: Mapping[str, Any], limit: int = 5) -> str:
    """``key (a here, b there), ...`` for the first ``limit`` keys whose values differ between two
    :meth:`Profile.resolved` mappings (a key only one side has shows ``missing``)."""
    keys = sorted(set(expected) | set(actual))
    differ = [key for key in keys if expected.get(key, _MISSING) != actual.get(key, _MISSING)]
    shown = [
        f"{key} ({_text(expected.get(key, _MISSING))} -> {_text(actual.get(key, _MISSING))})"
        for key in differ[:limit]
    ]
    more = f" and {len(differ) - limit} more" if len(differ) > limit else ""
    return ", ".join(shown) + more


_MISSING = object()


def _text(value: Any) -> str:
    return "missing" if value is _MISSING else repr(value)
