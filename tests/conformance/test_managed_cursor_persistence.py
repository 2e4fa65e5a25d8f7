"""The managed cursor's acknowledgement state: how acks move the mark-delete and fill the range
set, and how that state is persisted (cursor ledger or metadata store) and recovered."""

from __future__ import annotations

import random

import pytest
from _ack_state_helpers import (
    Clock,
    GivenIds,
    backlog,
    cursor_on,
    persister,
    positions_of,
    restart,
)
from _conformance import UpstreamClass, reexpresses

from brokerlab.broker.cursor import Cursor
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.protocols import BatchAck, PersistOutcome, RecoveredAckState
from brokerlab_plugins.ack_state.whole_state import WholeStatePersister

_READ = (
    "read, seek, reset, rewind, skip, clear-backlog and scan API of ManagedCursor (entry reads, "
    "read positions moved by reads, search by predicate, replay, n-th entry, waiting reads); "
    "brokerlab's dispatcher reads through its own model, and the ack-state model exposes none "
    "of these calls (the simulated broker has no admin operations on cursors)"
)
_LIFECYCLE = (
    "cursor bookkeeping outside the acknowledgement state (closing, deleting or removing a "
    "cursor, opening one with a null initial position, active/inactive flags, last-active "
    "time, size estimates, the read-position-changed flag, managed-ledger termination); "
    "brokerlab models none of these"
)
_FAULTS = (
    "fault injection into BookKeeper or the metadata store (failed ledger creation, adds, reads "
    "or metadata writes, bad-version conflicts, lost metadata sessions, a cursor ledger closed "
    "under the cursor, orphan-ledger cleanup); brokerlab's storage model injects none of these. "
    "Its only BookKeeper failure is an oversize cursor-ledger entry, re-expressed from the spec "
    "in tests/unit (scenario 33)"
)
_INTERNALS = (
    "drives ManagedCursorImpl internals directly (private fields set by reflection, "
    "recoverFromLedger with a hand-built node, mocked ledger metadata naming deleted ledgers, "
    "the deletion of an empty data ledger on reopen); brokerlab's managed ledger never deletes "
    "ledgers and its cursor has no such entry points"
)
_BATCH_MERGE = (
    "merging client ackSets into the stored batch bitset (asyncDelete ANDs them, a cumulative "
    "ack with an ackSet keeps the larger one); brokerlab's consumer model hands the cursor the "
    "resulting unacked mask directly (settlement.py) and sends no cumulative batch ack"
)
_THREADS = "concurrent callers on threads; the simulation is single-threaded"
_JVM = "JVM object recycling (OpReadEntry); brokerlab holds no recyclable objects"

_NOT_APPLICABLE: dict[str, str] = {
    **dict.fromkeys(
        [
            "readFromEmptyLedger",
            "readTwice",
            "readWithCacheDisabled",
            "getEntryDataTwice",
            "readFromClosedLedger",
            "asyncReadWithoutErrors",
            "asyncReadWithInvalidParameter",
            "testAsyncReadWithMaxSizeByte",
            "testResetCursor",
            "testResetCursor1",
            "testasyncResetCursor",
            "seekPosition",
            "seekPosition2",
            "seekPosition3",
            "seekPosition4",
            "rewind",
            "testFilteringReadEntries",
            "testReadingAllFilteredEntries",
            "testSkipEntries",
            "testSkipEntriesWithIndividualDeletedMessages",
            "testClearBacklog",
            "testReadEntriesOrWait",
            "testFindNewestMatching",
            "testScan",
            "testFindNewestMatchingOdd1",
            "testFindNewestMatchingOdd2",
            "testFindNewestMatchingOdd3",
            "testFindNewestMatchingOdd4",
            "testFindNewestMatchingOdd5",
            "testFindNewestMatchingEven1",
            "testFindNewestMatchingEven2",
            "testFindNewestMatchingEven3",
            "testFindNewestMatchingEven4",
            "testFindNewestMatchingEdgeCase1",
            "testFindNewestMatchingEdgeCase2",
            "testFindNewestMatchingEdgeCase3",
            "testFindNewestMatchingEdgeCase4",
            "testFindNewestMatchingEdgeCase5",
            "testFindNewestMatchingEdgeCase6",
            "testFindNewestMatchingEdgeCase7",
            "testFindNewestMatchingEdgeCase8",
            "testFindNewestMatchingEdgeCase9",
            "testFindNewestMatchingEdgeCase10",
            "testFindNewestMatchingAfterLedgerRollover",
            "testFindNewestMatchingAllEntries",
            "testFindNewestMatchingAllEntries2",
            "testFindNewestMatchingAllEntriesSingleLedger",
            "testReplayEntries",
            "testGetEntryAfterN",
            "testGetEntryAfterNWithIndividualDeletedMessages",
            "cancelReadOperation",
            "testReadEntriesOrWaitWithMaxSize",
            "testReadEntriesOrWaitWithMaxPosition",
            "testReadEmptyEntryList",
            "testReadEntriesWithSkip",
            "testReadEntriesWithSkipDeletedEntries",
            "testReadEntriesWithSkipDeletedEntriesAndWithSkipConditions",
        ],
        _READ,
    ),
    **dict.fromkeys(
        [
            "testRepeatCloseCursor",
            "testOpenCursorWithNullInitialPosition",
            "testLastActiveAfterResetCursor",
            "removingCursor",
            "deleteCursor",
            "testEstimatedUnackedSize",
            "testAlwaysInactive",
            "testNonDurableCursorActive",
            "testCursorCheckReadPositionChanged",
            "testRecoverCursorWithTerminateManagedLedger",
        ],
        _LIFECYCLE,
    ),
    **dict.fromkeys(
        [
            "testCloseCursor",
            "testPersistentMarkDeleteIfCreateCursorLedgerFailed",
            "testSwitchLedgerFailed",
            "testPersistentMarkDeleteIfSwitchCursorLedgerFailed",
            "asyncReadWithErrors",
            "markDeleteWithErrors",
            "markDeleteWithZKErrors",
            "testRemoveCursorFail",
            "errorCreatingCursor",
            "errorRecoveringCursor2",
            "testLeakFailedLedgerOfManageCursor",
            "testFlushCursorAfterError",
            "testCursorNoRolloverIfNoMetadataSession",
        ],
        _FAULTS,
    ),
    **dict.fromkeys(
        [
            "testNumberOfEntriesInBacklogWithFallback",
            "testReopenMultipleTimes",
            "testRecoverCursorAheadOfLastPosition",
            "testRecoverCursorAfterResetToLatestForNewEntry",
            "testRecoverCursorAfterResetToLatestForMultipleEntries",
            "testCursorGetBacklog",
        ],
        _INTERNALS,
    ),
    **dict.fromkeys(("testBatchIndexMarkdelete", "testBatchIndexDelete"), _BATCH_MERGE),
    "testConcurrentResetCursor": _THREADS,
    "testReadEntriesOrWaitBlocking": _THREADS,
    "testOpReadEntryRecycle": _JVM,
    "testInvalidMarkDelete": "rejection of a client-supplied position beyond the last entry; "
    "brokerlab's consumers acknowledge only positions they were delivered",
}

