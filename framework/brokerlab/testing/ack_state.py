"""Contract for cursor ack-state persisters: what is recovered after a crash was really acked.

A script of acks, partial batch acks, time, flushes and crashes runs against a real broker
:class:`~brokerlab.broker.cursor.Cursor` (the truth) and the persister under test; after every
crash the recovered state must be a subset of the acknowledged one, and the cursor continues from
what was recovered, as a restarted broker does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlab.broker.cursor import Cursor
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.protocols import AckStatePersister, BatchAck, Position, RecoveredAckState
from brokerlab.records import AckStatePersisterRecord
from brokerlab.testing._common import (
    Simulate,
    build_context,
    check_simulation,
    check_stats,
    examples,
)

__all__ = [
    "ACK_FIRST_LEDGER",
    "ACK_LEDGERS",
    "ACK_PER_LEDGER",
    "TIGHT_ACK_LIMITS",
    "AckStatePersisterContract",
    "ack_cursor",
    "ack_scripts",
    "acked_positions",
    "check_recovery",
    "check_written",
    "ledger_layout",
    "play_ack_script",
]

ACK_LEDGERS, ACK_PER_LEDGER, ACK_FIRST_LEDGER = 3, 40, 3_000_000
"""The scripts' managed ledger: 3 ledgers of 40 entries. Large ledger ids make ranges big
(22 bytes each), so that byte budgets are exceeded quickly."""

TIGHT_ACK_LIMITS: Mapping[str, str] = {
    "managedLedgerDefaultMarkDeleteRateLimit": "1.0",
    "managedLedgerMaxUnackedRangesToPersist": "3",
    "managedLedgerMaxBatchDeletedIndexToPersist": "1",
    "managedLedgerMaxAckStateInBytesToPersist": "1024",
    "maxIndividualAckCacheBytesPerCursor": "40",
    "managedLedgerCursorMaxEntriesPerLedger": "4",
}
"""Limits small enough that every persister has to truncate, rate-limit or swap state out."""

Range = tuple[Position, Position]


def ack_scripts(max_size: int = 80) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    """Scripts of ``("ack", index)``, ``("batch", index, mask)``, ``("tick", seconds)``,
    ``("flush",)`` and ``("crash",)``; an index counts entries across the ledgers."""
    entries = ACK_LEDGERS * ACK_PER_LEDGER - 1
    return st.lists(
        st.one_of(
            st.tuples(st.just("ack"), st.integers(0, entries)),
            st.tuples(st.just("batch"), st.integers(0, entries), st.integers(1, 1023)),
            st.tuples(st.just("tick"), st.floats(0.05, 2.0)),
            st.just(("flush",)),
            st.just(("crash",)),
        ),
        max_size=max_size,
    )


def ack_cursor(entries: int, per_ledger: int | None = None, first_ledger: int = 1) -> Cursor:
    """A broker cursor on a managed ledger of ``entries`` entries, created before them."""
    ledger = ManagedLedger("t", LedgerIds(first_ledger), per_ledger or max(entries, 1))
    for i in range(entries):
        ledger.append(100, i)
    return Cursor("c", ledger, ledger.first_position)


def ledger_layout(cursor: Cursor) -> dict[int, int]:
    """Ledger id -> number of entries, of the cursor's managed ledger."""
    return {lid: len(cursor.ledger.ledgers[lid]) for lid in cursor.ledger.ledger_ids()}


def acked_positions(
    cursor: Cursor, mark_delete: Position, ranges: Iterable[Range]
) -> set[Position]:
    """Every position of ``cursor``'s ledgers that the state ``(mark_delete, ranges)`` acks."""
    layout = ledger_layout(cursor)
    out = {(lid, e) for lid in layout for e in range(layout[lid]) if (lid, e) <= mark_delete}
    for (lid, lo), (_, hi) in ranges:
        out.update((lid, e) for e in range(lo + 1, hi + 1))
    return out


def _check_claims(
    got: RecoveredAckState,
    claimed: set[Position],
    acked: set[Position],
    batches: Mapping[Position, BatchAck],
    what: str,
) -> None:
    """``got`` (claiming ``claimed``) claims no position outside ``acked`` and no batch index
    that ``batches`` (the partially acked entries next to ``acked``) still has unacked."""
    assert claimed <= acked, f"claims {what} positions {sorted(claimed - acked)}"
    for pos, ack in got.batch_acks.items():
        if pos in acked:
            continue
        assert pos in batches, f"claims {what} indexes of the batch {pos}"
        assert batches[pos].unacked & ~ack.unacked == 0, f"claims {what} indexes of {pos}"


def check_recovery(cursor: Cursor, got: RecoveredAckState, exact: bool) -> None:
    """``got`` claims nothing that ``cursor`` (the truth) has not acked, batch indexes included;
    with ``exact`` it is the whole truth."""
    truth = acked_positions(cursor, cursor.md, cursor.acked_ranges())
    claimed = acked_positions(cursor, got.mark_delete, got.acked_ranges)
    live = cursor.batch_acks()
    _check_claims(got, claimed, truth, live, "unacked")
    if exact:
        assert claimed == truth
        assert {p: b for p, b in got.batch_acks.items() if p not in truth} == dict(live)


