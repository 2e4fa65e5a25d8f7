"""Metrics belong to whoever produces them: declared through ``brokerlab_metrics``, assembled by
the host, null where nothing reported them, and carried with the results."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from brokerlab import (
    AckStatePersister,
    AckStatePersisterRecord,
    Metric,
    PluginContext,
    PluginError,
    PluginHost,
    hookimpl,
    load_profile,
    simulate,
)
from brokerlab.metrics import FRAMEWORK_METRICS, FRAMEWORK_PLUGIN, MetricRegistry
from brokerlab.testing import CONTRACT_WORKLOAD

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"


class CountingPersister:
    """The built-in range-count persister, also counting its acknowledgement calls under a
    metric of its plugin's own."""

    def __init__(self, inner: AckStatePersister) -> None:
        self.inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def acked(self, *args: Any) -> Any:
        self.calls += 1
        return self.inner.acked(*args)

    def stats(self) -> Mapping[str, float]:
        return {**self.inner.stats(), "counting_acked_calls": self.calls}


class Counting:
    """A third-party plugin object: a persister, the metric it reports, and one it never does."""

    def __init__(self, inner: AckStatePersisterRecord, declare: tuple[Metric, ...]) -> None:
        self.inner = inner
        self.declare = declare

    @hookimpl
    def brokerlab_ack_state_persisters(self) -> Iterator[AckStatePersisterRecord]:
        inner = self.inner

        def factory(context: PluginContext, cursor: str) -> AckStatePersister:
            return CountingPersister(inner.factory(context, cursor))

        yield AckStatePersisterRecord(name="counting", description="test", factory=factory)

    @hookimpl
    def brokerlab_metrics(self) -> Iterator[Metric]:
        yield from self.declare


CALLS = Metric("counting_acked_calls", "calls", "counter", "Calls of acked().", "counting")
QUIET = Metric("counting_quiet", "entries", "gauge", "Declared, never reported.", "counting")
ONLY_SOMETIMES = Metric(
    "counting_sometimes", "entries", "counter", "Reported when...", "counting", reported_when="x"
)


def counting_host(*declare: Metric) -> PluginHost:
    inner = PluginHost().select("ack_state_persister", "range-count").record
    return PluginHost(plugins={"countingplug": Counting(inner, declare)})


# ---- who declares what ----------------------------------------------------------------------


def test_the_builtins_plugin_specific_metrics_are_declared_by_their_plugins() -> None:
    registry = PluginHost().metrics()
    owners = {
        "cache_requeues_accessed": "pip430_cache",
        "cache_requeues_expected_reads": "pip430_cache",
        "cache_non_evictable_bytes": "pip430_cache",
        "cache_inserts_refused": "legacy_cache",
        "cache_ledgers_visited": "legacy_cache",
        "delayed_prunes": "pip448_delayed_delivery",
        "delayed_subscription_state_bytes": "pip448_delayed_delivery",
        "ack_changed_bytes": "ack_state",
        "ack_write_amplification": "ack_state",
        "ack_swap_outs": "ack_state",
        "index_lookups": "kafka_remote_index",
        "index_cache_hit_ratio": "kafka_remote_index",
        "trace_hit_ratio": "cache_trace",
        # The broker model's own, and what every plugin of an extension point shares.
        "cache_hits": FRAMEWORK_PLUGIN,
        "ack_persists": FRAMEWORK_PLUGIN,
        "delayed_index_bytes": FRAMEWORK_PLUGIN,
        "storage_entries_read": FRAMEWORK_PLUGIN,
    }
    assert {name: registry.owner(name).plugin for name in owners} == owners
    framework = {m.name for m in FRAMEWORK_METRICS}
    plugins = {d.metric.name for d in registry.declared() if d.plugin != FRAMEWORK_PLUGIN}
    assert framework.isdisjoint(plugins) and framework | plugins == set(registry)
    assert registry.owner("cache_hits").source.startswith("brokerlab ")


def test_without_the_ack_state_plugin_the_registry_has_none_of_its_metrics() -> None:
    from brokerlab_plugins.ack_state.metrics import METRICS as ACK_STATE

    every = PluginHost().metrics()
    without = PluginHost(blocked=["ack_state"]).metrics()
    assert {m.name for m in ACK_STATE} <= set(every)
    assert not {m.name for m in ACK_STATE} & set(without)
    # What the broker counts from every persister's writes stays the framework's.
    assert {"ack_persists", "ack_persisted_bytes", "ack_bytes_per_ack"} <= set(without)
    assert PluginHost(blocked=["kafka_remote_index"]).metrics().of("kafka-tiered-storage") == []


# ---- values ---------------------------------------------------------------------------------