UPSTREAM = UpstreamClass(
    name="ManagedCursorTest (persistence)",
    area="Ack state",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/ManagedCursorTest.java",
    commit="2bb2b12205b73e874e60cbd3376f5979dfd0e6fe",
    methods=tuple(
        [
            "testCloseCursor",
            "testRepeatCloseCursor",
            "testOpenCursorWithNullInitialPosition",
            "readFromEmptyLedger",
            "readTwice",
            "testPersistentMarkDeleteIfCreateCursorLedgerFailed",
            "testSwitchLedgerFailed",
            "testPersistentMarkDeleteIfSwitchCursorLedgerFailed",
            "readWithCacheDisabled",
            "getEntryDataTwice",
            "readFromClosedLedger",
            "testNumberOfEntries",
            "testNumberOfEntriesInBacklog",
            "testNumberOfEntriesInBacklogWithFallback",
            "testNumberOfEntriesWithReopen",
            "asyncReadWithoutErrors",
            "asyncReadWithErrors",
            "asyncReadWithInvalidParameter",
            "testAsyncReadWithMaxSizeByte",
            "markDeleteWithErrors",
            "markDeleteWithZKErrors",
            "markDeleteAcrossLedgers",
            "testResetCursor",
            "testResetCursor1",
            "testasyncResetCursor",
            "testConcurrentResetCursor",
            "testLastActiveAfterResetCursor",
            "seekPosition",
            "seekPosition2",
            "seekPosition3",
            "seekPosition4",
            "rewind",
            "markDeleteSkippingMessage",
            "removingCursor",
            "testRemoveCursorFail",
            "cursorPersistence",
            "cursorPersistence2",
            "asyncMarkDeleteBlocking",
            "cursorPersistenceAsyncMarkDeleteSameThread",
            "unorderedMarkDelete",
            "unorderedAsyncMarkDelete",
            "deleteCursor",
            "errorCreatingCursor",
            "failDuringRecoveryWithEmptyLedger",
            "errorRecoveringCursor",
            "errorRecoveringCursor2",
            "errorRecoveringCursor3",
            "testSingleDelete",
            "testFilteringReadEntries",
            "testReadingAllFilteredEntries",
            "testCountingWithDeletedEntries",
            "testMarkDeleteTwice",
            "testSkipEntries",
            "testSkipEntriesWithIndividualDeletedMessages",
            "testClearBacklog",
            "testRateLimitMarkDelete",
            "deleteSingleMessageTwice",
            "testReadEntriesOrWait",
            "testReadEntriesOrWaitBlocking",
            "testFindNewestMatching",
            "testScan",
            "testFindNewestMatchingOdd1",
            "testFindNewestMatchingOdd2",
            "testFindNewestMatchingOdd3",
            "testFindNewestMatchingOdd4",
            "testFindNewestMatchingOdd5",
            "testFindNewestMatchingEven1",
            "testFindNewestMatchingEven2",
            "testFindNewestMatchingEven3",
            "testFindNewestMatchingEven4",
            "testFindNewestMatchingEdgeCase1",
            "testFindNewestMatchingEdgeCase2",
            "testFindNewestMatchingEdgeCase3",
            "testFindNewestMatchingEdgeCase4",
            "testFindNewestMatchingEdgeCase5",
            "testFindNewestMatchingEdgeCase6",
            "testFindNewestMatchingEdgeCase7",
            "testFindNewestMatchingEdgeCase8",
            "testFindNewestMatchingEdgeCase9",
            "testFindNewestMatchingEdgeCase10",
            "testIndividuallyDeletedMessages",
            "testIndividuallyDeletedMessages1",
            "testIndividuallyDeletedMessages2",
            "testIndividuallyDeletedMessages3",
            "testFindNewestMatchingAfterLedgerRollover",
            "testFindNewestMatchingAllEntries",
            "testFindNewestMatchingAllEntries2",
            "testFindNewestMatchingAllEntriesSingleLedger",
            "testReplayEntries",
            "testGetLastIndividualDeletedRange",
            "testTrimDeletedEntries",
            "outOfOrderAcks",
            "randomOrderAcks",
            "testGetEntryAfterN",
            "testGetEntryAfterNWithIndividualDeletedMessages",
            "cancelReadOperation",
            "testReopenMultipleTimes",
            "testOutOfOrderDeletePersistenceWithClose",
            "testOutOfOrderDeletePersistenceAfterCrash",
            "testLeakFailedLedgerOfManageCursor",
            "testOutOfOrderDeletePersistenceIntoLedgerWithClose",
            "testOutOfOrderDeletePersistenceIntoZkWithClose",
            "testInvalidMarkDelete",
            "testEstimatedUnackedSize",
            "testRecoverCursorAheadOfLastPosition",
            "testRecoverCursorAfterResetToLatestForNewEntry",
            "testRecoverCursorAfterResetToLatestForMultipleEntries",
            "testAlwaysInactive",
            "testNonDurableCursorActive",
            "deleteMessagesCheckhMarkDelete",
            "testBatchIndexMarkdelete",
            "testBatchIndexDelete",
            "testBatchIndexesDeletionPersistAndRecover",
            "testReadEntriesOrWaitWithMaxSize",
            "testReadEntriesOrWaitWithMaxPosition",
            "testFlushCursorAfterInactivity",
            "testFlushCursorAfterIndividualDeleteInactivity",
            "testFlushCursorAfterError",
            "testConsistencyOfIndividualMessages",
            "testCursorCheckReadPositionChanged",
            "testCursorGetBacklog",
            "testCursorNoRolloverIfNoMetadataSession",
            "testReadEmptyEntryList",
            "testOpReadEntryRecycle",
            "testLazyCursorLedgerCreation",
            "testLazyCursorLedgerCreationForSubscriptionCreation",
            "testReadEntriesWithSkip",
            "testReadEntriesWithSkipDeletedEntries",
            "testReadEntriesWithSkipDeletedEntriesAndWithSkipConditions",
            "testRecoverCursorWithTerminateManagedLedger",
        ]
    ),
    not_applicable=_NOT_APPLICABLE,
    line="3.x",
    note="The version read is the PositionImpl-era file (130 test methods). Its "
    "ManagedLedgerConfig defaults are the ones used here: no mark-delete rate limit, the "
    "MessageRange form, batch-index acks on, 1000 ranges for the metadata-store close threshold "
    "(brokerlab's 4.x defaults). Only the methods about the acknowledgement state and its "
    "persistence are re-expressed; the rest is grouped by reason.",
)


