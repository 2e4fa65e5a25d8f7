"""The reference profile: reads like broker.conf, and loads strictly to the defaults."""

from __future__ import annotations

import io
from importlib.metadata import entry_points
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from brokerlab.cli import main
from brokerlab.host import ENTRY_POINT_GROUP, PluginHost
from brokerlab.profiles import load_profile, profile_keys, read_properties, render_reference
from brokerlab.profiles.reference import render_reference_markdown
from brokerlab.records import SettingsRecord

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"

LONG = (
    "Fraction of the cache limit that a size eviction frees the cache down to. Size eviction "
    "starts once the cache holds more than 0.98 of the limit; names like sorted-list stay whole."
)


class Model(BaseSettings):
    model_config = SettingsConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    entry_cache: str = Field(
        "pip430",
        alias="sim.entryCache",
        description="Entry cache to use.",
        json_schema_extra={"section": "Simulation"},
    )
    include: tuple[str, ...] = Field(
        (), alias="sim.include", json_schema_extra={"section": "Simulation"}
    )
    watermark: float = Field(
        0.9,
        alias="managedLedgerCacheEvictionWatermark",
        ge=0.0,
        le=1.0,
        description=LONG,
        json_schema_extra={"section": "Entry cache"},
    )
    cache_mb: int | None = Field(
        None, alias="managedLedgerCacheSizeMB", ge=0, json_schema_extra={"section": "Entry cache"}
    )
    strict: bool = Field(False, alias="isDelayedDeliveryDeliverAtTimeStrict")
    codec: Literal["NONE", "LZ4"] = Field("LZ4", alias="managedCursorInfoCompressionType")
    odd: str = Field("#odd = value\\", alias="weird key")


class Plugin(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    limit: int = Field(2048, alias="byteLimit", ge=1024, description="Byte limit.")
    tags: list[str] = Field(default_factory=lambda: ["a", "b"], alias="tags")


RECORDS = [SettingsRecord(namespace="ackState", model=Plugin, description="PIP-299 byte limit")]


def test_banner_per_section_in_model_order() -> None:
    text = render_reference(Model, RECORDS)
    banners = [line for line in text.splitlines() if line.startswith("### ---")]
    assert banners == [
        "### --- Simulation --- ###",
        "### --- Entry cache --- ###",
        "### --- Other settings --- ###",
        "### --- Plugin settings: sim.ackState.* (PIP-299 byte limit) --- ###",
    ]


def test_comment_block_then_key_equals_default() -> None:
    text = render_reference(Model, RECORDS)
    assert (
        "\n# Allowed: a number from 0.0 to 1.0.\nmanagedLedgerCacheEvictionWatermark=0.9\n" in text
    )
    assert "\n# Allowed: an integer >= 0.\nmanagedLedgerCacheSizeMB=\n" in text
    assert "\n# Allowed: true or false.\nisDelayedDeliveryDeliverAtTimeStrict=false\n" in text
    assert "\n# Allowed: one of NONE, LZ4.\nmanagedCursorInfoCompressionType=LZ4\n" in text
    assert "\n# Byte limit.\n# Allowed: an integer >= 1024.\nsim.ackState.byteLimit=2048\n" in text
    assert "\nsim.ackState.tags=a,b\n" in text
    assert "\nsim.include=\n" in text


def test_descriptions_are_wrapped_under_98_columns() -> None:
    text = render_reference(Model, RECORDS)
    assert max(len(line) for line in text.splitlines()) <= 98
    comments = [line[2:] for line in text.splitlines() if line.startswith("# ")]
    joined = " ".join(comments)
    assert LONG in joined
    assert any("sorted-list" in line for line in comments)
    block = text.split("managedLedgerCacheEvictionWatermark=")[0].rsplit("\n\n", 1)[1]
    assert len(block.splitlines()) >= 3  # the long description spans lines


def test_reference_parses_and_loads_strictly_to_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "reference.conf"
    path.write_text(render_reference(Model, RECORDS), encoding="utf-8")
    keys = [line.key for line in read_properties(path)]
    assert keys == list(profile_keys(Model, RECORDS))
    profile = load_profile(path, plugin_settings=RECORDS, environ={}, model=Model)
    assert profile.mode == "strict"
    defaults = load_profile(None, plugin_settings=RECORDS, environ={}, model=Model)
    assert profile.resolved() == defaults.resolved()
    assert profile.settings.odd == "#odd = value\\"


def test_reference_of_the_real_model_loads_to_its_defaults(tmp_path: Path) -> None:
    model = pytest.importorskip("brokerlab.profiles.model", reason="BrokerSettings not written yet")
    path = tmp_path / "reference.conf"
    text = render_reference()
    path.write_text(text, encoding="utf-8")
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert max(len(line) for line in comments) <= 98  # key=value lines may be longer
    for section in model.SECTIONS:
        assert f"### --- {section} --- ###" in text
    profile = load_profile(path, environ={}, mode="strict")
    assert profile.settings == model.BrokerSettings()
    assert profile.resolved() == load_profile(None, environ={}).resolved()


# ---- the Markdown page (docs/reference/settings.md) ---------------------------------------------


def test_markdown_has_one_table_per_section_in_reference_order() -> None:
    text = render_reference_markdown(Model, RECORDS)
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Simulation",
        "## Entry cache",
        "## Other settings",
        "## Plugin `sim.ackState.*`",
    ]
    assert text.count("| key | default | allowed | meaning |") == len(headings)
    assert "\nPIP-299 byte limit.\n" in text  # the plugin's description under its heading


