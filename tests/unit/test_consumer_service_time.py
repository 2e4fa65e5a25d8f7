"""Consumers with service times: the client model of ``broker/client.py``, on hand-computed cases.

The application takes one message at a time from its receiver queue, flow permits go back to the
broker in half-queue batches, and acknowledgements reach the cursor at ack-group flushes.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import pytest

from brokerlab import load_profile, simulate
from brokerlab.broker.broker import Broker
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import PUBLISH_NS
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.metrics import invariants
from brokerlab.profiles import Profile
from brokerlab.simulation import Result
from brokerlab.workloads import WorkloadSpec, parse_workload

MS = 1_000_000
NS = 1_000_000_000
BASELINE = [
    "sim.entryCache=disabled",
    "delayedDeliveryEnabled=false",
    "sim.ackStatePersister=unlimited",
]
HOST = PluginHost()


def profile(*extra: str) -> Profile:
    return load_profile(None, [*BASELINE, *extra], host=HOST)


def workload(
    *,
    rate: float,
    duration_s: float,
    consumer: str,
    drain_s: float = 0,
    arrival: str = "constant",
    extra: str = "",
) -> str:
    """One topic, one Exclusive subscription, one consumer described by ``consumer``."""
    return textwrap.dedent(
        f"""
        name = "service"
        duration_s = {duration_s}
        drain_s = {drain_s}
        [[topics]]
        name = "t"
        rate = {rate}
        arrival = "{arrival}"
        [[topics.subscriptions]]
        name = "s"
        [[topics.subscriptions.consumers]]
        {consumer}
        """
    ) + textwrap.dedent(extra)


def run(toml: str, seed: int = 0) -> Result:
    return simulate(profile(), parse_workload(toml, "service.toml"), seed, host=HOST)


def built(toml: str) -> tuple[Broker, EventLoop]:
    """The broker model of ``toml``, built at time zero and not yet run."""
    p = profile()
    loop = EventLoop()
    broker = wire_broker(p, HOST.resolve(p), loop, 0)
    spec = parse_workload(toml, "service.toml")
    assert isinstance(spec, WorkloadSpec)
    broker.build(spec)
    return broker, loop


def publish_times_ns(broker: Broker) -> list[int]:
    """When each entry of the only topic was published, in order."""
    ml = broker.topics[0].ledger
    return [
        ml.ledger(ledger_id).field(entry, PUBLISH_NS)
        for ledger_id in ml.ledger_ids()
        for entry in range(len(ml.ledger(ledger_id)))
    ]


# ---- throughput -------------------------------------------------------------------------------


def test_a_1_ms_service_time_acknowledges_at_most_1000_per_second() -> None:
    """5,000 msg/s offered for 2 s to a consumer taking exactly 1 ms a message.

    The application is never idle once the first message arrives (the receiver queue refills
    long before it runs dry), so by 2 s it has processed floor((2 s - first publish) / 1 ms)
    messages, at most 2,000: no allowance is needed, since nothing finishes before it starts.
    The ack-group timer (100 ms from the connect at 0) fires at 2 s exactly, which is the end
    of the run, so every message processed by then is acknowledged.
    """
    broker, loop = built(workload(rate=5000, duration_s=2, consumer="service_time_ms = 1"))
    loop.run_until(2 * NS)
    first = publish_times_ns(broker)[0]
    acked = broker.counters.acked
    assert acked <= 2000
    assert acked == (2 * NS - first) // MS
    assert broker.counters.published > 4 * acked  # the offered load was far above it


def test_a_consumer_that_keeps_up_acknowledges_all_but_the_last_group() -> None:
    """200 msg/s, 1 ms each: every message is done 1 ms after its publish (no queueing, they
    arrive 5 ms apart). Acks are grouped for 300 ms, so the last flush before the end (2 s) is
    at 1.8 s: what was done after it is still in flight in the client."""
    toml = workload(rate=200, duration_s=2, consumer="service_time_ms = 1\nack_group_ms = 300")
    broker, loop = built(toml)
    end = 2 * NS
    loop.run_until(end)
    last_flush = end // (300 * MS) * (300 * MS)
    published = publish_times_ns(broker)
    in_flight = sum(1 for p in published if p + MS > last_flush)
    assert in_flight > 0
    assert broker.counters.acked == len(published) - in_flight
    assert broker.counters.delivered == len(published)


def test_a_rate_floors_each_service_time() -> None:
    """A 0.5 ms service time with ``rate = 1000``: each message takes max(0.5 ms, 1 ms), so the
    consumer acknowledges as the 1 ms one does."""
    capped = workload(rate=5000, duration_s=2, consumer="service_time_ms = 0.5\nrate = 1000")
    broker, loop = built(capped)
    loop.run_until(2 * NS)
    assert broker.counters.acked == (2 * NS - publish_times_ns(broker)[0]) // MS


# ---- flow permits -----------------------------------------------------------------------------


def test_permits_stay_within_the_receiver_queue_and_return_in_halves() -> None:
    """Receiver queue 10, 10 ms a message, 1,000 msg/s offered: the dispatcher never has more
    than 10 messages outstanding at the consumer, and permits come back 5 at a time (half the
    queue), one flow request every 5 messages taken, so every 50 ms."""
    toml = workload(
        rate=1000, duration_s=2, consumer="service_time_ms = 10\nreceiver_queue_size = 10"
    )
    broker, loop = built(toml)
    consumer = broker.dispatchers[0].consumers[0]
    returns: list[int] = []
    returned_before = 0
    for step in range(1, 2001):  # every millisecond
        loop.run_until(step * MS)
        outstanding = 10 - consumer.permits
        assert 0 <= outstanding <= 10
        # Each permit handed back was dispatched before: delivered = outstanding + returned.
        returned = broker.counters.delivered - outstanding
        if returned != returned_before:
            returns.append(returned - returned_before)
            returned_before = returned
    assert returns and set(returns) == {5}
    # One flow every 50 ms from the first take (at the first publish): 2 s hold 39 or 40.
    assert len(returns) >= 39


# ---- acknowledgement groups -------------------------------------------------------------------


def mark_deletes(toml: str, until_ms: int) -> list[tuple[int, int]]:
    """The subscription's mark-delete position after each millisecond up to ``until_ms``."""
    broker, loop = built(toml)
    cursor = broker.dispatchers[0].cursor
    seen = []
    for t in range(1, until_ms + 1):
        loop.run_until(t * MS)
        seen.append(cursor.md)
    return seen


