"""The ``unload`` workload event: a graceful unload and reload of every topic (ack-state.md §3.7).

A crash (``restart``) drops what a cursor had not persisted; an unload first closes each cursor,
which persists its final state (``persister.close``), and the reload recovers it. The close writes
are counted in ``ack_persists`` / ``ack_persisted_bytes`` like every other cursor write.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlab import load_profile, simulate
from brokerlab.broker.broker import Broker
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.broker.simulator import wire_broker
from brokerlab.broker.streams import stream
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.protocols import (
    AckState,
    AckStatePersister,
    PersistOutcome,
    PluginContext,
    RecoveredAckState,
)
from brokerlab.workloads import WorkloadSpec, parse_workload

HOST = PluginHost()
PERSISTERS = ["range-count", "pip299", "pip81", "unlimited"]
BASE = ["sim.entryCache=disabled", "delayedDeliveryEnabled=false"]

HOLES = """
    name = "holes"
    duration_s = 20
    drain_s = 5

    [[topics]]
    rate = 300

    [[topics.subscriptions]]
    name = "s"
    count = 2
    type = "Shared"

    [[topics.subscriptions.consumers]]
    count = 2
    ack_hole_probability = 0.02
"""


def workload(toml: str, *events: tuple[float, str]) -> WorkloadSpec:
    text = textwrap.dedent(toml) + "".join(
        f'\n[[events]]\nat_s = {at}\nkind = "{kind}"\n' for at, kind in events
    )
    return parse_workload(text, "w.toml")


def plugin_context(overrides: Sequence[str], loop: EventLoop) -> tuple[Any, PluginContext]:
    profile = load_profile(None, [*BASE, *overrides], host=HOST)
    choices = HOST.resolve(profile)
    context = PluginContext(
        settings=profile.settings,
        clock=loop,
        scheduler=loop,
        rng=stream(0, "plugins"),
        plugin_settings=profile.plugin_settings,
        new_cursor_container=choices.cursor_container.record.factory,
    )
    return choices, context


def build_broker(
    overrides: Sequence[str],
    spec: WorkloadSpec,
    wrap: Callable[[AckStatePersister], AckStatePersister] | None = None,
) -> Broker:
    """The broker model wired as a simulation wires it (persisters optionally wrapped)."""
    profile = load_profile(None, [*BASE, *overrides], host=HOST)
    broker = wire_broker(profile, HOST.resolve(profile), EventLoop(), 0, wrap)
    broker.build(spec)
    return broker


class Spy:
    """A persister that records which lifecycle calls the broker makes."""

    def __init__(self, inner: AckStatePersister) -> None:
        self.inner = inner
        self.calls: list[str] = []
        self.closed: list[PersistOutcome | None] = []

    def created(self, state: AckState) -> PersistOutcome | None:
        return self.inner.created(state)

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        return self.inner.acked(state, changed_ledgers)

    def flush(self, state: AckState) -> PersistOutcome | None:
        return self.inner.flush(state)

    def close(self, state: AckState) -> PersistOutcome | None:
        self.calls.append("close")
        outcome = self.inner.close(state)
        self.closed.append(outcome)
        return outcome

    def crash(self) -> None:
        self.calls.append("crash")
        self.inner.crash()

    def recover(self) -> RecoveredAckState:
        self.calls.append("recover")
        return self.inner.recover()

    def should_pause_dispatch(self, state: AckState) -> bool:
        return self.inner.should_pause_dispatch(state)

    def stats(self) -> Mapping[str, float]:
        return self.inner.stats()


# ---- the workload event ----------------------------------------------------------------------


def test_an_unload_event_parses() -> None:
    spec = workload(HOLES, (3, "unload"), (5, "restart"))
    assert [e.kind for e in spec.events] == ["unload", "restart"]


@pytest.mark.parametrize("kind", ["unload", "restart"])
def test_a_broker_wide_event_takes_no_group(kind: str) -> None:
    text = textwrap.dedent(HOLES) + textwrap.dedent(f"""
        group = "g"

        [[events]]
        at_s = 1
        kind = "{kind}"
        group = "g"
        """)
    with pytest.raises(WorkloadError, match=f"a {kind} event applies to the whole broker"):
        parse_workload(text, "w.toml")


def test_a_consumer_event_still_needs_its_group() -> None:
    with pytest.raises(WorkloadError, match="a disconnect event needs the consumer group"):
        workload(HOLES, (1, "disconnect"))


def test_an_unknown_kind_lists_unload() -> None:
    with pytest.raises(WorkloadError, match="unload"):
        workload(HOLES, (1, "reboot"))


# ---- the broker: who is closed, what is counted ----------------------------------------------


@pytest.mark.parametrize("persister", PERSISTERS)
def test_unload_closes_every_cursor_once_then_recovers_it(persister: str) -> None:
    spies: list[Spy] = []

    def wrap(inner: AckStatePersister) -> AckStatePersister:
        spies.append(Spy(inner))
        return spies[-1]

    b = build_broker([f"sim.ackStatePersister={persister}"], workload(HOLES), wrap)
    b.loop.run_until(5 * 10**9)
    before = b.counters.ack_persists, b.counters.ack_persisted_bytes
    b.unload()
    assert [s.calls for s in spies] == [["close", "recover"]] * 2
    written = [o for s in spies for o in s.closed if o is not None]
    assert written, "a close persisted nothing"
    assert b.counters.ack_persists - before[0] == len(written)
    assert b.counters.ack_persisted_bytes - before[1] == sum(o.bytes_written for o in written)
    assert b.counters.broker_restarts == 0
    b.restart()
    assert [s.calls[2:] for s in spies] == [["crash", "recover"]] * 2
    assert b.counters.broker_restarts == 1


@pytest.mark.parametrize("persister", PERSISTERS)
def test_unload_redelivers_nothing_a_crash_at_the_same_moment_loses(persister: str) -> None:
    """Mid-run, acks since the last rate-limited write are only in memory: a crash loses them
    (redelivered after it), a graceful unload writes them first. Holes stay far below every
    limit, so nothing is truncated either way."""
    profile = load_profile(None, [*BASE, f"sim.ackStatePersister={persister}"], host=HOST)
    crash = simulate(profile, workload(HOLES, (10, "restart")), 0, host=HOST).metrics
    unload = simulate(profile, workload(HOLES, (10, "unload")), 0, host=HOST).metrics
    assert crash["redelivered_after_restart"] > 0
    assert unload["redelivered_after_restart"] == 0
    assert crash["lost"] == unload["lost"] == 0
    assert crash["broker_restarts"] == 1 and unload["broker_restarts"] == 0


# ---- each persister: a close loses nothing that fits its limits ------------------------------

acks = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 29)), max_size=60)


@settings(max_examples=40, deadline=None)
@given(persister=st.sampled_from(PERSISTERS), acked=acks, crash_first=st.booleans())
def test_close_then_recover_gives_back_the_whole_state(
    persister: str, acked: list[tuple[int, int]], crash_first: bool
) -> None:
    """Random individual acks over three ledgers of 30 entries (a few dozen ranges: within every
    persister's limits). Whatever was written before (and whether an earlier crash and recovery
    happened), ``close`` followed by ``recover`` restores exactly the cursor's state."""
    choices, context = plugin_context([f"sim.ackStatePersister={persister}"], EventLoop())
    p = choices.ack_state_persister.record.factory(context, "t/s")
    ml = ManagedLedger("t", LedgerIds(), 30)
    for i in range(90):
        ml.append(100, i)
    c = Cursor("s", ml, ml.first_position)
    p.created(c)
    for n, (ledger_index, entry) in enumerate(acked):
        lid = ledger_index + 1
        if c.ack(lid, entry):
            p.acked(c, [lid])
        if crash_first and n == len(acked) // 2:
            p.crash()
            c.restore(p.recover())
    p.close(c)
    back = p.recover()
    restored = Cursor("r", ml, back.mark_delete)
    restored.restore(back)
    assert (restored.md, restored.acked_ranges()) == (c.md, c.acked_ranges())
