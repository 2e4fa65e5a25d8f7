"""The legacy cursor container keeps the slowest position of the cursors it tracks, whatever order
they are added, moved and removed in."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from _conformance import UpstreamClass, reexpresses

from brokerlab.protocols import Position
from brokerlab_plugins.cursor_containers.heap import HeapCursorContainer
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

UPSTREAM = UpstreamClass(
    name="ManagedCursorContainerTest",
    area="Cursor containers",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/ManagedCursorContainerTest.java",
    commit="bbdb4aa3ee0437c02d08615bf5d879befe382161",
    methods=(
        "testSlowestReadPositionForActiveCursors",
        "simple",
        "updatingCursorOutsideContainer",
        "removingCursor",
        "ordering",
        "orderingWithUpdates",
        "orderingWithUpdatesAndReset",
        "testDataVersion",
        "testVersions",
        "testSlowestReader",
    ),
    not_applicable={
        "testDataVersion": "arithmetic of the container's wrapping data-version counter;"
        " brokerlab's containers keep no version (the legacy cache compares the slowest"
        " position itself)",
        "testVersions": "the data version bumped on every add, move and removal; brokerlab's"
        " containers keep no version (the legacy cache compares the slowest position itself)",
    },
    line="4.0",
    note="The `heap` container re-expresses Pulsar's `ManagedCursorContainer` (the 4.0 class,"
    " before PIP-430 split it into an interface and `ManagedCursorContainerImpl`); the PIP-430"
    " `sorted-list` container is held to the same slowest-position contract, so every test runs on"
    " both. The containers name cursors and report positions only: the cursor objects, their"
    " durability flag, `toString` and the iteration order the upstream tests also check have no"
    " counterpart, and those assertions are left out.",
)

Container = HeapCursorContainer | SortedListCursorContainer
CONTAINERS = pytest.mark.parametrize(
    "factory", [HeapCursorContainer, SortedListCursorContainer], ids=["heap", "sorted-list"]
)


def _filled(factory: Callable[[], Container], cursors: dict[str, Position]) -> Container:
    container = factory()
    for name, position in cursors.items():
        container.add(name, position)
    return container


@CONTAINERS
@reexpresses(UPSTREAM, "testSlowestReadPositionForActiveCursors")
def test_slowest_read_position_follows_moves_and_removals(
    factory: Callable[[], Container],
) -> None:
    """Two cursors tracked by read position: the slowest follows the one behind, whichever moves,
    and the survivor's position once the other is removed (empty container: no position)."""
    container = factory()
    assert container.slowest_position() is None
    container.add("test1", (5, 5))
    assert container.slowest_position() == (5, 5)
    container.add("test2", (1, 1))
    assert container.slowest_position() == (1, 1)
    container.update("test2", (5, 6))
    assert container.slowest_position() == (5, 5)
    container.update("test1", (5, 8))
    assert container.slowest_position() == (5, 6)
    container.remove("test2")
    assert container.slowest_position() == (5, 8)


@CONTAINERS
@reexpresses(UPSTREAM, "simple")
def test_slowest_through_adds_moves_and_removals(factory: Callable[[], Container]) -> None:
    """Five cursors added out of order, two moved forward, all removed one by one: the slowest is
    always the least tracked position; emptied, the container reports none and takes new cursors."""
    container = factory()
    assert container.slowest_position() is None
    for name, position, slowest in [
        ("test1", (5, 5), (5, 5)),
        ("test2", (2, 2), (2, 2)),
        ("test3", (2, 0), (2, 0)),
        ("test4", (4, 0), (2, 0)),
        ("test5", (3, 5), (2, 0)),
    ]:
        container.add(name, position)
        assert container.slowest_position() == slowest
    container.update("test3", (3, 0))
    assert container.slowest_position() == (2, 2)
    container.update("test2", (10, 5))
    assert container.slowest_position() == (3, 0)
    container.remove("test3")
    assert container.slowest_position() == (3, 5)
    for name in ("test2", "test5", "test1"):
        container.remove(name)
    assert container.slowest_position() == (4, 0)
    assert len(container) == 1
    container.remove("test4")
    assert container.slowest_position() is None and len(container) == 0
    container.add("test6", (6, 5))
    assert container.slowest_position() == (6, 5)
    assert len(container) == 1 and "test6" in container


@CONTAINERS
@reexpresses(UPSTREAM, "updatingCursorOutsideContainer")
def test_a_move_the_container_is_not_told_of_changes_nothing(
    factory: Callable[[], Container],
) -> None:
    """A cursor that moves without the container being told keeps its old place: the slowest
    changes only once the move is reported."""
    where: dict[str, Position] = {"test1": (5, 5), "test2": (2, 2)}
    container = _filled(factory, where)
    assert container.slowest_position() == (2, 2)
    where["test2"] = (8, 8)
    assert container.slowest_position() == (2, 2)
    container.update("test2", where["test2"])
    assert container.slowest_position() == (5, 5)


