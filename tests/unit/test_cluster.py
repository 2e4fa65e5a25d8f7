"""A cluster of brokers (``broker/cluster.py``): placement by namespace bundle, a broker's outage
handing its topics to the others with cold caches, and the cluster's metrics."""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from brokerlab import load_profile
from brokerlab.broker.cluster import Cluster, bundle_of
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.metrics import invariants
from brokerlab.simulation import simulate
from brokerlab.workloads import WorkloadSpec, parse_workload

MS = 1_000_000
ROOT = Path(__file__).resolve().parents[2]
HOST = PluginHost()
# One bundle per broker, so that each broker owns one bundle at the start.
SETTINGS = ["defaultNumberOfNamespaceBundles=3", "sim.entryCache=legacy"]


def workload(events: str = "", brokers: int = 3) -> str:
    """12 topics at 100 messages/s each, one Exclusive subscription each, consumers keeping up."""
    return textwrap.dedent(
        f"""
        name = "cluster"
        duration_s = 3
        [cluster]
        brokers = {brokers}
        [[topics]]
        name = "t"
        count = 12
        rate = 100
        arrival = "constant"
        [[topics.subscriptions]]
        name = "s"
        [[topics.subscriptions.consumers]]
        """
    ) + textwrap.dedent(events)


def cluster(document: str) -> Cluster:
    spec = parse_workload(document, "cluster.toml")
    assert isinstance(spec, WorkloadSpec)
    profile = load_profile(None, SETTINGS, host=HOST)
    loop = EventLoop()
    brokers = [
        wire_broker(profile, HOST.resolve(profile), loop, 0, index=i)
        for i in range(spec.cluster.brokers)
    ]
    c = Cluster(brokers, 3)
    c.build(spec)
    return c


def test_a_topic_belongs_to_the_bundle_its_name_hashes_into() -> None:
    for name in ("t-0", "orders", "persistent://public/default/x"):
        assert bundle_of(name, 4) == zlib.crc32(name.encode()) * 4 // 2**32
    assert {bundle_of(f"t-{i}", 3) for i in range(100)} == {0, 1, 2}


def test_bundles_are_spread_over_the_brokers_and_topics_follow_them() -> None:
    c = cluster(workload())
    for index, broker in enumerate(c.brokers):
        assert broker.topics, "every broker owns some topics"
        for topic in broker.topics:
            assert bundle_of(topic.name, 3) == index
            assert topic.broker is broker
            assert all(d.broker is broker for d in topic.dispatchers)
    assert sum(len(b.topics) for b in c.brokers) == 12


UNLOAD_BROKER_0 = """
[[events]]
at_s = 1.0
kind = "unload"
broker = 0
outage_s = 0.5
"""


def test_a_broker_outage_hands_its_topics_to_the_least_loaded_broker() -> None:
    """Broker 0 goes down at 1.0 s; at 1.5 s its bundle goes to broker 1 (brokers 1 and 2 own
    one bundle each: the lower index wins the tie), with all its topics."""
    c = cluster(workload(UNLOAD_BROKER_0))
    moved = [t.name for t in c.brokers[0].topics]
    c.loop.run_until(1500 * MS - 1)
    assert [t.name for t in c.brokers[0].topics] == moved
    c.loop.run_until(1500 * MS)
    assert c.brokers[0].topics == []
    assert c.owner_of_bundle == [1, 1, 2]
    on_1 = {t.name for t in c.brokers[1].topics}
    assert set(moved) <= on_1
    for topic in c.brokers[1].topics:
        assert topic.broker is c.brokers[1]
        assert all(d.broker is c.brokers[1] for d in topic.dispatchers)
    assert c.brokers[1].counters.topic_moves == len(moved)


def test_the_outage_delays_only_the_moved_topics_by_what_is_left_of_it() -> None:
    """Each moved topic held what it was sent during the outage (1.00 to 1.49 s) and delivers it
    at 1.5 s, 500, 490, ..., 10 ms late, from broker 1 (each broker records the latencies of
    what it delivers); topics on the other brokers never waited."""
    c = cluster(workload(UNLOAD_BROKER_0))
    moved = len(c.brokers[0].topics)
    c.loop.run_until(3000 * MS)
    late = [{ms: n for ms, n in b.latency_ms.items() if ms} for b in c.brokers]
    assert late == [{}, {10 * k: moved for k in range(1, 51)}, {}]
    assert sum(b.counters.held_entries for b in c.brokers) == 50 * moved


def test_a_moved_topic_finds_the_new_brokers_cache_cold() -> None:
    """With consumers that take one message at a time at half the publish rate, entries wait
    in broker 0's cache for their reader; one cached there before the outage is a miss on
    broker 1 afterwards."""
    slow = workload(UNLOAD_BROKER_0).replace(
        "[[topics.subscriptions.consumers]]",
        "[[topics.subscriptions.consumers]]\nrate = 50\nreceiver_queue_size = 1",
    )
    c = cluster(slow)
    topic = c.brokers[0].topics[0]
    c.loop.run_until(900 * MS)
    ledger_id = topic.ledger.current_id
    last = len(topic.ledger.current) - 1
    assert c.brokers[0].cache.read(topic.name, ledger_id, last, last, "probe") == []
    c.loop.run_until(1500 * MS)
    assert c.brokers[1].cache.read(topic.name, ledger_id, last, last, "probe") == [last]


