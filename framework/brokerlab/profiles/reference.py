"""The reference profile: every key with its description, allowed values and default.

The text reads like Pulsar's broker.conf (a banner per section, a comment block per key,
``key=default``) and is itself a valid strict profile that loads to the defaults. The same keys,
grouped the same way, also render as a Markdown page (``docs/reference/settings.md``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from brokerlab.profiles.loader import KeyInfo, profile_keys, property_text
from brokerlab.profiles.properties import format_property
from brokerlab.records import SettingsRecord

__all__ = ["render_reference", "render_reference_markdown"]

_WIDTH = 98
_HEADER = """\
# brokerlab reference profile: every key brokerlab knows, with its default.
#
# Generated from the settings models: do not edit; regenerate it with
#     brokerlab profile reference > profiles/reference.conf
# Copy the keys you want to change into your own profile. The syntax is Java .properties, as in
# Pulsar's broker.conf: key=value, '#' comments, and an empty value means "use the default".
"""

_MARKDOWN_HEADER = """\
# Settings reference

Every key a profile may set, with its default, the values it accepts and what it does. This page
is generated from the settings models (`brokerlab.profiles.model.BrokerSettings` and the models
that plugins register through `brokerlab_settings`), like `profiles/reference.conf`; do not edit
it, regenerate it with

```sh
brokerlab profile reference --markdown > docs/reference/settings.md
```

An empty default means "computed by the broker" (the key's description says how) or "unset".
*Source* says where a key comes from: `pulsar` keys exist in released Pulsar with the same
spelling, `pip-299`, `pip-81` and `pip-448` keys come from those proposals, `sim` keys are
brokerlab's own. *Spec* names the section of the behavioural spec that describes the key.
"""


def render_reference(
    model: type[BaseModel] | None = None, plugin_settings: Sequence[SettingsRecord] = ()
) -> str:
    """Render the reference profile of ``model`` (``BrokerSettings`` by default) and plugins."""
    out = [_HEADER]
    for section in _sections(model, plugin_settings):
        title = section.title
        if section.prefix is not None:
            title = "Plugin settings: " + (
                f"{section.prefix}*" if section.prefix else f"{section.namespace} (keys in full)"
            )
            if section.description:
                title += f" ({section.description})"
        out.append(f"\n### --- {title} --- ###\n")
        out.extend(_entry(info) for info in section.keys)
    return "".join(out)


def render_reference_markdown(
    model: type[BaseModel] | None = None, plugin_settings: Sequence[SettingsRecord] = ()
) -> str:
    """The same keys as :func:`render_reference`, as a Markdown page with one table per section."""
    out = [_MARKDOWN_HEADER]
    for section in _sections(model, plugin_settings):
        if section.prefix is None:
            out.append(f"\n## {section.title}\n\n")
        else:
            name = f"`{section.prefix}*`" if section.prefix else f"`{section.namespace}`"
            out.append(f"\n## Plugin {name}\n\n")
            if section.description:
                text = _cell(section.description)
                out.append(f"{text}\n\n" if text.endswith(".") else f"{text}.\n\n")
        out.append("| key | default | allowed | meaning |\n|---|---|---|---|\n")
        out.extend(_row(info) for info in section.keys)
    return "".join(out)


@dataclass(frozen=True)
class _Section:
    """One banner of the reference: a model section, or one plugin's keys (``prefix`` set)."""

    title: str
    prefix: str | None
    namespace: str | None
    description: str
    keys: list[KeyInfo] = field(default_factory=list)


def _sections(
    model: type[BaseModel] | None, plugin_settings: Sequence[SettingsRecord]
) -> list[_Section]:
    """The keys grouped by section in model order, then by plugin namespace."""
    descriptions = {record.namespace: record.description for record in plugin_settings}
    sections: dict[tuple[str, str | None], _Section] = {}
    for info in profile_keys(model, plugin_settings).values():
        if info.namespace is not None:
            prefix = info.key[: len(info.key) - len(info.field.alias or info.name)]
            title = f"{prefix}*" if prefix else f"{info.namespace} (keys spelled in full)"
            section = sections.setdefault(
                (title, info.namespace),
                _Section(title, prefix, info.namespace, descriptions.get(info.namespace, "")),
            )
        else:
            title = info.section or "Other settings"
            section = sections.setdefault((title, None), _Section(title, None, None, ""))
        section.keys.append(info)
    return list(sections.values())


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


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(text.replace("|", "\\|").split())


def _row(info: KeyInfo) -> str:
    default = property_text(info.default)
    shown = f"`{_cell(default)}`" if default else "(empty)"
    meaning = "<br><br>".join(_cell(part) for part in info.description.split("\n\n"))
    extra = info.field.json_schema_extra
    notes: list[str] = []
    if isinstance(extra, dict):
        if extra.get("source"):
            notes.append(f"*Source:* {extra['source']}")
        if extra.get("spec"):
            notes.append(f"*Spec:* {_cell(str(extra['spec']))}")
    if notes:
        meaning += "<br>" + "; ".join(notes) + "."
    return f"| `{info.key}` | {shown} | {_cell(info.allowed)} | {meaning} |\n"