def reopened(cursor: Cursor) -> Cursor:
    """A new broker cursor on the same managed ledger, as a broker that reopens the topic builds
    it before restoring the recovered state into it."""
    return Cursor(cursor.name, cursor.ledger, cursor.ledger.first_position)


def unacked(cursor: Cursor) -> list[tuple[int, int]]:
    """The positions a reader of the cursor would still be given, in order."""
    return [pos for pos in positions_of(cursor) if not cursor.is_acked(*pos)]


# ---- mark-delete and individual acks in memory ----------------------------------------------


@reexpresses(UPSTREAM, "testNumberOfEntries")
@reexpresses(UPSTREAM, "testNumberOfEntriesInBacklog")
def test_cursors_opened_between_writes_count_what_follows_them() -> None:
    """Ledgers of 2 entries; cursors opened after 0..4 of 4 entries have 4, 3, 2, 1 and 0 entries
    to read and in backlog. The first cursor then mark-deletes entry 0 (backlog 3), acks entry
    2 alone (2) and mark-deletes entry 3 (0); mark-deleting the second entry leaves 2 to read."""
    ml = ManagedLedger("t", LedgerIds(1), 2)
    positions = [ml.append(100, 0) for _ in range(4)]
    starts = [ml.first_position, *positions]
    cursors = [Cursor(f"c{i}", ml, start) for i, start in enumerate(starts)]
    assert [c.unread_entries() for c in cursors] == [4, 3, 2, 1, 0]
    assert [backlog(c) for c in cursors] == [4, 3, 2, 1, 0]
    c1 = cursors[0]
    c1.ack_cumulative(positions[0])
    assert backlog(c1) == 3
    c1.ack(*positions[2])
    assert backlog(c1) == 2
    c1.ack_cumulative(positions[3])
    assert backlog(c1) == 0 and c1.unread_entries() == 0
    other = Cursor("x", ml, ml.first_position)
    other.ack_cumulative(positions[1])
    assert other.unread_entries() == 2