def test_a_crashed_broker_rejoins_empty_and_takes_bundles_when_another_goes_down() -> None:
    events = UNLOAD_BROKER_0.replace('"unload"', '"restart"') + textwrap.dedent(
        """
        [[events]]
        at_s = 2.0
        kind = "restart"
        broker = 1
        """
    )
    c = cluster(workload(events))
    c.loop.run_until(2000 * MS)
    # Broker 1 owned bundles 0 and 1; they go to the brokers owning the fewest: 0 (none), then
    # 0 again (it has one, broker 2 has one: the lower index).
    assert c.owner_of_bundle == [0, 0, 2]
    assert c.brokers[1].topics == []


def test_a_cluster_run_keeps_every_invariant_and_reports_the_cluster() -> None:
    events = UNLOAD_BROKER_0.replace('"unload"', '"restart"')
    profile = load_profile(None, SETTINGS, host=HOST)
    spec = parse_workload(workload(events), "cluster.toml")
    metrics = simulate(profile, spec, 0, host=HOST).metrics
    for name in invariants():
        assert metrics[name] == 0, name
    assert metrics["brokers"] == 3
    assert metrics["broker_restarts"] == 1
    assert metrics["topic_moves"] > 0
    assert metrics["unavailable_ms"] == 500 * metrics["topic_moves"]
    assert metrics["unacked_at_end"] == 0


def test_a_cluster_run_is_the_same_in_another_process_with_another_hash_seed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(workload(UNLOAD_BROKER_0.replace('"unload"', '"restart"')))
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        args = [
            sys.executable,
            "-m",
            "brokerlab",
            "run",
            "--profile",
            str(ROOT / "profiles" / "baseline.conf"),
            "--workload",
            str(path),
            "--set",
            "defaultNumberOfNamespaceBundles=3",
            "--json",
        ]
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0]["metrics"]["brokers"] == 3


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (workload(UNLOAD_BROKER_0.replace("broker = 0", "broker = 3")), "names broker 3"),
        (workload(UNLOAD_BROKER_0, brokers=1).replace("broker = 0", "broker = 1"), "1 broker"),
        (
            workload('[[events]]\nat_s = 1\nkind = "disconnect"\ngroup = "g"\nbroker = 1\n'),
            "no broker",
        ),
    ],
)
def test_events_name_brokers_the_cluster_has(document: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse_workload(document, "cluster.toml")


def test_a_partitioned_topic_is_one_topic_per_partition_sharing_rate_and_backlog() -> None:
    """4 partitions of a 400 msg/s topic with a 1,000-message backlog: each partition is a
    topic of 100 msg/s holding 250 messages at the start, placed by its own name's bundle."""
    document = workload(brokers=3).replace(
        'count = 12\nrate = 100\narrival = "constant"',
        'rate = 400\narrival = "constant"\npartitions = 4\nbacklog = 1000',
    )
    c = cluster(document)
    topics = sorted((t for b in c.brokers for t in b.topics), key=lambda t: t.name)
    assert [t.name for t in topics] == [f"t-partition-{k}" for k in range(4)]
    for topic in topics:
        assert len(topic.ledger.current) == 250
        assert topic.broker is c.owner(topic.name)
    c.loop.run_until(1000 * MS)
    for topic in topics:
        assert len(topic.ledger.current) == 250 + 100  # at 0.01, 0.02, ..., 1.00 s


def test_partitions_number_the_topics_of_each_copy() -> None:
    spec = parse_workload(
        workload().replace("count = 12", "count = 2\npartitions = 2"), "cluster.toml"
    )
    assert isinstance(spec, WorkloadSpec)
    assert spec.topics[0].topic_names() == [
        "t-0-partition-0",
        "t-0-partition-1",
        "t-1-partition-0",
        "t-1-partition-1",
    ]


@pytest.mark.parametrize("bundles", [3, 5, 7, 1000])
def test_bundles_split_the_hash_range_as_pulsars_bundle_factory(bundles: int) -> None:
    """Against apache/pulsar ``NamespaceBundleFactory.getBundles``' partition list: bundle ``i``
    starts at ``i * (0x100000000 / numBundles)`` (integer division) and the last one ends at
    0x100000000; a hash belongs to the bundle whose range holds it. Checked on 2,000 names."""
    size = 2**32 // bundles
    starts = [i * size for i in range(bundles)]

    def reference(h: int) -> int:
        return bisect.bisect_right(starts, h) - 1

    for name in (f"t-{i}" for i in range(2000)):
        assert bundle_of(name, bundles) == reference(zlib.crc32(name.encode()))
