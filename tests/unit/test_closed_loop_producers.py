"""Closed-loop producers and write latency, against hand-computed cases.

With ``arrival = "constant"`` a topic at 1,000 msg/s offers one message at every millisecond from
1 ms to 1,999 ms of a 2 s run (1,999 messages). A write that completes at the instant a message
arrives completes first: it was scheduled earlier, and the loop runs one instant's callbacks in
scheduling order.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from itertools import accumulate

import pytest

from brokerlab import load_profile, simulate
from brokerlab.broker.arrivals import GroupArrivals
from brokerlab.broker.broker import Broker
from brokerlab.broker.durations import Durations
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import PUBLISH_NS
from brokerlab.broker.producers import FlowPublisher, PublishStats
from brokerlab.broker.simulator import wire_broker
from brokerlab.broker.streams import stream
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.metrics import metrics_of
from brokerlab.profiles import Profile
from brokerlab.simulation import Result
from brokerlab.workloads import DurationSpec, WorkloadSpec, parse_workload
from brokerlab.workloads.scaling import scale_workload

MS = 1_000_000
HOST = PluginHost()
SETTINGS = ["sim.entryCache=disabled", "sim.ackStatePersister=unlimited"]
NEW_METRICS = {
    "publish_offered",
    "publish_rate_achieved",
    "publish_latency_p50_ms",
    "publish_latency_p99_ms",
    "publish_rejected",
    "producer_blocked_ms",
}


def profile() -> Profile:
    return load_profile(None, SETTINGS, host=HOST)


def workload(topic: str = "", storage: str = "", duration_s: float = 2) -> WorkloadSpec:
    """One topic with one Exclusive subscription read as fast as it is written."""
    text = f"""
        name = "producers"
        duration_s = {duration_s}
        drain_s = 1
        [storage]
        {storage}
        [[topics]]
        name = "t"
        {topic}
        [[topics.subscriptions]]
        name = "s"
    """
    return parse_workload(textwrap.dedent(text), "producers.toml")


def run(topic: str = "", storage: str = "", seed: int = 0) -> Result:
    return simulate(profile(), workload(topic, storage), seed, host=HOST)


CONSTANT_1000 = 'rate = 1000\narrival = "constant"'
BLOCKING = "block_if_queue_full = true"
ONE_PENDING = f"{CONSTANT_1000}\nmax_pending_messages = 1\n{BLOCKING}"
TEN_MS = "write_latency_ms = 10"


# ---- closed-loop producers -------------------------------------------------------------------


def test_one_pending_send_and_10ms_writes_publish_100_messages_per_second() -> None:
    """Sends at 1, 11, .., 1,991 ms, each when the previous one is persisted: 200 in 2 s."""
    m = run(ONE_PENDING, TEN_MS).metrics
    assert m["publish_offered"] == 1999
    assert m["published"] == 200
    assert m["publish_rate_achieved"] == 100
    assert m["publish_latency_p50_ms"] == m["publish_latency_p99_ms"] == 10
    # Blocked from the second arrival (2 ms) until the producers stop (2,000 ms): arrivals come
    # ten times faster than sends, so the queue of waiting messages never empties.
    assert m["producer_blocked_ms"] == 1998
    assert m["publish_rejected"] == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_pending_send_bounds_poisson_arrivals_too(seed: int) -> None:
    """Whatever the arrival times, sends are at least 10 ms apart: at most 200 in [0, 2 s)."""
    m = run(f"rate = 1000\nmax_pending_messages = 1\n{BLOCKING}", TEN_MS, seed).metrics
    assert m["published"] <= 200 + 1
    assert m["publish_rate_achieved"] == pytest.approx(100, abs=1)


def test_ten_pending_sends_keep_up_with_1000_messages_per_second() -> None:
    """Ten sends of 10 ms in flight carry at most 10 / 10 ms = 1,000 msg/s, the offered rate:
    every arrival finds room (the oldest write completes just before the next arrival)."""
    m = run(f"{CONSTANT_1000}\nmax_pending_messages = 10\n{BLOCKING}", TEN_MS).metrics
    assert m["published"] == m["publish_offered"] == 1999
    assert m["published"] <= 10 * 2000 // 10 + 10  # the bound: 10 per 10 ms, plus those in flight
    assert m["publish_rate_achieved"] == pytest.approx(1000, rel=0.001)
    assert m["producer_blocked_ms"] == 0


def test_nine_pending_sends_fall_short_of_1000_messages_per_second() -> None:
    """One permit fewer: nine per 10 ms, 900 msg/s; the producer blocks."""
    m = run(f"{CONSTANT_1000}\nmax_pending_messages = 9\n{BLOCKING}", TEN_MS).metrics
    assert m["publish_rate_achieved"] == pytest.approx(900, abs=10)
    assert m["producer_blocked_ms"] > 1900


def test_a_batch_holds_one_pending_send_per_message() -> None:
    """Batches of 5 with 10 pending messages: two entries in flight, 2 x 5 messages per 10 ms."""
    m = run(
        f"rate = 5000\narrival = 'constant'\nbatch_size = 5\nmax_pending_messages = 10\n{BLOCKING}",
        "write_latency_ms = 10",
    ).metrics
    assert m["published"] % 5 == 0
    assert m["published"] <= 2 * 5 * 200 + 10
    assert m["publish_rate_achieved"] == pytest.approx(1000, abs=10)


def test_producers_take_turns_each_with_its_own_queue() -> None:
    """Two producers, one pending send each: odd milliseconds go to the first, even ones to the
    second; each sends every 10 ms (1, 11, .. and 2, 12, ..): 400 messages in 2 s."""
    m = run(
        f"{CONSTANT_1000}\nproducers = 2\nmax_pending_messages = 1\n{BLOCKING}",
        "write_latency_ms = 10",
    ).metrics
    assert m["published"] == 400
    assert m["publish_rate_achieved"] == 200


def test_a_full_queue_rejects_the_surplus_without_blocking() -> None:
    """block_if_queue_full = false: the arrival at 1 ms is sent, those at 2..10 ms rejected, the
    one at 11 ms sent (the write completed first), and so on: 200 sent, 1,799 rejected."""
    m = run(f"{CONSTANT_1000}\nmax_pending_messages = 1", "write_latency_ms = 10").metrics
    assert m["published"] == 200
    assert m["publish_rejected"] == 1799
    assert m["published"] + m["publish_rejected"] == m["publish_offered"] == 1999
    assert m["producer_blocked_ms"] == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_published_and_rejected_add_up_to_what_an_open_loop_producer_publishes(seed: int) -> None:
    """The arrivals do not depend on flow control: the open-loop run publishes all of them."""
    offered = run("rate = 1000\nbatch_size = 2", seed=seed).metrics["published"]
    m = run(
        "rate = 1000\nbatch_size = 2\nmax_pending_messages = 4",
        "write_latency_ms = { kind = 'exponential', mean = 5 }",
        seed,
    ).metrics
    assert 0 < m["publish_rejected"] < offered
    assert m["published"] + m["publish_rejected"] == m["publish_offered"] == offered


def test_blocked_producers_drop_what_still_waits_when_publishing_ends() -> None:
    """Sent late but never after the end: offered = published + what was still waiting."""
    m = run(ONE_PENDING, TEN_MS).metrics
    waiting_at_end = m["publish_offered"] - m["published"]
    # Arrival k ms is sent at 1 + 10 (k - 1) ms; sends stop at 2,000 ms: arrivals 1..200 went out.
    assert waiting_at_end == 1999 - 200


# ---- write latency ---------------------------------------------------------------------------


def test_end_to_end_latency_counts_from_the_send() -> None:
    """A 10 ms write adds 10 ms to every message's end-to-end latency, and nothing else."""
    before = run(CONSTANT_1000).metrics
    after = run(CONSTANT_1000, "write_latency_ms = 10").metrics
    assert after["latency_p50_ms"] == before["latency_p50_ms"] + 10
    assert after["latency_p99_ms"] == before["latency_p99_ms"] + 10
    assert after["published"] == before["published"] == after["publish_offered"]
    assert after["publish_latency_p50_ms"] == 10