@reexpresses(UPSTREAM, "markDeleteAcrossLedgers")
def test_acking_the_first_entry_of_the_next_ledger_moves_the_mark_delete_over_an_empty_one() -> (
    None
):
    """The cursor's mark-delete is 3:-1 in an empty ledger 3; the first entry lands in ledger 5.
    Acking 5:0 moves the mark-delete to 5:0 and the read position right after it."""
    ml = ManagedLedger("t", GivenIds([3, 5]), 0)  # ledger 3 holds nothing
    first = ml.append(100, 0)
    assert first == (5, 0)
    cursor = Cursor("c", ml, (3, -1))
    cursor.ack(*first)
    assert cursor.md == (5, 0) and cursor.read_position == (5, 1)


@reexpresses(UPSTREAM, "markDeleteSkippingMessage")
def test_a_mark_delete_ahead_of_the_read_position_moves_it() -> None:
    """4 entries; mark-delete entry 0 (3 left, the read position at entry 1), then mark-delete
    entry 3 though only entry 1 was read: nothing left, the read position after entry 3."""
    cursor = cursor_on(4)
    cursor.ack_cumulative((1, 0))
    assert cursor.unread_entries() == 3 and cursor.read_position == (1, 1)
    cursor.ack_cumulative((1, 3))
    assert cursor.unread_entries() == 0 and cursor.read_position == (1, 4)


@reexpresses(
    UPSTREAM,
    "unorderedMarkDelete",
    differs="brokerlab ignores a mark-delete behind the current one (Cursor.ack_cumulative "
    "returns 0) where Pulsar fails the call with MarkDeletingMarkedPosition; no simulated "
    "consumer sends one, and the state is the same: the mark-delete stays where it was.",
)
@reexpresses(
    UPSTREAM,
    "unorderedAsyncMarkDelete",
    differs="as for unorderedMarkDelete: no failed callback, the mark-delete stays put.",
)
def test_a_mark_delete_behind_the_current_one_changes_nothing() -> None:
    """Mark-delete entry 1, then entry 0: the second call acks nothing and the mark-delete stays
    at entry 1."""
    cursor = cursor_on(2)
    assert cursor.ack_cumulative((1, 1)) == 2
    assert cursor.ack_cumulative((1, 0)) == 0
    assert cursor.md == (1, 1)


@reexpresses(UPSTREAM, "testSingleDelete")
def test_single_acks_move_the_mark_delete_over_ledgers() -> None:
    """Ledgers of 3 entries, 6 entries p1..p6. Ack p4 (mark-delete unmoved), p1 (moves to p1),
    p3 twice (the second is a no-op), p2 (moves over p3 and p4, into the second ledger), p5."""
    cursor = cursor_on(6, per_ledger=3)
    p = positions_of(cursor)
    start = cursor.md
    assert cursor.ack(*p[3]) and cursor.md == start
    assert cursor.ack(*p[0]) and cursor.md == p[0]
    assert cursor.ack(*p[2])
    assert not cursor.ack(*p[2]) and cursor.md == p[0]
    assert cursor.ack(*p[1]) and cursor.md == p[3] == (2, 0)
    assert cursor.ack(*p[4]) and cursor.md == p[4]


@reexpresses(UPSTREAM, "testCountingWithDeletedEntries")
def test_acks_in_any_order_lower_the_backlog_one_each() -> None:
    """Ledgers of 2 entries, 8 entries; acking p8, p1, then p7, p6, p5 leaves 7, 6 and 3 entries
    to read and in backlog."""
    cursor = cursor_on(8, per_ledger=2)
    p = positions_of(cursor)
    cursor.ack(*p[7])
    assert backlog(cursor) == cursor.unread_entries() == 7
    cursor.ack(*p[0])
    assert backlog(cursor) == cursor.unread_entries() == 6
    for i in (6, 5, 4):
        cursor.ack(*p[i])
    assert backlog(cursor) == cursor.unread_entries() == 3


@reexpresses(UPSTREAM, "testMarkDeleteTwice")
def test_mark_deleting_the_same_position_twice_is_harmless() -> None:
    """Mark-delete entry 0 twice: the second acks nothing, the mark-delete stays at entry 0."""
    cursor = cursor_on(1)
    assert cursor.ack_cumulative((1, 0)) == 1
    assert cursor.ack_cumulative((1, 0)) == 0
    assert cursor.md == (1, 0)