def test_a_third_party_plugin_declares_and_reports_its_own_metric() -> None:
    host = counting_host(CALLS, QUIET, ONLY_SOMETIMES)
    profile = load_profile(None, ["sim.ackStatePersister=counting"], host=host)
    result = simulate(profile, CONTRACT_WORKLOAD, 0, host=host)
    assert (result.metrics["counting_acked_calls"] or 0) > 0
    document = json.loads(result.to_json())["metrics"]
    assert document["counting_acked_calls"] == result.metrics["counting_acked_calls"]
    # Declared and not reported: null, never 0; reported only under a condition: absent.
    assert document["counting_quiet"] is None and '"counting_quiet": null' in result.to_json()
    assert "counting_sometimes" not in document
    # Another persister does not report the plugin's metric: null there too.
    other = load_profile(None, ["sim.ackStatePersister=unlimited"], host=host)
    assert simulate(other, CONTRACT_WORKLOAD, 0, host=host).metrics["counting_acked_calls"] is None


def test_a_builtin_cache_leaves_the_other_caches_metrics_null() -> None:
    host = PluginHost()
    legacy = simulate(load_profile(PROFILES / "pulsar-4.0-legacy.conf", host=host), "tailing")
    pip430 = simulate(load_profile(PROFILES / "pulsar-4.2.conf", host=host), "tailing")
    for name in ("cache_requeues_accessed", "cache_requeues_expected_reads"):
        assert legacy.metrics[name] is None and pip430.metrics[name] is not None
    assert pip430.metrics["cache_ledgers_visited"] is None
    assert (legacy.metrics["cache_ledgers_visited"] or 0) > 0


def test_a_ratio_of_an_unreported_counter_is_null() -> None:
    host = counting_host(
        CALLS,
        QUIET,
        Metric(
            "counting_share", "ratio", "ratio", "quiet / calls", "counting",
            ratio_of=("counting_quiet", ("counting_acked_calls",)),
        ),
        Metric(
            "counting_per_ack", "ratio", "ratio", "calls / acked", "counting",
            ratio_of=("counting_acked_calls", ("acked",)),
        ),
    )  # fmt: skip
    profile = load_profile(None, ["sim.ackStatePersister=counting"], host=host)
    metrics = simulate(profile, CONTRACT_WORKLOAD, 0, host=host).metrics
    assert metrics["counting_share"] is None
    calls, acked = metrics["counting_acked_calls"], metrics["acked"]
    assert calls and acked and metrics["counting_per_ack"] == pytest.approx(calls / acked)


# ---- collisions -----------------------------------------------------------------------------


class Declares:
    def __init__(self, *metrics: Metric) -> None:
        self.metrics = metrics

    @hookimpl
    def brokerlab_metrics(self) -> Iterator[Metric]:
        yield from self.metrics


def test_a_metric_declared_twice_is_an_error_naming_both_plugins() -> None:
    twin = Metric("twin_count", "entries", "counter", "A twin.", "twins")
    host = PluginHost(plugins={"first_plug": Declares(twin), "second_plug": Declares(twin)})
    with pytest.raises(PluginError) as info:
        host.metrics()
    assert str(info.value) == (
        "the metric 'twin_count' is declared twice: by plugin 'first_plug' (-p first_plug) and by "
        "plugin 'second_plug' (-p second_plug); rename one of them"
    )
    clash = Metric("cache_hits", "entries", "counter", "Mine.", "mine")
    with pytest.raises(PluginError, match=r"by plugin 'brokerlab\.broker\.simulator' \(brokerlab"):
        PluginHost(plugins={"mine": Declares(clash)}).metrics()
    with pytest.raises(PluginError, match=r"'Bad Name'.*lower-case letters"):
        PluginHost(plugins={"bad": Declares(Metric("Bad Name", "", "gauge", "", "g"))}).metrics()


TWIN = """
from brokerlab import Metric, hookimpl

@hookimpl
def brokerlab_metrics():
    yield Metric("twin_count", "entries", "counter", "A twin.", "twins")
"""