def built(storage: str) -> tuple[Broker, EventLoop, FlowPublisher]:
    """The broker of a silent topic, and a publisher of its own that the test offers entries to."""
    spec = workload("rate = 0", storage, duration_s=10)
    loop = EventLoop()
    broker = wire_broker(profile(), HOST.resolve(profile()), loop, 0)
    broker.build(spec)
    loop.run_until(0)
    stats = broker.publish_stats
    assert stats is not None
    arrivals = GroupArrivals(spec.topics[0], stream(0, "test"), 10**10)
    writes = Durations(spec.storage.write_latency_ms, stream(0, "test-writes"))
    return broker, loop, FlowPublisher(broker, broker.topics, arrivals, writes, stats)


def test_a_dispatcher_sees_no_entry_before_its_write_completes() -> None:
    broker, loop, publisher = built("write_latency_ms = 5")
    topic = broker.topics[0]
    publisher.offer(publisher.writers[0], 100, -1, 0)
    loop.run_until(5 * MS - 1)
    assert topic.ledger.entry_count() == 0
    assert broker.counters.delivered == 0
    assert topic.dispatchers[0].cursor.unread_entries() == 0
    loop.run_until(5 * MS)
    assert topic.ledger.entry_count() == 1
    assert broker.counters.delivered == 1
    assert topic.ledger.current.field(0, PUBLISH_NS) == 0  # the send time, not the persist time


