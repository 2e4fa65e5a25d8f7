"""The PIP-430 cursor container holds nothing of a removed cursor, however cursors come and go, and
its ranks and slowest position stay right meanwhile."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, reexpresses

from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

UPSTREAM = UpstreamClass(
    name="ActiveManagedCursorContainerRetentionTest",
    area="Cursor containers",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/ActiveManagedCursorContainerRetentionTest.java",
    commit="01922c8a5a6c52c75f5a137ae32e332caddeff19",
    methods=(
        "testRemovedCursorReleasedBeforeCleanup",
        "testLastRemovalClearsRetainedNodes",
        "testPendingNodesBoundedWithoutPositionQueries",
        "testTrackedRemovalsTriggerCleanupWithoutPendingUpdates",
        "testCompactionPreservesPendingUpdatesAndSharedCounters",
        "testPositionQueryResetsCleanupBatch",
        "testReusedNodeUsesCurrentCursorInstance",
        "testReactivationDoesNotDuplicatePendingUpdates",
        "testSlowestPositionReadDoesNotExcludeOtherReaders",
        "testSlowestPositionFlushesPendingChanges",
        "testIteratorSkipsRemovedNodes",
    ),
    not_applicable={
        "testPositionQueryResetsCleanupBatch": "when the lazy container's deferred cleanup batch"
        " restarts; brokerlab's container defers nothing (a removal is applied at once), and the"
        " test asserts no rank or position",
        "testSlowestPositionReadDoesNotExcludeOtherReaders": "the container's read lock under"
        " concurrent readers; the simulation is single-threaded",
        "testIteratorSkipsRemovedNodes": "iteration over the container's cursor objects;"
        " brokerlab's containers are not iterable (the cache asks only for the slowest"
        " position and ranks)",
    },
    note="Upstream inspects what the lazy container still references (`getRetainedCursors`,"
    " `getPendingPositionUpdatesCount`). brokerlab's counterpart is what the `sorted-list`"
    " container holds: the cursors it knows and the members of its position groups, which must"
    " be exactly the live cursors after every operation.",
)

POSITION = (1, 1)


def _held(container: SortedListCursorContainer) -> tuple[set[str], int]:
    """The cursors the container references, and how many group members it counts."""
    return set(container._members), sum(group.members for group in container._groups)


@pytest.mark.parametrize("queried", [False, True], ids=["untracked-yet", "queried"])
@reexpresses(UPSTREAM, "testRemovedCursorReleasedBeforeCleanup")
def test_a_removed_cursor_is_not_held(queried: bool) -> None:
    """Two cursors share 1:1 and one is removed (with or without a query before): the container
    holds only the survivor, which ranks 1."""
    container = SortedListCursorContainer()
    container.add("survivor", POSITION)
    container.add("removed", POSITION)
    if queried:
        container.slowest_position()
    container.remove("removed")
    assert _held(container) == ({"survivor"}, 1)
    assert container.count_at_or_before("survivor") == 1
    container._check()


@pytest.mark.parametrize("queried", [False, True], ids=["untracked-yet", "queried"])
@reexpresses(UPSTREAM, "testLastRemovalClearsRetainedNodes")
def test_removing_the_last_cursor_empties_the_container(queried: bool) -> None:
    """A cursor added and removed a hundred times: after each removal the container is empty and
    holds nothing."""
    container = SortedListCursorContainer()
    for _ in range(100):
        container.add("cursor", POSITION)
        if queried:
            container.slowest_position()
        assert "cursor" in container
        container.remove("cursor")
        assert "cursor" not in container
        assert len(container) == 0 and _held(container) == (set(), 0)
        assert container.slowest_position() is None


@reexpresses(UPSTREAM, "testPendingNodesBoundedWithoutPositionQueries")
def test_churn_beside_a_survivor_holds_nothing_without_queries() -> None:
    """A thousand short-lived cursors are added at the survivor's position and removed, with no
    query in between: the container never holds more than the survivor, which ranks 1."""
    container = SortedListCursorContainer()
    container.add("survivor", POSITION)
    for i in range(1000):
        container.add(f"cursor{i}", POSITION)
        container.remove(f"cursor{i}")
        assert _held(container) == ({"survivor"}, 1)
    assert container.count_at_or_before("survivor") == 1
    container._check()


@reexpresses(
    UPSTREAM,
    "testTrackedRemovalsTriggerCleanupWithoutPendingUpdates",
    differs="brokerlab's container drops a removed cursor at once, so after the 64th removal it"
    " holds the 936 live cursors, where upstream's lazy container still retains all 1,000 nodes"
    " (it asserts `getRetainedCursors()` has size 1000 at i == 63, to avoid a rebuild per batch);"
    " the slowest position and ranks agree.",
)
def test_removing_most_of_a_thousand_tracked_cursors() -> None:
    """A thousand cursors at 1:0..1:999; the first 900 are removed in order. The container holds
    exactly the live cursors after each removal; the slowest is then 1:900, and cursor999 ranks
    100."""
    container = SortedListCursorContainer()
    for i in range(1000):
        container.add(f"cursor{i}", (1, i))
    container.slowest_position()
    for i in range(900):
        container.remove(f"cursor{i}")
        names, members = _held(container)
        assert len(names) == members == len(container) == 999 - i
    assert container.slowest_position() == (1, 900)
    assert container.count_at_or_before("cursor999") == 100
    container._check()


@reexpresses(UPSTREAM, "testCompactionPreservesPendingUpdatesAndSharedCounters")
def test_a_move_and_many_removals_keep_shared_ranks() -> None:
    """Two hundred cursors in groups of ten (cursor i at 1:(i // 10)); cursor199 moves back to 1:0
    and the even cursors are removed. The hundred odd cursors remain, five per group: cursor199
    ranks 6 (the five odd cursors of 1:0 and itself), and an odd cursor i ranks
    (i // 10 + 1) * 5 + 1, capped at 100 for the last group, which cursor199 left."""
    container = SortedListCursorContainer()
    for i in range(200):
        container.add(f"cursor{i}", (1, i // 10))
    container.slowest_position()
    container.update("cursor199", (1, 0))
    for i in range(0, 200, 2):
        container.remove(f"cursor{i}")
    names, members = _held(container)
    assert names == {f"cursor{i}" for i in range(1, 200, 2)} and members == 100
    assert container.count_at_or_before("cursor199") == 6
    for i in range(1, 199, 2):
        assert container.count_at_or_before(f"cursor{i}") == min(100, (i // 10 + 1) * 5 + 1), i
    container._check()


@reexpresses(UPSTREAM, "testReusedNodeUsesCurrentCursorInstance")
def test_a_cursor_removed_and_added_again_under_its_name() -> None:
    """A cursor sharing 1:1 with a survivor is removed and a new cursor of the same name is added
    at 1:1: the container knows it again and it ranks 2."""
    container = SortedListCursorContainer()
    container.add("survivor", POSITION)
    container.add("recreated", POSITION)
    container.slowest_position()
    container.remove("recreated")
    assert "recreated" not in container
    container.add("recreated", POSITION)
    assert "recreated" in container
    assert _held(container) == ({"survivor", "recreated"}, 2)
    assert container.count_at_or_before("recreated") == 2
    container._check()


@reexpresses(UPSTREAM, "testReactivationDoesNotDuplicatePendingUpdates")
def test_two_cursors_removed_and_added_again_a_thousand_times() -> None:
    """Two cursors at 1:1 are each removed and added again, a thousand times: the container never
    holds more than the two, and both rank 2 at the end."""
    container = SortedListCursorContainer()
    container.add("first", POSITION)
    container.add("second", POSITION)
    container.slowest_position()
    for _ in range(1000):
        for name in ("first", "second"):
            container.remove(name)
            container.add(name, POSITION)
        assert _held(container) == ({"first", "second"}, 2)
    container._check()
    assert container.count_at_or_before("first") == 2
    assert container.count_at_or_before("second") == 2


@reexpresses(UPSTREAM, "testSlowestPositionFlushesPendingChanges")
def test_slowest_position_after_each_change() -> None:
    """The slowest is none when empty; 1:2 once a cursor is added there (asked twice); 1:1 when a
    second cursor comes in behind; 1:2 again when that one moves to 1:3; 1:3 when the first leaves;
    none when both have left."""
    container = SortedListCursorContainer()
    assert container.slowest_position() is None
    container.add("later", (1, 2))
    assert container.slowest_position() == (1, 2)
    assert container.slowest_position() == (1, 2)
    container.add("earlier", POSITION)
    assert container.slowest_position() == POSITION
    container.update("earlier", (1, 3))
    assert container.slowest_position() == (1, 2)
    container.remove("later")
    assert container.slowest_position() == (1, 3)
    assert container.slowest_position() == (1, 3)
    container.remove("earlier")
    assert container.slowest_position() is None