def test_the_mark_delete_moves_only_at_ack_group_flushes() -> None:
    """200 msg/s, 1 ms each, acks grouped for 100 ms: the mark-delete position moves at 100 ms,
    200 ms, ... and stays put at every instant in between; with acks sent at once it moves
    between them too."""
    grouped = mark_deletes(
        workload(rate=200, duration_s=1, consumer="service_time_ms = 1\nack_group_ms = 100"),
        1000,
    )
    moves = [t for t in range(1, 1000) if grouped[t] != grouped[t - 1]]
    # ``grouped[t]`` is the position after t + 1 ms: a move at index t happened at t + 1 ms.
    assert moves and all((t + 1) % 100 == 0 for t in moves)
    assert len(moves) >= 9
    at_once = mark_deletes(
        workload(rate=200, duration_s=1, consumer="service_time_ms = 1\nack_group_ms = 0"), 1000
    )
    assert any((t + 1) % 100 for t in range(1, 1000) if at_once[t] != at_once[t - 1])


def test_a_full_ack_group_is_sent_before_the_timer() -> None:
    """Acks grouped for 10 s, 0.1 ms a message, 5,000 msg/s: the group reaches 1,000 entries
    (maxAcknowledgmentGroupSize) about every 0.2 s and is sent then, so before the first timer
    flush acknowledgements arrive 1,000 at a time."""
    toml = workload(rate=5000, duration_s=2, consumer="service_time_ms = 0.1\nack_group_ms = 10000")
    broker, loop = built(toml)
    seen = set()
    for t in range(1, 21):
        loop.run_until(t * 100 * MS)
        seen.add(broker.counters.acked)
    assert all(acked % 1000 == 0 for acked in seen)
    # 10,000 messages published by 2 s, each done 0.1 ms after it arrives: 10 full groups.
    assert broker.counters.acked == broker.counters.published // 1000 * 1000 > 0


# ---- lag from variance ------------------------------------------------------------------------


def test_an_exponential_service_time_lags_more_than_a_fixed_one_of_the_same_mean() -> None:
    """Poisson arrivals at 1,000 msg/s, 0.8 ms a message on average (utilisation 0.8).

    Fixed service is an M/D/1 queue, exponential an M/M/1 one: the same mean throughput, but
    the exponential one's sojourn time is exponential with rate mu - lambda = 250/s, so its p99
    is ln(100) / 250 s = 18.4 ms, where the fixed one stays under half of it. The 1 s drain is
    50 times that p99, so both acknowledge everything published (the same arrivals: the
    producer's stream is not the consumer's).
    """
    fixed, exponential = (
        run(
            workload(
                rate=1000,
                duration_s=10,
                drain_s=1,
                arrival="poisson",
                consumer=f"service_time_ms = {service}",
            )
        ).metrics
        for service in ("0.8", '{ kind = "exponential", mean = 0.8 }')
    )
    assert fixed["published"] == exponential["published"]
    assert fixed["acked"] == exponential["acked"] == fixed["published"]
    mm1_p99 = math.log(100) / 250 * 1000
    # Latency buckets are whole milliseconds, rounded down; 10,000 samples pin a p99 to about
    # +-25% (the samples of a busy period are correlated).
    assert 0.75 * mm1_p99 - 1 <= exponential["latency_p99_ms"] <= 1.25 * mm1_p99
    assert fixed["latency_p99_ms"] < mm1_p99 / 2 < exponential["latency_p99_ms"]