@reexpresses(UPSTREAM, "deleteSingleMessageTwice")
def test_acking_each_entry_twice_counts_once() -> None:
    """4 entries acked in order, each twice: every second ack is a no-op, and after each pair
    the backlog, the mark-delete and the read position are those of one ack."""
    cursor = cursor_on(4)
    for i in range(4):
        for again in (False, True):
            assert cursor.ack(1, i) is not again
            assert backlog(cursor) == cursor.unread_entries() == 3 - i
            assert cursor.md == (1, i) and cursor.read_position == (1, i + 1)


@reexpresses(UPSTREAM, "testIndividuallyDeletedMessages")
@reexpresses(UPSTREAM, "testIndividuallyDeletedMessages1")
@reexpresses(UPSTREAM, "testIndividuallyDeletedMessages2")
@reexpresses(UPSTREAM, "testIndividuallyDeletedMessages3")
@pytest.mark.parametrize(
    ("single", "cumulative"),
    [((1, 2), 3), ((1,), 3), ((1, 2, 0), None), ((1, 2), 0)],
    ids=["holes-then-md-past", "hole-then-md-past", "holes-then-fill", "holes-then-md-before"],
)
def test_the_range_set_empties_once_the_mark_delete_covers_it(
    single: tuple[int, ...], cumulative: int | None
) -> None:
    """5 entries: entries acked alone, then a mark-delete: past them (to entry 3), or filling the
    hole before them (acking entry 0, or mark-deleting it). The range set ends up empty."""
    cursor = cursor_on(5)
    for e in single:
        cursor.ack(1, e)
    if cursor.range_count() == 0:
        assert cumulative is None  # the acks alone closed the hole
    if cumulative is not None:
        assert cursor.range_count() == 1
        cursor.ack_cumulative((1, cumulative))
    assert cursor.range_count() == 0 and not cursor.acked_ranges()


@reexpresses(UPSTREAM, "testGetLastIndividualDeletedRange")
def test_the_last_range_is_the_highest_hole_acked() -> None:
    """10 entries; ack entries 0, 1, 4 and 5 (the first two move the mark-delete): the last range
    is (1:3..1:5]; then ack entry 7: it is (1:6..1:7]."""
    cursor = cursor_on(10)
    for e in (0, 1, 4, 5):
        cursor.ack(1, e)
    assert cursor.acked_ranges()[-1] == ((1, 3), (1, 5))
    cursor.ack(1, 7)
    assert cursor.acked_ranges()[-1] == ((1, 6), (1, 7))


@reexpresses(UPSTREAM, "testTrimDeletedEntries")
def test_entries_read_after_their_ack_are_dropped() -> None:
    """Entries 0, 1, 4 and 5 acked; of the entries 0, 1, 4, 5 and 6 read back, only 6 is still
    to be delivered. (Pulsar also releases the dropped buffers; brokerlab holds none.)"""
    cursor = cursor_on(10)
    for e in (0, 1, 4, 5):
        cursor.ack(1, e)
    read = [(1, 0), (1, 1), (1, 4), (1, 5), (1, 6)]
    assert [pos for pos in read if not cursor.is_acked(*pos)] == [(1, 6)]


@reexpresses(UPSTREAM, "outOfOrderAcks")
def test_acks_backwards_lower_the_backlog_one_each() -> None:
    """10 entries acked 3, 2, 1, 0: the backlog goes 9, 8, 7, 6."""
    cursor = cursor_on(10)
    for n, e in enumerate((3, 2, 1, 0), start=1):
        cursor.ack(1, e)
        assert backlog(cursor) == 10 - n
    assert cursor.md == (1, 3)


@reexpresses(UPSTREAM, "randomOrderAcks")
def test_acks_in_random_order_lower_the_backlog_one_each() -> None:
    """10 entries acked in a shuffled order: each ack lowers the backlog by one, down to 0."""
    cursor = cursor_on(10)
    order = list(range(10))
    random.Random(7).shuffle(order)
    for n, e in enumerate(order, start=1):
        cursor.ack(1, e)
        assert backlog(cursor) == 10 - n
    assert cursor.md == (1, 9) and cursor.range_count() == 0


@reexpresses(UPSTREAM, "deleteMessagesCheckhMarkDelete")
def test_every_third_ack_then_the_rest_of_the_first_half() -> None:
    """1000 entries; ack every third (0, 3, ...): 334 acked, the mark-delete at entry 0 and the
    read position at 1. Then ack the others below 500: the mark-delete reaches 499."""
    cursor = cursor_on(1000)
    for e in range(0, 1000, 3):
        cursor.ack(1, e)
    assert backlog(cursor) == cursor.unread_entries() == 1000 - 334
    assert cursor.md == (1, 0) and cursor.read_position == (1, 1)
    for e in range(500):
        if e % 3:
            cursor.ack(1, e)
    assert backlog(cursor) == 1000 - 334 - (500 - 167)
    assert cursor.md == (1, 499) and cursor.read_position == (1, 500)


