"""Ack-state writes that take time: a crash loses the cursor-ledger writes still in flight.

Spec ack-state.md §6.3, source 1 ("the unpersisted window ... and writes still in flight"): a
cursor's mark-delete write is a BookKeeper add, durable only when it completes, and completions
come in the order the writes were made. The times below are hand-computed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator

import pytest
from ack_state_support import FakeClock, context, cursor

from brokerlab import load_profile
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.protocols import AckStatePersister, PluginContext
from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab_plugins.ack_state.pip81 import SplitAckPersister, new_pip81_persister
from brokerlab_plugins.ack_state.pip299 import new_pip299_persister
from brokerlab_plugins.ack_state.range_count import new_range_count_persister
from brokerlab_plugins.ack_state.unlimited import new_unlimited_persister

MS = 1_000_000
HOST = PluginHost()


def draws(*ms: float) -> Callable[[str], Callable[[], int]]:
    """``storage_write_ns`` whose writes take ``ms``, in turn, then the last value for ever."""

    def for_writer(name: str) -> Callable[[], int]:
        values: Iterator[float] = iter(ms)
        last = [ms[-1]]

        def next_ns() -> int:
            last[0] = next(values, last[0])
            return round(last[0] * MS)

        return next_ns

    return for_writer


def with_latency(clock: FakeClock, *ms: float) -> PluginContext:
    return context(clock).with_(storage_write_ns=draws(*ms))


WHOLE_STATE = [new_unlimited_persister, new_range_count_persister, new_pip299_persister]


@pytest.mark.parametrize("factory", WHOLE_STATE, ids=lambda f: f.__name__)
def test_a_crash_before_the_write_completes_recovers_the_state_before_it(
    factory: Callable[[PluginContext, str], AckStatePersister],
) -> None:
    """A write at 0 ms taking 10 ms: lost by a crash at 9 ms, durable for a crash at 10 ms."""
    for crash_ms, md in ((9, (1, -1)), (10, (1, 4))):
        clock = FakeClock()
        c = cursor(10)
        p = factory(with_latency(clock, 10), "t/s")
        p.created(c)
        for e in range(5):
            c.ack(1, e)
        assert p.acked(c, [1]) is not None  # no rate limit in these settings: a write now
        clock.ns = crash_ms * MS
        p.crash()
        assert p.recover().mark_delete == md
        assert p.stats()["ack_writes_lost_in_flight"] == (1 if crash_ms == 9 else 0)


def test_writes_complete_in_order_so_a_quick_write_waits_for_a_slow_one() -> None:
    """Writes at 0 ms (30 ms) and 1 ms (2 ms): the second completes at 30 ms, not at 3 ms, so a
    crash at 5 ms loses both and one at 30 ms keeps both."""
    for crash_ms, md, lost in ((5, (1, -1), 2), (29, (1, -1), 2), (30, (1, 1), 0)):
        clock = FakeClock()
        c = cursor(10)
        p = new_unlimited_persister(with_latency(clock, 30, 2), "t/s")
        p.created(c)
        c.ack(1, 0)
        p.acked(c, [1])
        clock.ns = 1 * MS
        c.ack(1, 1)
        p.acked(c, [1])
        clock.ns = crash_ms * MS
        p.crash()
        assert p.recover().mark_delete == md
        assert p.stats()["ack_writes_lost_in_flight"] == lost


def test_only_the_writes_still_in_flight_are_lost() -> None:
    """Three writes at 0, 10 and 20 ms, each 15 ms: at a crash at 27 ms the first two are
    durable (15, 25 ms) and the third (35 ms) is not."""
    clock = FakeClock()
    c = cursor(10)
    p = new_range_count_persister(with_latency(clock, 15), "t/s")
    p.created(c)
    for e in range(3):
        clock.ns = 10 * e * MS
        c.ack(1, e)
        p.acked(c, [1])
    clock.ns = 27 * MS
    p.crash()
    assert p.recover().mark_delete == (1, 1)
    assert p.stats()["ack_writes_lost_in_flight"] == 1


def test_a_graceful_close_waits_for_the_writes_in_flight() -> None:
    clock = FakeClock()
    c = cursor(10)
    p = new_range_count_persister(with_latency(clock, 50), "t/s")
    p.created(c)
    c.ack(1, 0)
    p.acked(c, [1])
    clock.ns = 1 * MS
    c.ack(1, 1)
    p.close(c)
    p.crash()  # nothing is in flight after the close
    assert p.recover().mark_delete == (1, 1)
    assert p.stats()["ack_writes_lost_in_flight"] == 0


def test_the_cursor_creation_is_never_in_flight() -> None:
    """A cursor exists once its initial position is stored: a crash right after its creation
    recovers that position, not a rollback to nothing."""
    clock = FakeClock()
    c = cursor(10)
    c.ack(1, 0)
    p = new_range_count_persister(with_latency(clock, 50), "t/s")
    p.created(c)
    p.crash()
    assert p.recover().mark_delete == (1, 0)


def test_without_a_latency_nothing_is_in_flight_and_the_metric_is_not_reported() -> None:
    clock = FakeClock()
    c = cursor(10)
    p = new_range_count_persister(context(clock), "t/s")
    p.created(c)
    c.ack(1, 0)
    p.acked(c, [1])
    p.crash()
    assert p.recover().mark_delete == (1, 0)
    assert "ack_writes_lost_in_flight" not in p.stats()


def test_pip81_a_flush_whose_marker_is_in_flight_is_recovered_from_the_previous_marker() -> None:
    """PIP-81 writes the dirty ledger's entry (1 ms) and then the marker (20 ms): a crash at 5 ms
    finds the entry durable and the marker not, the C4 case ("incomplete newest marker")."""
    clock = FakeClock()
    c = cursor(20)
    p = new_pip81_persister(with_latency(clock, 1, 20), "t/s")
    assert isinstance(p, SplitAckPersister)
    p.created(c)
    c.ack(1, 3)
    p.acked(c, [1])
    clock.ns = 5 * MS
    p.crash()
    got = p.recover()
    assert p.recovery_path == "previous marker"
    assert got.mark_delete == (1, -1) and list(got.acked_ranges) == []
    assert p.stats()["ack_writes_lost_in_flight"] == 1


def test_pip81_a_new_cursor_ledger_whose_first_marker_is_in_flight_is_never_read() -> None:
    """With two entries per cursor ledger the first flush (entry, marker) fills the ledger and a
    new one is made (copy, marker). If only the first flush is durable at the crash, recovery
    reads the old ledger, whose newest marker holds the flush."""
    clock = FakeClock()
    c = cursor(20)
    ctx = context(clock, managed_ledger_cursor_max_entries_per_ledger=2)
    p = new_pip81_persister(ctx.with_(storage_write_ns=draws(1, 1, 30)), "t/s")
    p.created(c)
    c.ack(1, 3)
    p.acked(c, [1])
    assert p.rollovers == 1
    clock.ns = 5 * MS
    p.crash()
    got = p.recover()
    assert list(got.acked_ranges) == [((1, 2), (1, 3))]
    assert p.stats()["ack_writes_lost_in_flight"] == 2  # the new ledger's copy and marker


# ---- in the broker -----------------------------------------------------------------------------


def run(write_latency_ms: float) -> dict[str, float]:
    """100 messages/s, evenly spaced, to a consumer that acknowledges each at once; every ack is
    written (no rate limit); the broker crashes at 1.005 s and restarts at once."""
    document = textwrap.dedent(
        f"""
        name = "ack-writes"
        duration_s = 2
        [storage]
        write_latency_ms = {write_latency_ms}
        [[topics]]
        name = "t"
        rate = 100
        arrival = "constant"
        [[topics.subscriptions]]
        name = "s"
        [[topics.subscriptions.consumers]]
        group = "main"
        [[events]]
        at_s = 1.005
        kind = "restart"
        """
    )
    spec = parse_workload(document, "ack-writes.toml")
    assert isinstance(spec, WorkloadSpec)
    profile = load_profile(
        None,
        [
            "sim.entryCache=disabled",
            "sim.ackStatePersister=unlimited",
            "managedLedgerDefaultMarkDeleteRateLimit=0",
        ],
        host=HOST,
    )
    loop = EventLoop()
    broker = wire_broker(profile, HOST.resolve(profile), loop, 0, storage=spec.storage)
    broker.build(spec)
    loop.run_until(2 * 1_000_000_000)
    metrics = broker.finish()
    for persister in broker.persisters():
        for name, value in persister.stats().items():
            metrics[name] = metrics.get(name, 0) + value
    return metrics


def test_a_crash_redelivers_the_acknowledgements_whose_writes_were_in_flight() -> None:
    """Acks at 10 ms intervals, each write taking 50 ms: at the crash (1.005 s) the writes of the
    acks at 0.96, 0.97, 0.98, 0.99 and 1.00 s are in flight (the one at 0.95 s completed at 1.00
    s), so exactly those 5 messages go out again. With writes durable at once, none does."""
    instant = run(0)
    timed = run(50)
    assert instant["redelivered_after_restart"] == 0
    assert timed["ack_writes_lost_in_flight"] == 5
    assert timed["redelivered_after_restart"] == 5
    assert "ack_writes_lost_in_flight" not in instant
