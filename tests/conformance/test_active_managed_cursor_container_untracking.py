"""A cursor the PIP-430 container knows but no longer tracks (position null) stays untracked, ranks
0 and never counts for the others, until it is given a position again."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, reexpresses

from brokerlab.protocols import Position
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

UPSTREAM = UpstreamClass(
    name="ActiveManagedCursorContainerUntrackingTest",
    area="Cursor containers",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/ActiveManagedCursorContainerUntrackingTest.java",
    commit="318cfa171c9c4064b718414850eee84a41c72804",
    methods=(
        "testFlushedUntrackingRemainsUntracked",
        "testRetrackAfterFlush",
        "testRepeatedUntrackingAfterFlush",
        "testUntrackingBeforeFirstPositionFlush",
    ),
    note="Upstream's container is lazy: it records changes and applies them (one by one, or by a"
    " rebuild) at the next query, and the `rebuild` parameter picks the path. brokerlab's"
    " `sorted-list` container applies every change at once, so both parameter values run the same"
    " operations here and must give the same answers.",
)

POSITIONS: list[Position] = [(1, i) for i in range(7)]
NAMES = [f"cursor{i}" for i in range(5)]


def _five() -> SortedListCursorContainer:
    """cursor0..cursor4 at 1:1..1:5 (slowest 1:1)."""
    container = SortedListCursorContainer()
    for i, name in enumerate(NAMES):
        container.add(name, POSITIONS[i + 1])
    assert len(container) == 5
    assert container.slowest_position() == POSITIONS[1]
    return container


def _untrack(container: SortedListCursorContainer, name: str, use_add: bool) -> None:
    if use_add:
        container.add(name, None)
    else:
        container.update(name, None)


def _moves_in_place(container: SortedListCursorContainer) -> None:
    """Two cursors re-reported at their own positions (upstream's trigger for a rebuild)."""
    container.update("cursor0", POSITIONS[1])
    container.update("cursor4", POSITIONS[5])


def _flush(container: SortedListCursorContainer, rebuild: bool) -> None:
    if rebuild:
        _moves_in_place(container)
    assert container.slowest_position() == POSITIONS[1]


def _assert_untracked(container: SortedListCursorContainer, name: str) -> None:
    assert container.count_at_or_before(name) == 0
    assert len(container) == 5 and name in container


@pytest.mark.parametrize("use_add", [False, True], ids=["update", "add"])
@pytest.mark.parametrize("rebuild", [False, True], ids=["incremental", "rebuild"])
@reexpresses(UPSTREAM, "testFlushedUntrackingRemainsUntracked")
def test_an_untracked_cursor_stays_untracked(rebuild: bool, use_add: bool) -> None:
    """cursor2 is given a null position (by a move or by adding it again); after a query, and after
    further in-place moves of two others, it still ranks 0 and is still known, and cursor4 ranks 4
    (cursor0, 1, 3 and 4 are tracked)."""
    container = _five()
    _untrack(container, "cursor2", use_add)
    _flush(container, rebuild)
    _assert_untracked(container, "cursor2")
    _moves_in_place(container)
    _assert_untracked(container, "cursor2")
    assert container.count_at_or_before("cursor4") == 4
    container._check()


@pytest.mark.parametrize("use_add", [False, True], ids=["update", "add"])
@pytest.mark.parametrize("forward", [False, True], ids=["behind", "ahead"])
@pytest.mark.parametrize("rebuild", [False, True], ids=["incremental", "rebuild"])
@reexpresses(UPSTREAM, "testRetrackAfterFlush")
def test_an_untracked_cursor_is_tracked_again(rebuild: bool, forward: bool, use_add: bool) -> None:
    """cursor2 is untracked, then given a position again (by a move or by adding it): ahead of all
    (1:6) it ranks 5 and the slowest stays 1:1; behind all (1:0) it ranks 1 and is the slowest.
    Every other cursor ranks as it would without cursor2, plus one when cursor2 is behind it."""
    container = _five()
    _untrack(container, "cursor2", use_add=False)
    _flush(container, rebuild)
    restored = POSITIONS[6] if forward else POSITIONS[0]
    if use_add:
        container.add("cursor2", restored)
    else:
        container.update("cursor2", restored)
    assert container.count_at_or_before("cursor2") == (5 if forward else 1)
    assert container.slowest_position() == (POSITIONS[1] if forward else restored)
    for i, name in enumerate(NAMES):
        if i != 2:
            without = i + 1 if i < 2 else i
            assert container.count_at_or_before(name) == without + (0 if forward else 1), name
    container._check()


@reexpresses(UPSTREAM, "testRepeatedUntrackingAfterFlush")
def test_untracking_twice() -> None:
    """cursor2 is given a null position, the slowest is queried, and it is given null again: the
    slowest is still 1:1 and cursor2 is known but untracked."""
    container = _five()
    container.update("cursor2", None)
    container.slowest_position()
    container.update("cursor2", None)
    assert container.slowest_position() == POSITIONS[1]
    _assert_untracked(container, "cursor2")
    container._check()


@reexpresses(UPSTREAM, "testUntrackingBeforeFirstPositionFlush")
def test_a_cursor_added_untracked_and_untracked_again() -> None:
    """A second container holds cursor0..cursor3 at 1:1..1:4; cursor4 is added with a null position
    and given null again: it ranks 0, the slowest is 1:1, and cursor3 ranks 4."""
    container = SortedListCursorContainer()
    for i in range(4):
        container.add(NAMES[i], POSITIONS[i + 1])
    container.slowest_position()
    container.add("cursor4", None)
    container.update("cursor4", None)
    assert container.slowest_position() == POSITIONS[1]
    assert container.count_at_or_before("cursor4") == 0
    assert container.count_at_or_before("cursor3") == 4
    container._check()
