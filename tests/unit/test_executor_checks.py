"""Executors rebuild each cell from plain data and refuse, in one line, a cell they cannot run as
the driver planned it: a plugin missing or of another version, or a profile that rebuilds with
another fingerprint. Spark-free: :func:`run_cells` is what each Spark task runs; the standalone
cluster test in tests/integration/test_spark_matrix.py runs the same checks on real executors."""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from brokerlab import load_profile
from brokerlab.host import PluginHost
from brokerlab.profiles.portable import portable_settings, rebuild_profile
from brokerlab.spark import plugin_check
from brokerlab.spark.cells import build_cells
from brokerlab.spark.executor import HostConfig, run_cells
from brokerlab.spark.matrix import ready_profiles
from brokerlab.spark.plugin_check import check_plugins, chosen_plugins

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"

# A -p plugin: an ack-state persister reusing the built-in range-count, and one setting whose
# default each copy of the module chooses.
PLUGIN = """
from pydantic import BaseModel, Field
from brokerlab import AckStatePersisterRecord, SettingsRecord, hookimpl
from brokerlab_plugins.ack_state.range_count import new_range_count_persister

class TallySettings(BaseModel):
    hand: int = Field({default}, alias="hand")

@hookimpl
def brokerlab_ack_state_persisters():
    yield AckStatePersisterRecord(
        name="tally", description="range-count, renamed", factory=new_range_count_persister
    )

@hookimpl
def brokerlab_settings():
    yield SettingsRecord(namespace="tally", model=TallySettings)
"""

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


@pytest.mark.parametrize(
    "path",
    [*ready_profiles(PROFILES), *sorted((PROFILES / "diagnostics").glob("*.conf"))],
    ids=lambda p: p.stem,
)
def test_every_ready_profile_rebuilds_from_its_settings_alone(path: Path) -> None:
    host = PluginHost()
    profile = load_profile(path, host=host)
    settings = json.loads(json.dumps(portable_settings(profile)))  # as a cell carries them
    copy = rebuild_profile(settings, host.plugin_settings())
    assert copy.fingerprint() == profile.fingerprint()
    assert copy.namespaces_set() == profile.namespaces_set()
    assert host.resolve(copy).names() == host.resolve(profile).names()


def _plugin_dir(root: Path, default: int) -> Path:
    folder = root / f"hand{default}"
    folder.mkdir()
    (folder / "tallyplug.py").write_text(PLUGIN.format(default=default))
    return folder


def _cells(tmp_path: Path, host: PluginHost, *overrides: str) -> list[dict[str, object]]:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    profile = load_profile(None, ["sim.ackStatePersister=tally", *overrides], host=host)
    cells = build_cells([profile], [], [str(tmp_path / "w.toml")], 1, host)
    return [cell.as_row() for cell in cells]


@pytest.fixture
def tallyplug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plugin with hand=3 importable as ``tallyplug`` (and forgotten afterwards)."""
    folder = _plugin_dir(tmp_path, 3)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "tallyplug", raising=False)
    return folder


def test_cells_carry_no_pickle_and_run_where_the_plugin_is(tmp_path: Path, tallyplug: Path) -> None:
    rows = _cells(tmp_path, PluginHost(modules=["tallyplug"]), "sim.tally.hand=4")
    assert all(not isinstance(value, bytes) for value in rows[0].values())
    assert json.loads(str(rows[0]["settings"]))["sim.tally.hand"] == "4"
    (result,) = run_cells(rows, HostConfig(modules=("tallyplug",)))
    assert result["status"] == "ok", result["error"]
    assert result["delivered"]


def test_a_plugin_missing_on_the_executor_fails_its_cells_in_one_line(
    tmp_path: Path, tallyplug: Path
) -> None:
    rows = _cells(tmp_path, PluginHost(modules=["tallyplug"]))
    (result,) = run_cells(rows, HostConfig())  # this executor was not given -p tallyplug
    assert result["status"] == "failed"
    assert result["error"] == (
        "plugin -p tallyplug (ack state persister 'tally'): no version on the driver, missing on "
        f"executor {socket.gethostname()}; {plugin_check.SHIP_HINT}"
    )


def test_another_version_on_the_executor_is_named_with_both_versions() -> None:
    host = PluginHost()
    profile = load_profile(PROFILES / "baseline.conf", host=host)
    chosen = chosen_plugins(host.resolve(profile), host.simulator_registration("pulsar"))
    assert check_plugins(chosen, host, "here") is None
    driver = [replace(p, version="0.0.1") if p.point == "entry_cache" else p for p in chosen]
    problem = check_plugins(driver, host, "exec-7")
    assert problem is not None and "\n" not in problem
    installed = host.distributions()["brokerlab"]
    # Every role of that plugin is named, then the versions once.
    roles = f"plugin brokerlab (entry cache '{chosen[0].record}', "
    assert problem.startswith(roles), problem
    assert f": 0.0.1 on the driver, {installed} on executor exec-7; " in problem
    assert problem.endswith(plugin_check.SHIP_HINT)


def test_a_profile_that_rebuilds_differently_fails_naming_the_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tallyplug: Path
) -> None:
    """Same plugin name and (no) version, other code: the fingerprint check catches it."""
    rows = _cells(tmp_path, PluginHost(modules=["tallyplug"]))
    other = _plugin_dir(tmp_path, 5)
    monkeypatch.syspath_prepend(str(other))
    monkeypatch.delitem(sys.modules, "tallyplug")
    (result,) = run_cells(rows, HostConfig(modules=("tallyplug",)))
    assert result["status"] == "failed"
    error = str(result["error"])
    assert "\n" not in error
    assert error.startswith(f"profile defaults rebuilt on executor {socket.gethostname()} has ")
    assert "(driver -> executor): sim.tally.hand (3 -> 5):" in error


def test_a_p_module_that_does_not_import_on_the_executor_fails_in_one_line(
    tmp_path: Path, tallyplug: Path
) -> None:
    rows = _cells(tmp_path, PluginHost(modules=["tallyplug"]))
    (result,) = run_cells(rows, HostConfig(modules=("tallyplug", "no_such_module_here")))
    error = str(result["error"])
    assert result["status"] == "failed" and "\n" not in error
    assert error.startswith(f"executor {socket.gethostname()} cannot load the plugins: ")
    assert "'no_such_module_here' cannot import plugin module: ModuleNotFoundError" in error
    assert error.endswith(plugin_check.SHIP_HINT)