@reexpresses(UPSTREAM, "testConsistencyOfIndividualMessages")
def test_a_range_behind_the_mark_delete_does_not_outlive_it() -> None:
    """The mark-delete is at the first entry of ledger 2 and the recovered state also claims
    entries of ledger 1, behind it; after the 20 entries that follow are acked, the mark-delete
    is at the last one and no range is left."""
    cursor = cursor_on(22, per_ledger=1)
    md = (2, 0)
    stale = ((1, -1), (1, 0))  # all of ledger 1, at or before the mark-delete
    cursor.restore(RecoveredAckState(mark_delete=md, acked_ranges=(stale,)))
    for lid in range(3, 23):
        cursor.ack(lid, 0)
    assert cursor.md == (22, 0)
    assert cursor.range_count() == 0


# ---- persistence and recovery ---------------------------------------------------------------


@reexpresses(UPSTREAM, "cursorPersistence")
def test_each_cursor_recovers_its_own_mark_delete() -> None:
    """Two cursors on 6 entries: c1 mark-deletes entry 2, c2 entry 5. After a crash each recovers
    its own mark-delete."""
    ml = cursor_on(6).ledger
    c1, c2 = Cursor("c1", ml, ml.first_position), Cursor("c2", ml, ml.first_position)
    p1, p2 = persister(), persister()
    for c, p, md in ((c1, p1, (1, 2)), (c2, p2, (1, 5))):
        p.created(c)
        c.ack_cumulative(md)
        p.acked(c, [1])
    for c, p, md in ((c1, p1, (1, 2)), (c2, p2, (1, 5))):
        again = restart(p, c)
        assert again.md == md


@reexpresses(UPSTREAM, "cursorPersistence2")
def test_mark_deletes_recover_when_the_cursor_ledger_rolls_every_entry() -> None:
    """managedLedgerCursorMaxEntriesPerLedger=1: the cursor ledger rolls over after every write.
    c1 mark-deletes entries 0..4 one by one, c2 entry 0, c3 nothing, and c4 was opened after
    entry 0 was written. After a crash: 1:4, 1:0, 1:-1 and 1:0."""
    ml = cursor_on(6).ledger
    starts = {"c1": (1, -1), "c2": (1, -1), "c3": (1, -1), "c4": (1, 0)}
    cursors = {name: Cursor(name, ml, start) for name, start in starts.items()}
    persisters = {
        name: persister(managed_ledger_cursor_max_entries_per_ledger=1) for name in starts
    }
    for name, c in cursors.items():
        persisters[name].created(c)
    for e in range(5):
        cursors["c1"].ack_cumulative((1, e))
        persisters["c1"].acked(cursors["c1"], [1])
    cursors["c2"].ack_cumulative((1, 0))
    persisters["c2"].acked(cursors["c2"], [1])
    assert persisters["c1"].stats()["ack_cursor_ledger_rollovers"] > 0
    recovered = {}
    for name, c in cursors.items():
        again = restart(persisters[name], c)
        recovered[name] = again.md
    assert recovered == {"c1": (1, 4), "c2": (1, 0), "c3": (1, -1), "c4": (1, 0)}


@reexpresses(UPSTREAM, "asyncMarkDeleteBlocking")
@reexpresses(UPSTREAM, "cursorPersistenceAsyncMarkDeleteSameThread")
@pytest.mark.parametrize("per_ledger", [10, None], ids=["ledgers-of-10", "one-ledger"])
def test_a_mark_delete_per_entry_recovers_the_last_one(per_ledger: int | None) -> None:
    """100 entries, each mark-deleted as it is written, with the cursor ledger rolling over every
    5 entries: 20 rollovers (the 6th entry of each cursor ledger, counting its first, rolls it),
    no backlog, and after a crash the mark-delete is the last entry."""
    cursor = cursor_on(100, per_ledger=per_ledger)
    p = persister(managed_ledger_cursor_max_entries_per_ledger=5)
    p.created(cursor)
    for pos in positions_of(cursor):
        cursor.ack_cumulative(pos)
        p.acked(cursor, [pos[0]])
    last = positions_of(cursor)[-1]
    assert cursor.unread_entries() == 0
    assert p.stats()["ack_cursor_ledger_rollovers"] == 20
    again = restart(p, cursor)
    assert again.md == last


@reexpresses(UPSTREAM, "failDuringRecoveryWithEmptyLedger")
def test_a_lost_cursor_ledger_rolls_back_to_the_last_persisted_mark_delete() -> None:
    """Mark-delete entry 1, close (the node holds 1:1), reopen, mark-delete entry 2 (a new
    cursor ledger is created for it). The cursor ledger then reads back empty: recovery rolls
    back to the node, which still says 1:1."""
    cursor = cursor_on(3)
    p = persister()
    p.created(cursor)
    cursor.ack_cumulative((1, 1))
    p.acked(cursor, [1])
    again = restart(p, cursor, close=True)
    assert again.md == (1, 1)
    again.ack_cumulative((1, 2))
    p.acked(again, [1])
    p.crash()
    p.storage.lose_ledger()
    got = p.recover()
    assert p.recovery_path == "rollback"
    assert got.mark_delete == (1, 1)