def _written(cursor: Cursor) -> tuple[set[Position], dict[Position, BatchAck]]:
    """A copy of ``cursor``'s acknowledged positions and partial batches: the most a write made
    now can hold."""
    return acked_positions(cursor, cursor.md, cursor.acked_ranges()), dict(cursor.batch_acks())


def check_written(
    cursor: Cursor,
    got: RecoveredAckState,
    written: tuple[set[Position], Mapping[Position, BatchAck]],
) -> None:
    """``got`` claims nothing acknowledged after the persister's last write: ``written`` is the
    cursor's state when a call last returned a :class:`~brokerlab.protocols.PersistOutcome`
    (writes are synchronous and each is reported), and ``crash()`` loses everything later."""
    claimed = acked_positions(cursor, got.mark_delete, got.acked_ranges)
    _check_claims(got, claimed, written[0], written[1], "unwritten (acked after the last write)")


def play_ack_script(
    persister: AckStatePersister,
    script: Sequence[tuple[Any, ...]],
    advance: Callable[[float], None],
    *,
    exact: bool = False,
) -> Cursor:
    """Run ``script`` on a fresh cursor and ``persister``; check every recovery (and a final
    crash) with :func:`check_recovery` and :func:`check_written`. ``advance(seconds)`` moves the
    persister's clock."""
    cursor = ack_cursor(ACK_LEDGERS * ACK_PER_LEDGER, ACK_PER_LEDGER, ACK_FIRST_LEDGER)
    persister.created(cursor)
    written = _written(cursor)  # the created position is durable at once
    for op in script:
        outcome = None
        if op[0] == "ack":
            lid, e = divmod(op[1], ACK_PER_LEDGER)
            if cursor.ack(ACK_FIRST_LEDGER + lid, e):
                outcome = persister.acked(cursor, [ACK_FIRST_LEDGER + lid])
        elif op[0] == "batch":
            lid, e = divmod(op[1], ACK_PER_LEDGER)
            pos = (ACK_FIRST_LEDGER + lid, e)
            old = cursor.batch_acks().get(pos)
            mask = op[2] & (old.unacked if old else 1023)
            if mask and not cursor.is_acked(*pos):
                cursor.ack_batch_partially(pos, 10, mask)
                outcome = persister.acked(cursor, [pos[0]])
        elif op[0] == "tick":
            advance(op[1])
        elif op[0] == "flush":
            outcome = persister.flush(cursor)
        else:
            persister.crash()
            got = persister.recover()
            check_recovery(cursor, got, exact)
            check_written(cursor, got, written)
            cursor.restore(got)
            written = _written(cursor)  # what was read back is durable
        if outcome is not None:
            written = _written(cursor)
    persister.crash()
    got = persister.recover()
    check_recovery(cursor, got, exact)
    check_written(cursor, got, written)
    return cursor


class AckStatePersisterContract:
    """What every ack-state persister must do. Subclass it and name your record::

        class TestMyPersister(AckStatePersisterContract):
            @pytest.fixture
            def ack_state_persister(self) -> str:
                return "my-persister"

    Scripts run under ``brokerlab_profile``, and under it with :data:`TIGHT_ACK_LIMITS`, in both
    ack-state forms (``managedLedgerPersistIndividualAckAsLongArray``).
    """

    examples: ClassVar[int] = 40

    @pytest.fixture
    def ack_state_persister(self) -> str:
        """The name of the ack-state persister record under test (override this fixture)."""
        pytest.fail("override the 'ack_state_persister' fixture to name the record under test")

    def test_recovered_state_claims_nothing_unacked(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, ack_state_persister: str
    ) -> None:
        """After any script of acks, flushes, time and crashes, what a restarted broker reads
        back is a subset of what was acknowledged: no message is ever lost."""
        record: AckStatePersisterRecord = brokerlab_host.select(
            "ack_state_persister", ack_state_persister
        ).record

        @examples(self.examples)
        @given(script=ack_scripts(), tight=st.booleans(), long_array=st.booleans())
        def check(script: list[tuple[Any, ...]], tight: bool, long_array: bool) -> None:
            overrides = dict(TIGHT_ACK_LIMITS) if tight else {}
            overrides["managedLedgerPersistIndividualAckAsLongArray"] = str(long_array).lower()
            profile = brokerlab_profile.with_overrides(overrides)
            context, loop = build_context(brokerlab_host, profile)
            persister = record.factory(context, "t/s")

            def advance(seconds: float) -> None:
                loop.run_until(loop.now_ns() + round(seconds * 1e9))

            play_ack_script(persister, script, advance)
            check_stats(persister.stats(), "the persister")

        check()

    def test_runs_deterministically_in_a_simulation(
        self, simulate: Simulate, ack_state_persister: str
    ) -> None:
        """The broker runs with this persister: same seed, same result; no invariant broken."""
        check_simulation(simulate, {"sim.ackStatePersister": ack_state_persister})
