"""``Cursor.ack_each`` (the broker's batched acknowledgement) against ``Cursor.ack`` in a loop."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlab.broker.cursor import Cursor
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.protocols import Position


def _ledger(entries: int, per_ledger: int) -> tuple[ManagedLedger, list[Position]]:
    ml = ManagedLedger("t", LedgerIds(), per_ledger)
    positions = [ml.append(100, i) for i in range(entries)]
    return ml, positions


def _state(cursor: Cursor) -> tuple[object, ...]:
    return (
        cursor.md,
        cursor.read_position,
        {k: sorted(v) for k, v in cursor.acked.items()},
        cursor.range_count(),
        dict(cursor.batch_acks()),
    )


@settings(max_examples=300, deadline=None)
@given(
    entries=st.integers(1, 40),
    per_ledger=st.integers(1, 8),
    chunks=st.lists(st.lists(st.integers(0, 39), max_size=12), max_size=10),
    partial=st.lists(st.integers(0, 39), max_size=3),
    read_ahead=st.integers(0, 40),
    in_order_prefix=st.integers(0, 40),
)
def test_ack_each_is_ack_in_a_loop(
    entries: int,
    per_ledger: int,
    chunks: list[list[int]],
    partial: list[int],
    read_ahead: int,
    in_order_prefix: int,
) -> None:
    ml, positions = _ledger(entries, per_ledger)
    one, each = Cursor("one", ml, ml.first_position), Cursor("each", ml, ml.first_position)
    for cursor in (one, each):
        # A read position somewhere ahead, and some partially acknowledged batches.
        cursor.read_position = positions[min(read_ahead, entries - 1)]
        for index in partial:
            if index < entries:
                cursor.ack_batch_partially(positions[index], 10, 1)
    # Mostly in order (the fast path), then arbitrary chunks (gaps, repeats, ledger boundaries).
    plan = [list(range(min(in_order_prefix, entries))), *chunks]
    for chunk in plan:
        deliveries = [(positions[i], 1 + i % 3, 0, -1) for i in chunk if i < entries]
        expected_acked = expected_repeated = 0
        expected_changed: set[int] = set()
        for pos, messages, _, _ in deliveries:
            if one.ack(*pos):
                expected_acked += messages
                expected_changed.add(pos[0])
            else:
                expected_repeated += messages
        changed: set[int] = set()
        assert each.ack_each(deliveries, changed) == (expected_acked, expected_repeated)
        assert changed == expected_changed
        assert _state(each) == _state(one)