def test_markdown_rows_name_key_default_allowed_and_meaning() -> None:
    text = render_reference_markdown(Model, RECORDS)
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| `")}
    assert rows["| `managedLedgerCacheEvictionWatermark`"].startswith(
        "| `managedLedgerCacheEvictionWatermark` | `0.9` | a number from 0.0 to 1.0 | Fraction"
    )
    assert "| `managedLedgerCacheSizeMB` | (empty) | an integer >= 0 |" in text
    assert "| `sim.ackState.byteLimit` | `2048` | an integer >= 1024 | Byte limit. |" in text
    assert "| `sim.ackState.tags` | `a,b` | a comma-separated list |" in text
    assert LONG in text  # never wrapped: one row per key
    assert len(rows) == len(profile_keys(Model, RECORDS))


def test_markdown_cells_escape_pipes_and_keep_paragraphs() -> None:
    class Piped(BaseModel):
        model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

        mode: str = Field("a|b", alias="mode", description="First | second.\n\nMore.")

    text = render_reference_markdown(Model, [SettingsRecord(namespace="p", model=Piped)])
    assert "| `sim.p.mode` | `a\\|b` | any text | First \\| second.<br><br>More. |" in text


def _builtin_settings() -> tuple[SettingsRecord, ...]:
    """The settings models of brokerlab's own distribution: a third-party plugin installed in this
    environment must not make the committed page look stale."""
    own = {
        ep.name: ep.load()
        for ep in entry_points(group=ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.name == "brokerlab"
    }
    return PluginHost(entry_points=False, blocked=(), plugins=own).plugin_settings()


def test_settings_page_is_in_sync_with_the_models() -> None:
    expected = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert render_reference_markdown(plugin_settings=_builtin_settings()) == expected, (
        "docs/reference/settings.md is stale: "
        "`brokerlab profile reference --markdown > docs/reference/settings.md`"
    )


def test_cli_prints_the_markdown_page() -> None:
    out = io.StringIO()
    assert main(["profile", "reference", "--markdown"], out=out) == 0
    assert out.getvalue().startswith("# Settings reference\n")
    assert "| `sim.entryCache` | `pip430` |" in out.getvalue()
