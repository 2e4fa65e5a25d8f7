"""Recovery of persisted acknowledgement ranges that span ledgers: each is split per ledger of the
managed ledger, so the recovered range set never holds a range across two ledgers."""

from __future__ import annotations

from _ack_state_helpers import managed_ledger
from _conformance import UpstreamClass, reexpresses

from brokerlab.broker.cursor import Cursor
from brokerlab.protocols import RecoveredAckState

UPSTREAM = UpstreamClass(
    name="ManagedCursorIndividualDeletedMessagesTest",
    area="Ack state",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/"
    "ManagedCursorIndividualDeletedMessagesTest.java",
    commit="95eed78ec6a9c4d408bc61ade317e98ac0cd20fd",
    methods=("testRecoverIndividualDeletedMessages",),
    note="The split is Cursor.restore's (spec ack-state.md §6.1 step 4, scenario 30): a "
    "persister hands back the ranges as stored, the broker cursor spreads them over its ledgers.",
)

LAYOUT = {1: 100, 3: 50, 5: 200, 10: 2, 20: 10}
"""Ledger id -> entries: five ledgers with gaps between their ids, as the upstream test lays out."""


def recovered_ranges(ranges: list[tuple[tuple[int, int], tuple[int, int]]]) -> list[object]:
    """The cursor's ranges after restoring ``ranges`` with nothing mark-deleted."""
    cursor = Cursor("c", managed_ledger(LAYOUT), (1, -1))
    cursor.restore(RecoveredAckState((1, -1), tuple(ranges)))
    assert cursor.md == (1, -1)  # entry 1:0 is never acknowledged: nothing moves
    assert cursor.range_count() == len(cursor.acked_ranges())
    return list(cursor.acked_ranges())


@reexpresses(UPSTREAM, "testRecoverIndividualDeletedMessages")
def test_a_range_inside_one_ledger_is_restored_as_it_is() -> None:
    """The stored range (1:5..1:10] stays one range in ledger 1."""
    assert recovered_ranges([((1, 5), (1, 10))]) == [((1, 5), (1, 10))]


@reexpresses(UPSTREAM, "testRecoverIndividualDeletedMessages")
def test_a_range_across_two_ledgers_is_split_at_the_ledger_end() -> None:
    """(1:10..3:0] becomes the rest of ledger 1, (1:10..1:99], and the first entry of ledger 3,
    (3:-1..3:0]: two ranges."""
    assert recovered_ranges([((1, 10), (3, 0))]) == [((1, 10), (1, 99)), ((3, -1), (3, 0))]


@reexpresses(UPSTREAM, "testRecoverIndividualDeletedMessages")
def test_a_range_across_several_ledgers_covers_the_ledgers_between_whole() -> None:
    """(1:20..10:1] plus (20:2..20:9]: ledger 1 from entry 21 on, ledgers 3 and 5 whole, both
    entries of ledger 10, then the range of ledger 20 untouched; five ranges in all."""
    assert recovered_ranges([((1, 20), (10, 1)), ((20, 2), (20, 9))]) == [
        ((1, 20), (1, 99)),
        ((3, -1), (3, 49)),
        ((5, -1), (5, 199)),
        ((10, -1), (10, 1)),
        ((20, 2), (20, 9)),
    ]


@reexpresses(UPSTREAM, "testRecoverIndividualDeletedMessages")
def test_each_recovery_replaces_the_previous_ranges() -> None:
    """Recovering twice into the same cursor (as the upstream test does, case after case) leaves
    only the second state: 2 ranges, none of the first recovery's."""
    cursor = Cursor("c", managed_ledger(LAYOUT), (1, -1))
    cursor.restore(RecoveredAckState((1, -1), (((1, 5), (1, 10)),)))
    cursor.restore(RecoveredAckState((1, -1), (((1, 10), (3, 0)),)))
    assert cursor.range_count() == 2
    assert not cursor.is_acked(1, 7) and cursor.is_acked(1, 11) and cursor.is_acked(3, 0)