@reexpresses(UPSTREAM, "errorRecoveringCursor")
@reexpresses(UPSTREAM, "errorRecoveringCursor3")
def test_an_unreadable_cursor_ledger_rolls_back_to_the_position_at_creation() -> None:
    """A cursor opened after 2 of 3 entries, then the broker restarts with BookKeeper failing
    (LedgerRecoveryException or ReadException upstream): the cursor comes back where it was
    created and reads from entry 2. It never wrote, so it has no cursor ledger to fail on (the
    ledger is created lazily): its position comes from the metadata-store node."""
    cursor = cursor_on(3, after=2)
    p = persister()
    p.created(cursor)
    p.crash()
    p.storage.lose_ledger()
    again = reopened(cursor)
    again.restore(p.recover())
    assert p.recovery_path == "store"
    assert again.md == (1, 1) and again.read_position == (1, 2)


@reexpresses(UPSTREAM, "testRateLimitMarkDelete")
def test_only_the_first_mark_delete_in_a_second_is_persisted() -> None:
    """A rate limit of 1 persist per second; three mark-deletes at the same instant. The backlog
    is 0, but after a crash only the first is recovered: a backlog of 2."""
    clock = Clock()
    cursor = cursor_on(3)
    p = persister(clock, managed_ledger_default_mark_delete_rate_limit=1.0)
    p.created(cursor)
    for e in range(3):
        cursor.ack_cumulative((1, e))
        p.acked(cursor, [1])
    assert backlog(cursor) == 0
    again = restart(p, cursor)
    assert backlog(again) == 2


HOLES = (2, 5, 7, 8, 9)


@reexpresses(UPSTREAM, "testOutOfOrderDeletePersistenceWithClose")
@reexpresses(UPSTREAM, "testOutOfOrderDeletePersistenceAfterCrash")
@pytest.mark.parametrize("close", [True, False], ids=["close", "crash"])
def test_holes_survive_a_close_and_a_crash(close: bool) -> None:
    """20 entries; entries 2, 5, 7, 8 and 9 acked alone. After a close or a crash the backlog is
    still 15, and a reader is given 0, 1, 3, 4, 6, ... with the acked ones skipped."""
    cursor = cursor_on(20)
    p = persister()
    p.created(cursor)
    for e in HOLES:
        cursor.ack(1, e)
        p.acked(cursor, [1])
    assert backlog(cursor) == 15
    again = restart(p, cursor, close=close)
    assert p.recovery_path == ("store" if close else "ledger")
    assert backlog(again) == 15
    assert unacked(again) == [(1, e) for e in range(20) if e not in HOLES]


def alternate_acks(
    p_values: dict[str, int],
) -> tuple[Cursor, WholeStatePersister, PersistOutcome]:
    """100 entries, the even ones acked (the mark-delete at entry 0, 49 ranges), then closed."""
    cursor = cursor_on(100)
    p = persister(**p_values)
    p.created(cursor)
    for e in range(0, 100, 2):
        cursor.ack(1, e)
        p.acked(cursor, [1])
    assert backlog(cursor) == 50 and cursor.range_count() == 49
    out = p.close(cursor)
    assert out is not None
    return cursor, p, out


@reexpresses(UPSTREAM, "testOutOfOrderDeletePersistenceIntoLedgerWithClose")
def test_a_close_with_more_ranges_than_the_store_threshold_goes_to_the_ledger() -> None:
    """With managedLedgerMaxUnackedRangesToPersistInMetadataStore=10, a close with 49 ranges
    writes all of them to the cursor ledger and the node keeps pointing at it; a reopen recovers
    a backlog of 50, the odd entries."""
    cursor, p, out = alternate_acks(
        {"managed_ledger_max_unacked_ranges_to_persist_in_metadata_store": 10}
    )
    assert not out.to_metadata_store and out.ranges_persisted == 49
    assert not p.storage.node_holds_state
    again = reopened(cursor)
    again.restore(p.recover())
    assert p.recovery_path == "ledger"
    assert backlog(again) == 50 and unacked(again) == [(1, e) for e in range(1, 100, 2)]


@reexpresses(UPSTREAM, "testOutOfOrderDeletePersistenceIntoZkWithClose")
def test_a_close_within_the_store_threshold_writes_the_ranges_to_the_node() -> None:
    """With the default threshold (1000), the same close writes the 49 ranges into the
    metadata-store node; a reopen recovers a backlog of 50 from it."""
    cursor, p, out = alternate_acks({})
    assert out.to_metadata_store and out.ranges_persisted == 49
    assert p.storage.node_holds_state
    again = reopened(cursor)
    again.restore(p.recover())
    assert p.recovery_path == "store"
    assert backlog(again) == 50 and unacked(again) == [(1, e) for e in range(1, 100, 2)]


def unacked_mask(size: int, acked: range) -> int:
    """A batch of ``size`` messages with the indexes ``acked`` acknowledged: the bits still set."""
    return sum(1 << i for i in range(size) if i not in acked)


