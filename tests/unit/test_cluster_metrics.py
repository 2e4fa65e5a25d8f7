"""Per-broker metrics of a cluster run: each broker's own numbers beside the cluster's, in the
result, ``brokerlab run`` (table and ``--json``); none for a one-broker run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cluster import SETTINGS, workload

from brokerlab import load_profile
from brokerlab.broker.cluster import PEAK_COUNTERS, bundle_of
from brokerlab.broker.simulator import NOT_PER_BROKER
from brokerlab.host import PluginHost
from brokerlab.metrics import METRICS
from brokerlab.simulation import Result, simulate
from brokerlab.workloads import parse_workload

ROOT = Path(__file__).resolve().parents[2]
HOST = PluginHost()
TOPICS = [f"t-{i}" for i in range(12)]

CRASH_BROKER_0 = """
[[events]]
at_s = 1.0
kind = "restart"
broker = 0
outage_s = 0.5
"""


def run(document: str, settings: list[str] = SETTINGS) -> Result:
    profile = load_profile(None, settings, host=HOST)
    return simulate(profile, parse_workload(document, "cluster.toml"), 0, host=HOST)


def in_bundle(bundle: int) -> int:
    return sum(bundle_of(t, 3) == bundle for t in TOPICS)


def test_each_broker_reports_what_happened_on_it() -> None:
    """Bundle b starts on broker b. Broker 0 crashes at 1.0 s; at 1.5 s its bundle goes to
    broker 1 (brokers 1 and 2 own one bundle each: the lower index). Each topic publishes at
    0.01, 0.02, ..., 2.99 s (producers stop at duration_s): broker 0's topics 99 entries before
    the crash on broker 0, the other 200 (50 held, then 150) on broker 1."""
    n0, n1, n2 = in_bundle(0), in_bundle(1), in_bundle(2)
    assert n0 and n1 and n2 and n0 + n1 + n2 == 12
    per_broker = run(workload(CRASH_BROKER_0)).per_broker
    assert len(per_broker) == 3
    assert [b["published"] for b in per_broker] == [99 * n0, 299 * n1 + 200 * n0, 299 * n2]
    assert [b["topic_moves"] for b in per_broker] == [0, n0, 0]
    assert [b["broker_restarts"] for b in per_broker] == [1, 0, 0]
    assert [b["unavailable_ms"] for b in per_broker] == [500 * n0, 0, 0]
    assert [b["held_entries"] for b in per_broker] == [0, 50 * n0, 0]
    # Broker 1 delivered the held messages, up to 500 ms late; broker 2 never waited.
    assert per_broker[1]["latency_p99_ms"] > 0 and per_broker[2]["latency_p99_ms"] == 0


def test_counters_add_up_to_the_cluster_and_gauges_peak_at_it() -> None:
    result = run(workload(CRASH_BROKER_0))
    cluster, per_broker = result.metrics, result.per_broker
    assert set(per_broker[0]) == set(cluster) - NOT_PER_BROKER
    checked = set()
    for name in per_broker[0]:
        values = [b[name] for b in per_broker]
        if cluster[name] is None:  # declared, reported by no broker (another plugin's metric)
            assert values == [None] * len(per_broker), name
            continue
        kind = METRICS[name].kind
        if kind == "counter" and name not in PEAK_COUNTERS:
            assert sum(values) == pytest.approx(cluster[name], abs=1e-5), name
        elif kind in ("counter", "gauge"):  # peaks and gauges
            assert max(values) == cluster[name], name
        elif kind == "latency":  # a quantile of the merged deliveries lies within the brokers'
            assert min(values) <= cluster[name] <= max(values), name
        checked.add(kind)
    assert checked == {"counter", "gauge", "latency", "ratio"}
    assert sum(b["delivered"] for b in per_broker) == cluster["delivered"] > 0


def test_a_moved_cursors_persister_counts_on_each_broker_that_owned_it() -> None:
    """Broker 0 crashes at 1 s and its topics end the run on brokers 1 and 2. What their
    persisters counted until then (bytes of changed state, metadata-store writes) stays broker
    0's, beside the writes it made (``ack_persists``); the rest counts where they moved. Each
    broker that wrote reports changed bytes, and the brokers' shares add up to the cluster's."""
    result = run(workload(CRASH_BROKER_0), [*SETTINGS, "sim.ackStatePersister=unlimited"])
    cluster, per_broker = result.metrics, result.per_broker
    assert per_broker[0]["topic_moves"] == 0 and per_broker[0]["ack_persists"] > 0
    for b in per_broker:
        assert (b["ack_changed_bytes"] > 0) == (b["ack_persists"] > 0)
        assert b["ack_metadata_store_writes"] >= 0
    for name in ("ack_changed_bytes", "ack_metadata_store_writes"):
        assert sum(b[name] for b in per_broker) == cluster[name]
    assert 0 < per_broker[0]["ack_changed_bytes"] < cluster["ack_changed_bytes"]


def test_ratios_are_each_brokers_own() -> None:
    # A cache too small for everything: hits and misses on every broker, in other proportions.
    result = run(workload(CRASH_BROKER_0), [*SETTINGS, "managedLedgerCacheSizeMB=1"])
    for b in result.per_broker:
        hits, misses = b["cache_hits"], b["cache_misses"]
        assert b["cache_hit_ratio"] == round(hits / (hits + misses), 6)
        acked = b["acked"]
        assert b["ack_bytes_per_ack"] == round(b["ack_persisted_bytes"] / acked, 6)
    hits = result.metrics["cache_hits"]
    assert result.metrics["cache_hit_ratio"] == round(
        hits / (hits + result.metrics["cache_misses"]), 6
    )
    assert len({b["cache_hit_ratio"] for b in result.per_broker}) > 1


def test_a_one_broker_run_has_no_per_broker_metrics() -> None:
    result = run(workload(brokers=1))
    assert result.per_broker == ()
    assert "per_broker" not in json.loads(result.to_json())
    assert list(json.loads(result.to_json())) == [
        "profile",
        "workload",
        "seed",
        "plugins",
        "metrics",
        "compiled",
    ]


def brokerlab_run(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    args = [sys.executable, "-m", "brokerlab", "run", "--profile",
            str(ROOT / "profiles" / "baseline.conf"), "--workload", str(path),
            "--set", "defaultNumberOfNamespaceBundles=3", *extra]  # fmt: skip
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)


def test_brokerlab_run_shows_each_broker(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(workload(CRASH_BROKER_0))
    document = json.loads(brokerlab_run(path, "--json").stdout)
    assert list(document) == [
        "profile", "workload", "seed", "plugins", "metrics", "per_broker", "compiled"
    ]  # fmt: skip
    profile = load_profile(
        ROOT / "profiles" / "baseline.conf", ["defaultNumberOfNamespaceBundles=3"], host=HOST
    )
    expected = simulate(profile, parse_workload(path.read_text(), str(path)), 0, host=HOST)
    assert document["per_broker"] == [dict(b) for b in expected.per_broker]
    assert document["metrics"] == dict(expected.metrics)

    table = brokerlab_run(path).stdout
    section = table[table.index("Per broker") :].splitlines()
    assert section[1].split() == ["broker", "0", "broker", "1", "broker", "2"]
    rows = {line.split()[0]: line.split()[1:] for line in section[2:]}
    published = [f"{int(b['published']):,}" for b in expected.per_broker]
    assert rows["published"] == [*published, "messages"]
    assert "topic_moves" in rows and "lost" not in rows  # only what differs between brokers


def test_brokerlab_run_of_one_broker_has_no_per_broker_section(tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text(workload(brokers=1))
    assert "Per broker" not in brokerlab_run(path).stdout
    assert "per_broker" not in json.loads(brokerlab_run(path, "--json").stdout)
