"""The unload of one topic's namespace bundle (an ``unload`` event with ``topic``): every topic of
the bundle closes gracefully and opens on ``to_broker`` (or the least loaded other broker) with
its cold cache, after ``outage_s``; the other topics are untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from brokerlab import load_profile
from brokerlab.broker.cluster import Cluster, bundle_of
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.metrics import invariants
from brokerlab.simulation import Result, simulate
from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab.workloads.scaling import scale_workload

MS = 1_000_000
ROOT = Path(__file__).resolve().parents[2]
HOST = PluginHost()
BUNDLES = 4
SETTINGS = [f"defaultNumberOfNamespaceBundles={BUNDLES}", "sim.entryCache=legacy"]
# CRC-32 over 4 bundles: t-0 and t-4 are bundle 2, t-3 and t-7 bundle 0 (both start on broker 0
# of two), t-2 and t-6 bundle 1, t-1 and t-5 bundle 3 (both on broker 1).
BUNDLE_OF_T0 = {"t-0", "t-4"}


def workload(events: str = "", brokers: int = 2, consumer: str = "") -> str:
    """8 topics at 100 messages/s each for 10 s, one Exclusive subscription each."""
    return textwrap.dedent(
        f"""
        name = "topic-unload"
        duration_s = 10
        [cluster]
        brokers = {brokers}
        [[topics]]
        name = "t"
        count = 8
        rate = 100
        arrival = "constant"
        [[topics.subscriptions]]
        name = "s"
        [[topics.subscriptions.consumers]]
        {consumer}
        """
    ) + textwrap.dedent(events)


def unload(topic: str = "t-0", at_s: float = 5.0, outage_s: float = 0.5, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        [[events]]
        at_s = {at_s}
        kind = "unload"
        topic = "{topic}"
        outage_s = {outage_s}
        {extra}
        """
    )


TO_1 = unload(extra="to_broker = 1")


def spec_of(document: str) -> WorkloadSpec:
    spec = parse_workload(document, "topic-unload.toml")
    assert isinstance(spec, WorkloadSpec)
    return spec


def cluster(document: str, settings: list[str] = SETTINGS) -> Cluster:
    spec = spec_of(document)
    profile = load_profile(None, settings, host=HOST)
    loop = EventLoop()
    brokers = [
        wire_broker(profile, HOST.resolve(profile), loop, 0, index=i)
        for i in range(spec.cluster.brokers)
    ]
    c = Cluster(brokers, BUNDLES)
    c.build(spec)
    return c


def run(document: str, settings: list[str] = SETTINGS) -> Result:
    profile = load_profile(None, settings, host=HOST)
    return simulate(profile, spec_of(document), 0, host=HOST)


def names(c: Cluster, index: int) -> set[str]:
    return {t.name for t in c.brokers[index].topics}


def test_the_hand_computed_bundle_is_the_one_bundle_of_uses() -> None:
    assert {f"t-{i}" for i in range(8) if bundle_of(f"t-{i}", BUNDLES) == 2} == BUNDLE_OF_T0


def test_an_unload_of_a_topic_moves_exactly_its_bundle_after_the_outage() -> None:
    c = cluster(workload(TO_1))
    before = [names(c, 0), names(c, 1)]
    assert before[0] >= BUNDLE_OF_T0
    c.loop.run_until(5500 * MS - 1)  # closed on broker 0 from 5.0 s, still there
    assert [names(c, 0), names(c, 1)] == before
    c.loop.run_until(5500 * MS)
    assert names(c, 0) == before[0] - BUNDLE_OF_T0
    assert names(c, 1) == before[1] | BUNDLE_OF_T0
    assert c.owner_of_bundle == [0, 1, 1, 1]
    for index, broker in enumerate(c.brokers):
        for topic in broker.topics:
            assert topic.broker is broker and all(d.broker is broker for d in topic.dispatchers)
            assert topic.held is None, f"{topic.name} on broker {index} is available again"
    assert [b.counters.topic_moves for b in c.brokers] == [0, 2]


def test_the_moved_topics_wait_out_the_outage_and_the_others_never_wait() -> None:
    """The two moved topics hold what they are sent at 5.00, 5.01, ..., 5.49 s and deliver it at
    5.5 s from broker 1, 500, 490, ..., 10 ms late; no other topic waits."""
    result = run(workload(TO_1))
    b0, b1 = result.per_broker
    assert (b0["unavailable_ms"], b1["unavailable_ms"]) == (2 * 500, 0)
    assert (b0["held_entries"], b1["held_entries"]) == (0, 2 * 50)
    assert (b0["topic_moves"], b1["topic_moves"]) == (0, 2)
    assert b0["latency_p99_ms"] == 0 < b1["latency_p99_ms"]
    c = cluster(workload(TO_1))
    c.loop.run_until(10_000 * MS)
    late = [{ms: n for ms, n in b.latency_ms.items() if ms} for b in c.brokers]
    assert late == [{}, {10 * k: 2 for k in range(1, 51)}]