# ---- acknowledgement policies and connections -------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "acks"),
    [
        ("Shared", "nack_probability = 0.05\nnack_redelivery_delay_ms = 300"),
        ("Shared", "ack_hole_probability = 0.05"),
        ("Exclusive", 'ack = "cumulative"'),
    ],
    ids=["nack", "holes", "cumulative"],
)
def test_ack_policies_with_service_times(kind: str, acks: str) -> None:
    """Every published message is acknowledged or left unacked, with nothing lost."""
    toml = textwrap.dedent(
        f"""
        name = "policies"
        duration_s = 3
        drain_s = 3
        [[topics]]
        rate = 500
        [[topics.subscriptions]]
        name = "s"
        type = "{kind}"
        [[topics.subscriptions.consumers]]
        count = 2
        service_time_ms = {{ kind = "exponential", mean = 1 }}
        """
    ) + textwrap.dedent(acks)
    m = run(toml).metrics
    assert all(m[name] == 0 for name in invariants())
    assert m["acked"] + m["unacked_at_end"] == m["published"] > 0
    if "nack" in acks:
        assert m["redelivered"] > 0 and m["unacked_at_end"] == 0
    if "hole" in acks:
        assert m["unacked_at_end"] > 0


def test_a_consumer_that_leaves_flushes_its_acks_and_hands_back_the_rest() -> None:
    """500 msg/s to a consumer taking 3 ms each, so a backlog builds in its receiver queue. It
    closes at 1.05 s, between flushes: the acks of what it finished since 1.0 s are sent as it
    closes, so only what it had not finished goes out again, when it returns at 1.5 s."""
    toml = workload(
        rate=500,
        duration_s=1.2,
        drain_s=2.8,
        consumer='service_time_ms = 3\ngroup = "g"\ndisconnect_at_s = 1.05',
        extra="""
        [[events]]
        at_s = 1.5
        kind = "reconnect"
        group = "g"
        """,
    )
    broker, loop = built(toml)
    loop.run_until(1_050 * MS - 1)
    consumer = broker.dispatchers[0].consumers[0]
    held = sum(consumer.pending.values())
    loop.run_until(1_050 * MS)
    acked_at_close = broker.counters.acked
    assert not consumer.connected
    loop.run_until(4 * NS)
    c = broker.counters
    assert c.acked == c.published
    # What it held and had not acknowledged by the close was redelivered, and only that.
    assert 0 < c.redelivered < held
    assert c.acked - acked_at_close > 0


def test_a_restart_with_service_times_loses_nothing() -> None:
    toml = workload(
        rate=500,
        duration_s=3,
        drain_s=3,
        consumer='service_time_ms = { kind = "lognormal", median = 1, sigma = 0.5 }',
        extra="""
        [[events]]
        at_s = 1.55
        kind = "restart"
        """,
    )
    m = run(toml).metrics
    assert m["broker_restarts"] == 1
    assert all(m[name] == 0 for name in invariants())
    assert m["unacked_at_end"] == 0
    assert m["redelivered"] > 0  # what the application held and had not acknowledged


# ---- determinism ------------------------------------------------------------------------------

DETERMINISM = workload(
    rate=800,
    duration_s=2,
    drain_s=1,
    arrival="poisson",
    consumer=(
        'service_time_ms = { kind = "empirical", values = [0.5, 1, 4], weights = [6, 3, 1] }\n'
        "ack_group_ms = 50\nnack_probability = 0.01\nnack_redelivery_delay_ms = 200"
    ),
)


def test_the_same_seed_gives_byte_identical_json() -> None:
    first, second = run(DETERMINISM, 5), run(DETERMINISM, 5)
    assert first.to_json() == second.to_json()
    assert first.metrics["acked"] > 0
    assert run(DETERMINISM, 6).to_json() != first.to_json()


def test_another_hash_seed_gives_the_same_json() -> None:
    script = textwrap.dedent(
        f"""
        from brokerlab import load_profile, simulate
        from brokerlab.host import PluginHost
        from brokerlab.workloads import WorkloadSpec, parse_workload
        host = PluginHost()
        profile = load_profile(None, {BASELINE!r}, host=host)
        spec = parse_workload({DETERMINISM!r}, "service.toml")
        print(simulate(profile, spec, 5, host=host).to_json())
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == run(DETERMINISM, 5).to_json().strip()


# ---- the workload keys ------------------------------------------------------------------------


def test_without_the_new_keys_a_consumer_keeps_the_chunked_model() -> None:
    broker, _ = built(workload(rate=100, duration_s=1, consumer="rate = 50"))
    consumer = broker.dispatchers[0].consumers[0]
    assert consumer.client is None and not consumer.policy.models_client
    broker, _ = built(workload(rate=100, duration_s=1, consumer="ack_group_ms = 100"))
    assert broker.dispatchers[0].consumers[0].client is not None