@reexpresses(UPSTREAM, "testBatchIndexesDeletionPersistAndRecover")
def test_batch_bitsets_survive_a_close_to_the_ledger() -> None:
    """Batches of 10: entry 6 has indexes 1-3 acked, entry 5 indexes 3-6, entries 0-4 every index
    (the mark-delete moves to entry 4). Closed with the store threshold at -1 (to the ledger) and
    reopened: the mark-delete is entry 4 and entry 5 keeps its bitset; acking the rest of entry
    5 moves the mark-delete there, and entry 6 still has its own."""
    cursor = cursor_on(100)
    p = persister(managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=-1)
    p.created(cursor)
    cursor.ack_batch_partially((1, 6), 10, unacked_mask(10, range(1, 4)))
    cursor.ack_batch_partially((1, 5), 10, unacked_mask(10, range(3, 7)))
    p.acked(cursor, [1])
    for e in range(5):
        cursor.ack(1, e)
        p.acked(cursor, [1])
    assert cursor.md == (1, 4)
    again = restart(p, cursor, close=True)
    assert p.recovery_path == "ledger"
    assert again.md == (1, 4)
    assert dict(again.batch_acks()) == {
        (1, 5): BatchAck(10, 0b11_1000_0111),
        (1, 6): BatchAck(10, 0b11_1111_0001),
    }
    again.ack(1, 5)
    assert again.md == (1, 5)
    assert dict(again.batch_acks()) == {(1, 6): BatchAck(10, 0b11_1111_0001)}


@reexpresses(UPSTREAM, "testFlushCursorAfterInactivity")
def test_the_flush_persists_the_mark_delete_the_rate_limit_held_back() -> None:
    """Rate limit 1 per second; 20 mark-deletes at once persist only the first. The periodic
    flush of dirty cursors then writes the last, which a crash recovers."""
    clock = Clock()
    cursor = cursor_on(20)
    p = persister(clock, managed_ledger_default_mark_delete_rate_limit=1.0)
    p.created(cursor)
    for pos in positions_of(cursor):
        cursor.ack_cumulative(pos)
        p.acked(cursor, [1])
    clock.advance(1.0)
    assert p.flush(cursor) is not None
    again = restart(p, cursor)
    assert again.md == (1, 19)


@reexpresses(UPSTREAM, "testFlushCursorAfterIndividualDeleteInactivity")
@pytest.mark.parametrize("flushed", [False, True], ids=["before-flush", "after-flush"])
def test_the_flush_persists_individual_acks_the_rate_limit_held_back(flushed: bool) -> None:
    """Rate limit 1 per second; 20 entries acked one by one at once: the mark-delete reaches the
    last in memory. A crash before the periodic flush recovers an earlier one; after it, the
    last."""
    clock = Clock()
    cursor = cursor_on(20)
    p = persister(clock, managed_ledger_default_mark_delete_rate_limit=1.0)
    p.created(cursor)
    for pos in positions_of(cursor):
        cursor.ack(*pos)
        p.acked(cursor, [1])
    assert cursor.md == (1, 19)
    if flushed:
        clock.advance(1.0)
        p.flush(cursor)
    again = restart(p, cursor)
    assert (again.md == (1, 19)) is flushed


@reexpresses(UPSTREAM, "testLazyCursorLedgerCreation")
def test_the_cursor_ledger_is_created_by_the_first_mark_delete() -> None:
    """A new cursor has no cursor ledger and its mark-delete is the managed ledger's last
    position. After 10 entries, a mark-delete of the last creates the ledger and is persisted.
    Closed and reopened, the cursor again has no writable ledger and recovers that mark-delete;
    10 more entries and a mark-delete make it writable again."""
    cursor = cursor_on(20)
    p = persister()
    p.created(Cursor("c", cursor.ledger, cursor.ledger.first_position))
    assert not p.storage.ledger_writable
    cursor.ack_cumulative((1, 9))
    p.acked(cursor, [1])
    assert p.storage.ledger_writable
    again = restart(p, cursor, close=True)
    assert not p.storage.ledger_writable and again.md == (1, 9)
    again.ack_cumulative((1, 19))
    p.acked(again, [1])
    assert p.storage.ledger_writable
    last = restart(p, again)
    assert last.md == (1, 19)


@reexpresses(UPSTREAM, "testLazyCursorLedgerCreationForSubscriptionCreation")
def test_a_cursor_created_after_an_entry_recovers_its_starting_position() -> None:
    """A cursor created after one entry starts with that entry mark-deleted; another broker
    that opens the topic without any acknowledgement recovers the same position."""
    cursor = cursor_on(1, after=1)
    p = persister()
    p.created(cursor)
    again = restart(p, cursor)
    assert again.md == (1, 0)


@reexpresses(UPSTREAM, "testNumberOfEntriesWithReopen")
def test_cursors_opened_between_writes_count_the_same_after_a_reopen() -> None:
    """Ledgers of 1 entry; c1 opened before 2 entries, c2 between them, c3 after. After a crash
    they have 2, 1 and 0 entries to read."""
    ml = ManagedLedger("t", LedgerIds(1), 1)
    c1 = Cursor("c1", ml, ml.first_position)
    first = ml.append(100, 0)
    c2 = Cursor("c2", ml, first)
    c3 = Cursor("c3", ml, ml.append(100, 0))
    counts = []
    for c in (c1, c2, c3):
        p = persister()
        p.created(c)
        again = restart(p, c)
        counts.append(again.unread_entries())
    assert counts == [2, 1, 0]