def test_acknowledged_messages_are_not_redelivered_the_close_persists_them() -> None:
    """An unload closes each cursor gracefully: nothing acknowledged goes out again. A crash of
    broker 0 at the same moment (for contrast) loses the acks since the last flush."""
    moved = run(workload(TO_1))
    for name in invariants():
        assert moved.metrics[name] == 0, name
    assert moved.metrics["redelivered_after_restart"] == 0
    assert moved.metrics["unacked_at_end"] == 0
    published = moved.metrics["published"]
    assert moved.metrics["delivered"] == published + moved.metrics["redelivered"]
    crash = '[[events]]\nat_s = 5.0\nkind = "restart"\nbroker = 0\n'
    assert run(workload(crash)).metrics["redelivered_after_restart"] > 0


SLOW = "rate = 50\nreceiver_queue_size = 1"


def test_a_moved_topic_finds_the_destinations_cache_cold() -> None:
    """Consumers at half the publish rate leave entries waiting in broker 0's cache; after the
    move the same entry is a miss on broker 1, and broker 1's misses grow while broker 0's do
    not (it no longer serves the moved topics)."""
    c = cluster(workload(TO_1, consumer=SLOW))
    topic = next(t for t in c.brokers[0].topics if t.name == "t-0")
    c.loop.run_until(4900 * MS)
    ledger_id = topic.ledger.current_id
    last = len(topic.ledger.current) - 1
    assert c.brokers[0].cache.read(topic.name, ledger_id, last, last, "probe") == []
    c.loop.run_until(5500 * MS)
    assert c.brokers[1].cache.read(topic.name, ledger_id, last, last, "probe") == [last]

    stay = run(workload(consumer=SLOW)).per_broker
    move = run(workload(TO_1, consumer=SLOW)).per_broker
    assert move[1]["cache_misses"] > stay[1]["cache_misses"]
    assert move[0]["cache_misses"] <= stay[0]["cache_misses"]


def test_without_to_broker_the_least_loaded_other_broker_takes_the_bundle() -> None:
    """Three brokers, four bundles: broker 0 owns bundles 0 and 3, brokers 1 and 2 one each.
    t-2's bundle (1, on broker 1) goes to broker 2 (one bundle) rather than broker 0 (two);
    t-0's (2, on broker 2) goes to broker 1, the lower index of the two owning one."""
    c = cluster(workload(unload("t-2", at_s=2.0, outage_s=0.0), brokers=3))
    assert c.owner_of_bundle == [0, 1, 2, 0]
    c.loop.run_until(2000 * MS)
    assert c.owner_of_bundle == [0, 2, 2, 0]
    assert {"t-2", "t-6"} <= names(c, 2) and not {"t-2", "t-6"} & names(c, 1)

    c = cluster(workload(unload("t-0", at_s=2.0, outage_s=0.0), brokers=3))
    c.loop.run_until(2000 * MS)
    assert c.owner_of_bundle == [0, 1, 1, 0]


@pytest.mark.parametrize("brokers", [1, 2])
def test_an_unload_to_the_owner_reloads_the_bundle_in_place(brokers: int) -> None:
    """With one broker (no other to go to), or to_broker the owner, the bundle's topics close,
    wait out the outage and open again where they were: nothing moves."""
    extra = "to_broker = 0" if brokers == 2 else ""
    document = workload(unload(extra=extra), brokers=brokers)
    c = cluster(document)
    before = [names(c, i) for i in range(brokers)]
    c.loop.run_until(10_000 * MS)
    assert [names(c, i) for i in range(brokers)] == before
    metrics = run(document).metrics
    assert metrics["topic_moves"] == 0
    assert (metrics["unavailable_ms"], metrics["held_entries"]) == (2 * 500, 2 * 50)
    assert metrics["redelivered_after_restart"] == metrics["lost"] == 0


def test_a_one_broker_run_has_the_unload_of_a_topic_too() -> None:
    result = run(workload(unload(), brokers=1))
    assert result.per_broker == ()
    assert result.metrics["held_entries"] == 2 * 50
    assert (
        result.metrics["delivered"] == result.metrics["published"] + result.metrics["redelivered"]
    )