def test_entries_become_readable_in_send_order_whatever_the_draws() -> None:
    """Exponential writes (mean 5 ms) sent 0.5 ms apart: many a later write is quicker than the
    one before, yet entry k is persisted at max(send_k + draw_k, done_{k-1}), in send order."""
    broker, loop, publisher = built("write_latency_ms = { kind = 'exponential', mean = 5 }")
    topic = broker.topics[0]
    n, gap = 200, MS // 2
    # The publisher's draws, drawn again from the same stream.
    draws = Durations(DurationSpec(kind="exponential", mean=5), stream(0, "test-writes"))
    sends = [k * gap for k in range(n)]
    own = [s + draws.next_ns() for s in sends]
    done = list(accumulate(own, max))
    assert sum(own[k] < own[k - 1] for k in range(1, n)) > 20  # the draws come out of order
    # In time order: before and at every instant a write completes or an entry is sent, the
    # ledger holds exactly the entries whose write and earlier writes have all completed.
    sent = 0
    for at in sorted({*sends, *done}):
        loop.run_until(at - 1)
        assert topic.ledger.entry_count() == broker.counters.delivered == sum(d < at for d in done)
        loop.run_until(at)
        assert topic.ledger.entry_count() == broker.counters.delivered == sum(d <= at for d in done)
        if sent < n and sends[sent] == at:
            publisher.offer(publisher.writers[0], 100 + sent, -1, 0)
            sent += 1
    assert sent == n
    ledger = topic.ledger.current
    assert [ledger.field(k, PUBLISH_NS) for k in range(n)] == sends


# ---- neutral settings, validation, determinism ------------------------------------------------


def test_without_the_new_keys_no_new_metric_is_reported() -> None:
    m = run("rate = 500").metrics
    assert set(m) == set(metrics_of("pulsar", conditional=False))
    assert not NEW_METRICS & set(m)
    assert set(metrics_of("pulsar")) >= NEW_METRICS


