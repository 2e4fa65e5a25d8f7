"""Restarts and unloads that take time (``outage_s``): topics unavailable, producers holding what
they send, consumers reconnecting when the topics are back."""

from __future__ import annotations

import textwrap

import pytest

from brokerlab import load_profile
from brokerlab.broker.broker import Broker
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.workloads import WorkloadSpec, parse_workload

MS = 1_000_000
HOST = PluginHost()


def workload(events: str, extra_consumers: str = "") -> str:
    """100 messages/s, evenly spaced, to one Exclusive subscription that keeps up."""
    return textwrap.dedent(
        f"""
        name = "outage"
        duration_s = 3
        [[topics]]
        name = "t"
        rate = 100
        arrival = "constant"
        [[topics.subscriptions]]
        name = "s"
        [[topics.subscriptions.consumers]]
        group = "main"
        {extra_consumers}
        """
    ) + textwrap.dedent(events)


def broker(document: str) -> tuple[Broker, EventLoop]:
    spec = parse_workload(document, "outage.toml")
    assert isinstance(spec, WorkloadSpec)
    profile = load_profile(None, ["sim.entryCache=disabled"], host=HOST)
    loop = EventLoop()
    b = wire_broker(profile, HOST.resolve(profile), loop, 0)
    b.build(spec)
    return b, loop


UNLOAD = """
[[events]]
at_s = 1.0
kind = "unload"
outage_s = 0.5
"""


def test_an_outage_delays_what_is_sent_during_it_by_what_is_left_of_it() -> None:
    """An unload at 1.0 s with a 0.5 s outage: the 50 messages sent at 1.00, 1.01, ..., 1.49 s
    are held and delivered at 1.5 s, 500, 490, ..., 10 ms late; everything else at once."""
    b, loop = broker(workload(UNLOAD))
    loop.run_until(3000 * MS)
    metrics = b.finish()
    assert metrics["held_entries"] == 50
    assert metrics["unavailable_ms"] == 500
    late = {ms: n for ms, n in b.latency_ms.items() if ms}
    assert late == {10 * k: 1 for k in range(1, 51)}
    assert b.latency_ms[0] == metrics["delivered"] - 50
    assert metrics["redelivered"] == metrics["redelivered_after_restart"] == 0


def test_nothing_is_delivered_during_the_outage_and_consumers_return_after_it() -> None:
    b, loop = broker(workload(UNLOAD))
    loop.run_until(1000 * MS - 1)
    before = b.counters.delivered
    loop.run_until(1499 * MS)
    consumer = b.dispatchers[0].consumers[0]
    assert b.counters.delivered == before
    assert not consumer.connected
    loop.run_until(1500 * MS)
    assert consumer.connected
    # The 50 held messages, and the one sent at 1.5 s, after the topic was back.
    assert b.counters.delivered == before + 50 + 1


def test_a_crash_with_an_outage_counts_a_restart_and_redelivers_what_was_not_persisted() -> None:
    events = UNLOAD.replace('"unload"', '"restart"')
    b, loop = broker(workload(events))
    loop.run_until(3000 * MS)
    metrics = b.finish()
    assert metrics["broker_restarts"] == 1
    assert metrics["held_entries"] == 50
    # Acknowledgements since the cursor last persisted are lost in the crash (it flushes every
    # 60 s): some of the 99 messages delivered before 1.0 s go out again after the outage.
    assert 0 < metrics["redelivered_after_restart"] <= 99
    assert metrics["delivered_after_ack"] == metrics["lost"] == 0
    assert metrics["unacked_at_end"] == 0


def test_a_consumer_that_connects_during_the_outage_connects_when_it_ends() -> None:
    late = """
        [[topics.subscriptions.consumers]]
        name = "late"
        connect_at_s = 1.2
    """
    b, loop = broker(workload(UNLOAD, late))
    late_consumer = b.dispatchers[0].consumers[1]
    loop.run_until(1300 * MS)
    assert not late_consumer.connected
    loop.run_until(1500 * MS)
    assert late_consumer.connected


def test_a_consumer_that_leaves_during_the_outage_does_not_come_back() -> None:
    events = UNLOAD + '[[events]]\nat_s = 1.2\nkind = "disconnect"\ngroup = "main"\n'
    b, loop = broker(workload(events))
    loop.run_until(2000 * MS)
    assert not b.dispatchers[0].consumers[0].connected


def test_an_outage_past_the_end_of_the_run_counts_until_the_end() -> None:
    events = UNLOAD.replace("outage_s = 0.5", "outage_s = 5")
    b, loop = broker(workload(events).replace("duration_s = 3", "duration_s = 3\ndrain_s = 3"))
    loop.run_until(3000 * MS)
    metrics = b.finish()
    assert metrics["unavailable_ms"] == 2000
    assert metrics["held_entries"] == 0  # still held: never persisted
    assert metrics["published"] == 99  # sent at 0.01, 0.02, ..., 0.99 s
    assert b.topics[0].held


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            UNLOAD + '[[events]]\nat_s = 1.2\nkind = "restart"\n',
            "falls in the outage of the one at 1 s",
        ),
        (
            '[[events]]\nat_s = 1\nkind = "disconnect"\ngroup = "main"\noutage_s = 1\n',
            "only restart and unload do",
        ),
    ],
)
def test_malformed_outages_are_refused(events: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse_workload(workload(events), "outage.toml")
