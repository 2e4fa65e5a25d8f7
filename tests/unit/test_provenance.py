"""Results record which plugin modules ran compiled, per cell (#26 item 2): ``PluginHost
.compiled_modules``, ``run --json``, the ``compiled`` Parquet column and the report's description
of each configuration."""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import types
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from brokerlab import load_profile, simulate
from brokerlab.host import PluginChoices, PluginHost
from brokerlab.profiles import Profile
from brokerlab.report.configs import describe_configurations
from brokerlab.report.html import _configurations
from brokerlab.spark.cells import build_cells
from brokerlab.spark.executor import HostConfig, run_cells
from brokerlab.spark.schema import RESULT_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
HOST = PluginHost()
ROLES = {
    "entry_cache",
    "cursor_container",
    "eviction_predicates",
    "delayed_delivery",
    "ack_state_persister",
    "simulator",
}
WORKLOAD = """
name = "w"
duration_s = 1
drain_s = 1
[[topics]]
rate = 100
[[topics.subscriptions]]
name = "s"
[[topics.subscriptions.consumers]]
rate = 150
"""


@pytest.fixture
def compiled_queue(monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of the PIP-430 plugin that looks compiled (an extension module's file name)."""
    name = "brokerlab_plugins.pip430_cache.as_if_compiled"
    fake = types.ModuleType(name)
    fake.__file__ = "/x/as_if_compiled" + importlib.machinery.EXTENSION_SUFFIXES[0]
    monkeypatch.setitem(sys.modules, name, fake)
    return name


def _pip430() -> tuple[Profile, PluginChoices]:
    profile = load_profile(ROOT / "profiles" / "pulsar-4.2.conf", None, host=HOST)
    return profile, HOST.resolve(profile)


def test_each_role_lists_the_compiled_modules_of_its_plugin_package(compiled_queue: str) -> None:
    _, choices = _pip430()
    found = HOST.compiled_modules(choices, "pulsar")
    assert set(found) == ROLES
    # Under BROKERLAB_PURE_PYTHON=1 (or with no build) the fake module is the only compiled one.
    assert compiled_queue in found["entry_cache"]
    assert compiled_queue in found["eviction_predicates"]
    assert compiled_queue not in found["cursor_container"]
    assert compiled_queue not in found["simulator"]


@pytest.mark.skipif(
    os.environ.get("BROKERLAB_PURE_PYTHON", "0") in ("", "0"), reason="asserts the pure build"
)
def test_a_pure_python_run_says_nothing_ran_compiled(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    profile, _ = _pip430()
    result = simulate(profile, str(tmp_path / "w.toml"), 0, host=HOST)
    assert set(result.compiled) == ROLES
    assert all(modules == [] for modules in result.compiled.values())
    document = json.loads(result.to_json())
    assert document["compiled"] == dict(result.compiled)


def test_run_json_and_the_parquet_row_carry_the_same_record(
    tmp_path: Path, compiled_queue: str
) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    profile, _ = _pip430()
    result = simulate(profile, str(tmp_path / "w.toml"), 0, host=HOST)
    assert compiled_queue in json.loads(result.to_json())["compiled"]["entry_cache"]
    cells = build_cells([profile], [], [str(tmp_path / "w.toml")], 1, HOST)
    (row,) = run_cells([cell.as_row() for cell in cells], HostConfig())
    assert row["status"] == "ok", row["error"]
    assert json.loads(row["compiled"]) == dict(result.compiled)
    table = pa.Table.from_pylist([row], schema=RESULT_SCHEMA)  # the Parquet schema takes it
    assert table.column("compiled").type == pa.string()


def _rows(*compiled: str | None) -> pd.DataFrame:
    rows = []
    for seed, record in enumerate(compiled):
        values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
        values.update(
            cell_id=str(seed),
            profile="p",
            overrides="{}",
            workload="w",
            seed=seed,
            scale=1.0,
            status="ok",
            profile_fingerprint="f",
            plugins=json.dumps({"entry_cache": "pip430"}),
            plugin_versions=json.dumps({"entry_cache": "brokerlab 0.1.0"}),
            settings=json.dumps({"k": 1}),
            compiled=record,
            finished_at=f"2026-01-0{seed + 1}",
        )
        rows.append(values)
    return pd.DataFrame(rows, columns=list(RESULT_SCHEMA.names))


BUILT = json.dumps({"entry_cache": ["a.cache", "a.queue"], "eviction_predicates": []})
PLAIN = json.dumps({"entry_cache": [], "eviction_predicates": []})


def test_the_report_says_what_ran_compiled_per_configuration() -> None:
    (described,) = describe_configurations(_rows(BUILT, BUILT), ["p"])
    assert described.compiled_line() == "compiled: entry_cache; as Python: eviction_predicates"
    assert described.compiled_line() in _configurations([described])


def test_the_report_says_when_cells_differ_or_did_not_record_it() -> None:
    (mixed,) = describe_configurations(_rows(BUILT, PLAIN), ["p"])
    assert mixed.compiled_line() == (
        "compiled: none; as Python: eviction_predicates; compiled in some cells only: entry_cache"
    )
    # One configuration's workloads of two simulators: each records its own simulator's
    # modules and the roles it has; both compiled is no difference.
    pulsar = json.dumps({"entry_cache": ["a.cache"], "simulator": ["s.broker", "s.cursor"]})
    trace = json.dumps({"entry_cache": ["a.cache"], "simulator": ["t.replay"]})
    (both,) = describe_configurations(_rows(pulsar, trace), ["p"])
    assert both.compiled_line() == "compiled: entry_cache, simulator"
    (older,) = describe_configurations(_rows(None), ["p"])
    assert older.compiled_line() == "compiled modules: not recorded"
    without = _rows(None).drop(columns=["compiled"])  # results written before the column
    assert describe_configurations(without, ["p"])[0].compiled_line().endswith("not recorded")