def test_a_closed_loop_producer_with_instant_writes_publishes_as_an_open_loop_one() -> None:
    """No write time: a send is persisted at once, its permit back before the next arrival."""
    open_loop = run("rate = 800").metrics
    closed = run(f"rate = 800\nmax_pending_messages = 1\n{BLOCKING}").metrics
    assert {k: v for k, v in closed.items() if k not in NEW_METRICS} == open_loop
    assert closed["publish_offered"] == closed["published"]
    assert closed["producer_blocked_ms"] == 0


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        (BLOCKING, "block_if_queue_full applies only with max_pending_messages"),
        ("batch_size = 10\nmax_pending_messages = 5", "is below batch_size"),
        ("max_pending_messages = 0", "an integer >= 1"),
    ],
)
def test_flow_control_keys_are_checked(topic: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        workload(topic)


def test_publish_stats_only_for_workloads_that_need_them() -> None:
    assert not PublishStats.needed(workload("rate = 10"))
    assert not PublishStats.needed(workload("rate = 10", "write_latency_ms = 0"))
    assert PublishStats.needed(workload("rate = 10", "write_latency_ms = 0.5"))
    assert PublishStats.needed(workload("max_pending_messages = 100"))


MIXED = """
    name = "mixed"
    duration_s = 3
    drain_s = 1
    [storage]
    write_latency_ms = { kind = "lognormal", median = 2, sigma = 1 }
    [[topics]]
    name = "blocking"
    count = 3
    rate = 900
    producers = 2
    max_pending_messages = 4
    block_if_queue_full = true
    [[topics.subscriptions]]
    name = "s"
    type = "Shared"
    [[topics.subscriptions.consumers]]
    count = 2
    rate = 300
    [[topics]]
    name = "failing"
    rate = 2000
    batch_size = 4
    max_pending_messages = 8
    [[topics.subscriptions]]
    name = "s"
    [[topics]]
    name = "open"
    rate = 300
    [[topics.subscriptions]]
    name = "s"
"""


def test_same_seed_gives_byte_identical_json() -> None:
    spec = parse_workload(textwrap.dedent(MIXED), "mixed.toml")
    first = simulate(profile(), spec, 5, host=HOST).to_json()
    second = simulate(profile(), spec, 5, host=HOST).to_json()
    assert first == second
    assert simulate(profile(), spec, 6, host=HOST).to_json() != first
    metrics = simulate(profile(), spec, 5, host=HOST).metrics
    assert metrics["publish_rejected"] > 0 and metrics["producer_blocked_ms"] > 0


def test_another_hash_seed_in_another_process_gives_the_same_json() -> None:
    spec = parse_workload(textwrap.dedent(MIXED), "mixed.toml")
    here = simulate(profile(), spec, 5, host=HOST).to_json()
    script = textwrap.dedent(
        f"""
        import textwrap
        from brokerlab import load_profile, simulate
        from brokerlab.workloads import parse_workload
        spec = parse_workload(textwrap.dedent({MIXED!r}), "mixed.toml")
        print(simulate(load_profile(None, {SETTINGS!r}), spec, 5).to_json(), end="")
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    there = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert there == here


def test_a_shortened_workload_keeps_its_storage_and_flow_control() -> None:
    """``matrix --scale`` scales times only: the storage and the producers' limits stay."""
    spec = workload(
        f"rate = 100\nmax_pending_messages = 3\n{BLOCKING}",
        "write_latency_ms = { kind = 'lognormal', median = 2, sigma = 1 }",
    )
    scaled = scale_workload(spec, 0.5)
    assert scaled.duration_s == 1
    assert scaled.storage == spec.storage
    assert scaled.topics[0].max_pending_messages == 3
    assert scaled.topics[0].block_if_queue_full


def test_a_workload_travels_as_json_to_the_matrix_executors() -> None:
    """The executors rebuild each cell's workload from its JSON: every duration must survive."""
    spec = parse_workload(textwrap.dedent(MIXED), "mixed.toml")
    assert WorkloadSpec.model_validate_json(spec.model_dump_json()) == spec
    assert WorkloadSpec.model_validate(spec.model_dump()) == spec


OUTAGE = """
name = "producers-outage"
duration_s = 2
drain_s = 1
[storage]
write_latency_ms = {write_ms}
[[topics]]
name = "t"
rate = 100
arrival = "constant"
max_pending_messages = {pending}
[[topics.subscriptions]]
name = "s"
[[events]]
at_s = 1.005
kind = "unload"
outage_s = 0.5
"""


def test_during_an_outage_sends_stay_pending_and_a_full_queue_rejects_the_rest() -> None:
    """100 msg/s (arrivals at 10, 20, .., 1,990 ms), 5 pending sends, 1 ms writes; the topic is
    unavailable from 1,005 to 1,505 ms. The arrivals at 1,010 .. 1,050 ms fill the queue and wait
    for the topic; the other 45 of the outage's 50 are rejected. The five go out when the topic
    is back and persist at 1,506 ms, 456 .. 496 ms after they were sent."""
    document = OUTAGE.format(write_ms=1, pending=5)
    m = simulate(profile(), parse_workload(document, "outage.toml"), 0, host=HOST).metrics
    assert m["publish_offered"] == 199
    assert m["publish_rejected"] == 45
    assert m["published"] == 154
    # 149 messages took 1 ms; the five sent during the outage 456, 466, .., 496 ms: the 153rd
    # smallest of 154 (the 99th percentile) is 486 ms.
    assert m["publish_latency_p50_ms"] == 1
    assert m["publish_latency_p99_ms"] == 486
    assert m["held_entries"] == 0  # no write completed during the outage


def test_a_write_completed_during_an_outage_gives_its_permit_back_only_when_the_topic_is_back() -> (
    None
):
    """1 pending send, 100 ms writes: sends at 10, 110, .., 910 ms. The write sent at 910 ms
    completes at 1,010 ms, during the outage: the entry is stored, but the producer hears of it
    at 1,505 ms (595 ms after the send), so every arrival until then is rejected. Sends resume
    at 1,510 ms: 1,510 .. 1,910 ms, 15 in all."""
    document = OUTAGE.format(write_ms=100, pending=1)
    m = simulate(profile(), parse_workload(document, "outage.toml"), 0, host=HOST).metrics
    assert m["published"] == 15
    assert m["publish_rejected"] == 199 - 15
    assert m["held_entries"] == 1
    assert m["publish_latency_p50_ms"] == 100
    assert m["publish_latency_p99_ms"] == 595
