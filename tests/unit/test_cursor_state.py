"""The cursor's ack state against a plain set model, and the managed ledger's positions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlab.broker.cursor import Cursor, runs
from brokerlab.broker.ledger import (
    BATCH,
    DELIVER_AT_MS,
    KEY,
    PUBLISH_NS,
    SIZE,
    LedgerIds,
    ManagedLedger,
)
from brokerlab.protocols import RecoveredAckState


def ledger_with(entries: int, per_ledger: int) -> ManagedLedger:
    ml = ManagedLedger("t", LedgerIds(), per_ledger)
    for i in range(entries):
        ml.append(100, i)
    return ml


def reference_state(positions: list[tuple[int, int]], acked: set[tuple[int, int]]):
    """Mark-delete = last position of the longest acked prefix; the rest as per-ledger runs."""
    md_index = -1
    while md_index + 1 < len(positions) and positions[md_index + 1] in acked:
        md_index += 1
    rest = [p for p in positions[md_index + 1 :] if p in acked]
    by_ledger: dict[int, list[int]] = {}
    for ledger_id, entry_id in rest:
        by_ledger.setdefault(ledger_id, []).append(entry_id)
    ranges = sum(len(runs(v)) for v in by_ledger.values())
    return md_index, rest, ranges


entry_fields = st.tuples(
    st.integers(0, 2**31),
    st.integers(-(2**62), 2**62),
    st.integers(-1, 10**6),
    st.integers(1, 1000),
    st.integers(0, 2**45),
)


@given(st.lists(entry_fields, max_size=40), st.integers(1, 7), st.data())
@settings(max_examples=150, deadline=None)
def test_ledger_fields_match_what_was_appended(entries, per_ledger, data) -> None:
    """Each entry's fields, read one by one or as a column slice, are what its append wrote,
    across ledger rollovers."""
    ml = ManagedLedger("t", LedgerIds(), per_ledger)
    written = {}
    for size, publish_ns, key, batch, deliver_at_ms in entries:
        pos = ml.append(size, publish_ns, key, batch, deliver_at_ms)
        written[pos] = {
            SIZE: size,
            PUBLISH_NS: publish_ns,
            KEY: key,
            BATCH: batch,
            DELIVER_AT_MS: deliver_at_ms,
        }
    assert ml.entry_count() == len(entries)
    for (ledger_id, entry_id), fields in written.items():
        ledger = ml.ledgers[ledger_id]
        for field, value in fields.items():
            assert ledger.field(entry_id, field) == value
    for ledger_id in ml.ledger_ids():
        ledger = ml.ledgers[ledger_id]
        n = len(ledger)
        assert n <= per_ledger
        if n == 0:
            continue
        first = data.draw(st.integers(0, n - 1))
        stop = data.draw(st.integers(first + 1, n))
        field = data.draw(st.sampled_from([SIZE, PUBLISH_NS, KEY, BATCH, DELIVER_AT_MS]))
        expected = [written[(ledger_id, e)][field] for e in range(first, stop)]
        assert ledger.column(field, first, stop) == expected


def test_rollover_and_next_position() -> None:
    ml = ledger_with(7, per_ledger=3)
    ids = list(ml.ledger_ids())
    assert len(ids) == 3
    assert ml.next_position((ids[0], 2)) == (ids[1], 0)
    assert ml.last_position == (ids[2], 0)
    assert ml.entries_after(ml.first_position) == 7
    assert ml.entries_after((ids[1], 1)) == 2


@settings(max_examples=200, deadline=None)
@given(
    entries=st.integers(1, 40),
    per_ledger=st.integers(1, 8),
    order=st.lists(st.integers(0, 39), max_size=80),
)
def test_individual_acks_match_the_set_model(
    entries: int, per_ledger: int, order: list[int]
) -> None:
    ml = ledger_with(entries, per_ledger)
    positions = []
    pos = ml.first_position
    for _ in range(entries):
        pos = ml.normalize(ml.next_position(pos))
        positions.append(pos)
    cursor = Cursor("c", ml, ml.first_position)
    acked: set[tuple[int, int]] = set()
    for index in order:
        if index >= entries:
            continue
        p = positions[index]
        assert cursor.ack(*p) == (p not in acked)
        acked.add(p)
        md_index, rest, ranges = reference_state(positions, acked)
        expected_md = positions[md_index] if md_index >= 0 else ml.first_position
        assert cursor.md == expected_md
        assert cursor.range_count() == ranges == len(cursor.acked_ranges())
        assert sorted((lid, e) for lid, es in cursor.acked.items() for e in es) == rest
        for q in positions:
            assert cursor.is_acked(*q) == (q in acked)


@settings(max_examples=100, deadline=None)
@given(
    acks=st.lists(st.integers(0, 29), max_size=30),
    upto=st.integers(0, 29),
)
def test_cumulative_ack_after_individual_acks(acks: list[int], upto: int) -> None:
    ml = ledger_with(30, 7)
    positions = []
    pos = ml.first_position
    for _ in range(30):
        pos = ml.normalize(ml.next_position(pos))
        positions.append(pos)
    cursor = Cursor("c", ml, ml.first_position)
    acked = set()
    for index in acks:
        cursor.ack(*positions[index])
        acked.add(positions[index])
    before = {p for p in positions if cursor.is_acked(*p)}
    newly = cursor.ack_cumulative(positions[upto])
    acked.update(positions[: upto + 1])
    assert newly == len({p for p in positions[: upto + 1]} - before)
    md_index, _, ranges = reference_state(positions, acked)
    assert cursor.md == positions[md_index]
    assert cursor.range_count() == ranges


def test_restore_round_trips_a_snapshot() -> None:
    ml = ledger_with(20, 6)
    cursor = Cursor("c", ml, ml.first_position)
    positions = []
    pos = ml.first_position
    for _ in range(20):
        pos = ml.normalize(ml.next_position(pos))
        positions.append(pos)
    for index in (0, 1, 4, 5, 9, 13, 14, 19):
        cursor.ack(*positions[index])
    snapshot = cursor.snapshot()
    other = Cursor("d", ml, ml.first_position)
    other.restore(snapshot)
    assert other.md == cursor.md
    assert other.acked_ranges() == cursor.acked_ranges()
    assert other.range_count() == cursor.range_count()
    assert other.read_position == ml.next_position(cursor.md)


def test_in_order_ack_still_jumps_over_acks_in_a_later_ledger() -> None:
    """Regression: one entry per ledger, the second acked first; acking the first must carry the
    mark-delete over both."""
    ml = ledger_with(2, per_ledger=1)
    first, second = list(ml.ledger_ids())
    cursor = Cursor("c", ml, ml.first_position)
    cursor.ack(second, 0)
    cursor.ack(first, 0)
    assert cursor.md == (second, 0) and cursor.range_count() == 0


def test_unread_entries_count_from_the_read_position() -> None:
    """Pulsar's ``getNumberOfEntries()``: entries from the read position on, less those acked
    individually; dispatched but unacknowledged entries before it do not count (spec §3.4)."""
    ml = ledger_with(10, per_ledger=4)
    ids = list(ml.ledger_ids())
    cursor = Cursor("c", ml, ml.first_position)
    cursor.read_position = (ids[1], 2)  # entries 0-5 were read
    cursor.ack(ids[0], 1)  # a hole at entry 0 keeps the mark-delete back
    cursor.ack(ids[2], 0)  # acked ahead of the read position
    assert ml.entries_after(cursor.md) - cursor.acked_count() == 8  # the backlog
    assert cursor.unread_entries() == 3  # (1,2), (1,3), (2,1)
    cursor.read_position = (ids[2], 2)
    assert cursor.unread_entries() == 0


def test_restore_splits_a_range_that_spans_ledgers() -> None:
    """A recovered range ``(L1:e1, L3:e3]`` covers the rest of L1, all of L2 and L3 up to e3: the
    split Pulsar's ``ManagedCursorImpl.recoverIndividualDeletedMessages`` makes with the ledger
    list (apache/pulsar ``ManagedCursorIndividualDeletedMessagesTest``
    ``testRecoverIndividualDeletedMessages``; spec §6.1 step 4). Three ledgers of 6 entries."""
    ml = ledger_with(18, 6)
    first, second, third = list(ml.ledger_ids())
    cursor = Cursor("c", ml, ml.first_position)
    cursor.restore(RecoveredAckState((first, 1), acked_ranges=(((first, 3), (third, 2)),)))
    assert cursor.md == (first, 1)
    assert cursor.acked == {first: {4, 5}, second: set(range(6)), third: {0, 1, 2}}
    # One run per ledger it touches, as Pulsar's per-ledger bitmaps count it.
    assert cursor.range_count() == 3
    assert cursor.acked_count() == 2 + 6 + 3
    # Acknowledging entries 2 and 3 of the first ledger carries the mark-delete over the split.
    cursor.ack(first, 2)
    cursor.ack(first, 3)
    assert cursor.md == (third, 2) and cursor.range_count() == 0