@CONTAINERS
@reexpresses(UPSTREAM, "removingCursor")
def test_removing_the_middle_cursor(factory: Callable[[], Container]) -> None:
    """Removing a cursor forgets it (a later lookup misses) and leaves the others' slowest."""
    container = _filled(factory, {"test1": (5, 5), "test2": (2, 2), "test3": (1, 1)})
    assert container.slowest_position() == (1, 1)
    assert all(name in container for name in ("test1", "test2", "test3"))
    container.remove("test2")
    assert "test2" not in container and len(container) == 2
    assert container.slowest_position() == (1, 1)
    container.remove("test3")
    assert len(container) == 1 and "test1" in container
    assert container.slowest_position() == (5, 5)


@CONTAINERS
@reexpresses(UPSTREAM, "ordering")
def test_removals_in_position_order(factory: Callable[[], Container]) -> None:
    """Five cursors across three ledgers; removing the slowest each time exposes the next one."""
    container = _filled(
        factory,
        {"test1": (5, 5), "test2": (5, 1), "test3": (7, 1), "test4": (6, 4), "test5": (7, 0)},
    )
    for removed, slowest in [
        ("test2", (5, 5)),
        ("test1", (6, 4)),
        ("test4", (7, 0)),
        ("test5", (7, 1)),
        ("test3", None),
    ]:
        assert container.slowest_position() is not None
        container.remove(removed)
        assert container.slowest_position() == slowest
    assert len(container) == 0


def _five(factory: Callable[[], Container]) -> Container:
    container = _filled(
        factory,
        {"test1": (5, 5), "test2": (5, 1), "test3": (7, 1), "test4": (6, 4), "test5": (7, 0)},
    )
    assert container.slowest_position() == (5, 1)
    return container


@CONTAINERS
@reexpresses(UPSTREAM, "orderingWithUpdates")
def test_forward_moves_then_removals(factory: Callable[[], Container]) -> None:
    """The five cursors of the ordering scenario move forward one at a time (cursors passing each
    other, two landing on the same position), then leave: the slowest is right at every step."""
    container = _five(factory)
    for name, position, slowest in [
        ("test1", (5, 8), (5, 1)),
        ("test2", (5, 6), (5, 6)),
        ("test1", (6, 8), (5, 6)),
        ("test3", (8, 5), (5, 6)),
        ("test1", (8, 4), (5, 6)),
        ("test2", (8, 4), (6, 4)),
        ("test4", (7, 1), (7, 0)),
    ]:
        container.update(name, position)
        assert container.slowest_position() == slowest, (name, position)
    for removed, slowest in [
        ("test5", (7, 1)),
        ("test4", (8, 4)),
        ("test1", (8, 4)),
        ("test2", (8, 5)),
        ("test3", None),
    ]:
        container.remove(removed)
        assert container.slowest_position() == slowest, removed


@CONTAINERS
@reexpresses(UPSTREAM, "orderingWithUpdatesAndReset")
def test_moves_including_a_reset_backwards(factory: Callable[[], Container]) -> None:
    """As above, but one cursor is reset behind everyone (to 4:4) and becomes the slowest until it
    is removed."""
    container = _five(factory)
    for name, position, slowest in [
        ("test1", (5, 8), (5, 1)),
        ("test1", (5, 6), (5, 1)),
        ("test2", (6, 8), (5, 6)),
        ("test3", (8, 5), (5, 6)),
        ("test1", (8, 4), (6, 4)),
        ("test2", (4, 4), (4, 4)),
        ("test4", (7, 1), (4, 4)),
    ]:
        container.update(name, position)
        assert container.slowest_position() == slowest, (name, position)
    for removed, slowest in [
        ("test2", (7, 0)),
        ("test5", (7, 1)),
        ("test1", (7, 1)),
        ("test4", (8, 5)),
        ("test3", None),
    ]:
        container.remove(removed)
        assert container.slowest_position() == slowest, removed


@CONTAINERS
@reexpresses(UPSTREAM, "testSlowestReader")
def test_slowest_of_a_hundred_shuffled_cursors(factory: Callable[[], Container]) -> None:
    """A hundred cursors at 0:1..0:100 added in a random order, a hundred times: the slowest is
    always 0:1 (the position of cursor1)."""
    rng = random.Random(100)
    for _ in range(100):
        names = [f"cursor{i}" for i in range(1, 101)]
        rng.shuffle(names)
        container = factory()
        for name in names:
            container.add(name, (0, int(name.removeprefix("cursor"))))
        assert container.slowest_position() == (0, 1)
