"""The reference profile: every key with its description, allowed values and default.

The text reads like Pulsar's broker.conf (a banner per section, a comment block per key,
``key=default``) and is itself a valid strict profile that loads to the defaults.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from pydantic import BaseModel

from brokerlab.profiles.loader import KeyInfo, profile_keys, property_text
from brokerlab.profiles.properties import format_property
from brokerlab.records import SettingsRecord

__all__ = ["render_reference"]

_WIDTH = 98
_HEADER = """\
# brokerlab reference profile: every key brokerlab knows, with its default.
#
# Generated from the settings models: do not edit; regenerate it with
#     brokerlab profile reference > profiles/reference.conf
# Copy the keys you want to change into your own profile. The syntax is Java .properties, as in
# Pulsar's broker.conf: key=value, '#' comments, and an empty value means "use the default".
"""


def render_reference(
    model: type[BaseModel] | None = None, plugin_settings: Sequence[SettingsRecord] = ()
) -> str:
    """Render the reference profile of ``model`` (``BrokerSettings`` by default) and plugins."""
    descriptions = {record.namespace: record.description for record in plugin_settings}
    sections: dict[str, list[KeyInfo]] = {}
    for info in profile_keys(model, plugin_settings).values():
        if info.namespace is not None:
            title = f"Plugin settings: sim.{info.namespace}.*"
            if descriptions.get(info.namespace):
                title += f" ({descriptions[info.namespace]})"
        else:
            title = info.section or "Other settings"
        sections.setdefault(title, []).append(info)
    out = [_HEADER]
    for title, infos in sections.items():
        out.append(f"\n### --- {title} --- ###\n")
        out.extend(_entry(info) for info in infos)
    return "".join(out)


def _entry(info: KeyInfo) -> str:
    lines: list[str] = []
    for paragraph in info.description.split("\n\n"):
        lines.extend(
            textwrap.wrap(
                paragraph,
                _WIDTH,
                initial_indent="# ",
                subsequent_indent="# ",
                break_on_hyphens=False,  # keep names such as 'sorted-list' whole
            )
        )
    lines.append(f"# Allowed: {info.allowed}.")
    return "\n" + "\n".join(lines) + "\n" + format_property(info.key, property_text(info.default))