@pytest.mark.parametrize(
    "command",
    [["metrics"], ["run", "--profile", str(PROFILES / "baseline.conf"), "--workload", "tailing"]],
)
def test_the_cli_refuses_a_metric_declared_twice_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    for module in ("twin_a", "twin_b"):
        (tmp_path / f"{module}.py").write_text(TWIN, encoding="utf-8")
    env = dict(os.environ, BROKERLAB_PURE_PYTHON="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "framework"), str(ROOT / "plugins")])
    result = subprocess.run(
        [sys.executable, "-m", "brokerlab", "-p", "twin_a", "-p", "twin_b", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # -p finds modules in the current folder
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "brokerlab: error: the metric 'twin_count' is declared twice: by plugin 'twin_a' "
        "(-p twin_a) and by plugin 'twin_b' (-p twin_b); rename one of them"
    ]


# ---- results: Parquet, summary.csv, the report -----------------------------------------------


def test_an_unreported_metric_is_null_in_parquet_and_blank_in_summary(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow as pa

    from brokerlab.spark.cells import build_cells
    from brokerlab.spark.executor import HostConfig, run_cells
    from brokerlab.spark.results import ResultStore, write_profile_order, write_summary
    from brokerlab.spark.schema import result_schema

    host = PluginHost()
    registry = host.metrics()
    names = ("pulsar-4.0-legacy.conf", "pulsar-4.2.conf")
    profiles = [load_profile(PROFILES / name, host=host) for name in names]
    cells = build_cells(profiles, [], ["tailing"], 1, host, scale=0.05)
    rows = list(run_cells([c.as_row() for c in cells], HostConfig(metrics=tuple(registry))))
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    store = ResultStore(tmp_path, metrics=tuple(registry))
    store.write(pa.Table.from_pylist(rows, schema=result_schema(registry)))
    write_profile_order(tmp_path, [c.profile for c in cells], metrics=registry)
    frame = store.load()
    legacy = frame[frame["profile"] == "pulsar-4.0-legacy"].iloc[0]
    pip430 = frame[frame["profile"] == "pulsar-4.2"].iloc[0]
    assert math.isnan(legacy["cache_requeues_accessed"])
    assert legacy["cache_ledgers_visited"] > 0 and pip430["cache_requeues_accessed"] >= 0
    assert frame["index_lookups"].isna().all()  # another simulator's: null as ever
    write_summary(frame, tmp_path, registry)
    with (tmp_path / "summary.csv").open(encoding="utf-8") as handle:
        summary = {(r["profile"], r["metric"]): r for r in csv.DictReader(handle)}
    unreported = summary[("pulsar-4.0-legacy", "cache_requeues_accessed")]
    assert (unreported["n"], unreported["mean"], unreported["unit"]) == ("0", "", "entries")
    reported = summary[("pulsar-4.2", "cache_requeues_accessed")]
    assert reported["n"] == "1" and reported["aggregation"] == "mean"
    assert not any(metric == "index_lookups" for _, metric in summary)


def test_a_report_reads_the_metrics_recorded_with_the_results(tmp_path: Path) -> None:
    """A folder whose results hold a metric of a plugin that is not installed here: the report
    takes its unit and meaning from ``matrix.json`` and says where it was not reported."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("matplotlib")
    import pyarrow as pa

    from brokerlab.metrics import Declared
    from brokerlab.report import build_report
    from brokerlab.spark.results import ResultStore, read_metrics, write_profile_order
    from brokerlab.spark.schema import result_schema

    elsewhere = Metric("elsewhere_widgets", "widgets", "counter", "Widgets.", "elsewhere")
    assert "elsewhere_widgets" not in PluginHost().metrics()
    registry = (
        PluginHost()
        .metrics()
        .merged(MetricRegistry([Declared(elsewhere, "elsewhere", "brokerlab-elsewhere 1.0")]))
    )
    schema = result_schema(registry)
    rows = []
    for profile, widgets in (("with", 5.0), ("without", None)):
        for seed in range(2):
            row: dict[str, object] = dict.fromkeys(schema.names)
            row.update(
                cell_id=f"{profile}-{seed}", profile=profile, overrides="{}", workload="w",
                seed=seed, scale=1.0, status="ok", profile_fingerprint=profile * 8,
                brokerlab_version="0", finished_at="2026-01-01T00:00:00+00:00",
                storage_entries_read=100.0 + seed, delivered=10.0, elsewhere_widgets=widgets,
            )  # fmt: skip
            rows.append(row)
    ResultStore(tmp_path, metrics=tuple(registry)).write(pa.Table.from_pylist(rows, schema=schema))
    write_profile_order(tmp_path, ["with", "without"], metrics=registry)
    recorded = read_metrics(tmp_path)
    assert recorded is not None and recorded.owner("elsewhere_widgets").plugin == "elsewhere"
    page = build_report(tmp_path).path.read_text(encoding="utf-8")
    assert "elsewhere_widgets" in page and "widgets" in page and "not reported" in page
    with (tmp_path / "summary.csv").open(encoding="utf-8") as handle:
        found = [r for r in csv.DictReader(handle) if r["metric"] == "elsewhere_widgets"]
    assert {(r["profile"], r["unit"], r["n"]) for r in found} == {
        ("with", "widgets", "2"),
        ("without", "widgets", "0"),
    }


def test_the_registry_travels_as_json() -> None:
    registry = PluginHost().metrics()
    again = MetricRegistry.from_json(json.loads(json.dumps(registry.as_json())))
    assert list(again) == list(registry) and dict(again) == dict(registry)
    assert again.owner("ack_changed_bytes").plugin == "ack_state"