def test_a_partition_is_named_as_pulsar_names_it() -> None:
    document = workload(unload("p-partition-1", outage_s=0.0)).replace(
        'name = "t"\ncount = 8', 'name = "p"\npartitions = 4'
    )
    partitions = [f"p-partition-{k}" for k in range(4)]
    moved = [
        name for name in partitions if bundle_of(name, BUNDLES) == bundle_of(partitions[1], BUNDLES)
    ]
    result = run(document)
    owner = bundle_of("p-partition-1", BUNDLES) % 2
    assert result.per_broker[1 - owner]["topic_moves"] == len(moved) >= 1


def test_a_scaled_workload_keeps_the_unload_of_a_topic() -> None:
    spec = scale_workload(spec_of(workload(TO_1)), 0.5)
    (event,) = spec.events
    assert (event.at_s, event.topic, event.to_broker, event.outage_s) == (2.5, "t-0", 1, 0.5)
    assert "broker" not in event.model_dump()


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (unload("t-9"), "names topic 't-9', which is no topic of the workload"),
        (unload(extra="to_broker = 2"), "names to_broker 2, but the cluster has 2 brokers"),
        (unload(extra="broker = 1"), "no broker"),
        ('[[events]]\nat_s = 1\nkind = "restart"\ntopic = "t-0"\n', "restart event takes no topic"),
        (
            '[[events]]\nat_s = 1\nkind = "disconnect"\ngroup = "g"\nto_broker = 1\n',
            "disconnect event takes no to_broker",
        ),
        ('[[events]]\nat_s = 1\nkind = "unload"\nto_broker = 1\n', "to_broker needs topic"),
        (
            '[[events]]\nat_s = 4.8\nkind = "restart"\nbroker = 1\noutage_s = 0.5\n' + TO_1,
            "falls in the outage of the one at 4.8 s",
        ),
        (
            '[[events]]\nat_s = 4.5\nkind = "restart"\nbroker = 1\noutage_s = 0.5\n' + TO_1,
            "meet at 5 s",
        ),
        (TO_1 + '[[events]]\nat_s = 5.0\nkind = "restart"\nbroker = 1\n', "meet at 5 s"),
        (
            TO_1 + '[[events]]\nat_s = 5.2\nkind = "restart"\nbroker = 1\n',
            "falls in the outage of the one at 5 s",
        ),
    ],
)
def test_malformed_unloads_of_a_topic_are_refused(events: str, message: str) -> None:
    document = workload(events).replace(
        "[[topics.subscriptions.consumers]]", '[[topics.subscriptions.consumers]]\ngroup = "g"'
    )
    with pytest.raises(WorkloadError, match=message):
        parse_workload(document, "topic-unload.toml")


def test_brokerlab_run_reports_the_move_on_the_destination(tmp_path: Path) -> None:
    path = tmp_path / "topic-unload.toml"
    path.write_text(workload(TO_1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    profile = str(ROOT / "profiles" / "baseline.conf")
    args = [sys.executable, "-m", "brokerlab", "run", "--profile", profile,
            "--workload", str(path), "--json"]  # fmt: skip
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)
    document = json.loads(done.stdout)
    assert [b["topic_moves"] for b in document["per_broker"]] == [0, 2]
    assert document["metrics"]["topic_moves"] == 2
    assert document["metrics"]["lost"] == 0


def test_consumers_that_return_during_the_outage_connect_when_their_topic_is_back() -> None:
    """Group g leaves at 4 s and returns at 5.2 s, while t-0's bundle is being unloaded (5.0 to
    5.5 s): the other topics' consumers connect at 5.2 s, the moved topics' at 5.5 s on broker 1;
    nothing is lost or delivered twice."""
    events = (
        '[[events]]\nat_s = 4.0\nkind = "disconnect"\ngroup = "g"\n'
        '[[events]]\nat_s = 5.2\nkind = "reconnect"\ngroup = "g"\n' + TO_1
    )
    document = workload(events, consumer='group = "g"')
    c = cluster(document)

    def connected() -> dict[str, bool]:
        return {
            t.name: all(k.connected for d in t.dispatchers for k in d.consumers)
            for b in c.brokers
            for t in b.topics
        }

    c.loop.run_until(5400 * MS)
    assert {name for name, up in connected().items() if not up} == BUNDLE_OF_T0
    c.loop.run_until(5500 * MS)
    assert all(connected().values()) and names(c, 1) >= BUNDLE_OF_T0
    metrics = run(document).metrics
    assert metrics["lost"] == metrics["delivered_after_ack"] == metrics["unacked_at_end"] == 0
