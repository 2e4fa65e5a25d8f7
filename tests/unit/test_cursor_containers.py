"""Cursor containers against plain reference models (spec §0.4, §4).

Scenarios 19-26 (the upstream container tests) are re-expressed in ``tests/conformance``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import settings

from brokerlab.protocols import CursorContainer, RankedCursorContainer
from brokerlab.testing.cursor_containers import CursorContainerMachine
from brokerlab_plugins.cursor_containers.heap import HeapCursorContainer
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

Container = HeapCursorContainer | SortedListCursorContainer
BOTH: list[Callable[[], Container]] = [HeapCursorContainer, SortedListCursorContainer]


# -- property-based: random add / update / remove against a dict --------------------------------
# The machine is the contract kit's (brokerlab.testing); here it also checks each structure's own
# internal invariants.


class HeapMachine(CursorContainerMachine):
    def __init__(self) -> None:
        super().__init__(HeapCursorContainer)

    def check_container(self) -> None:
        assert isinstance(self.container, HeapCursorContainer)
        self.container._check()


class SortedListMachine(CursorContainerMachine):
    def __init__(self) -> None:
        super().__init__(SortedListCursorContainer)

    def check_container(self) -> None:
        assert isinstance(self.container, SortedListCursorContainer)
        self.container._check()


_FAST = settings(max_examples=200, stateful_step_count=40, deadline=None)
TestHeapMachine = _FAST(HeapMachine).TestCase
TestSortedListMachine = _FAST(SortedListMachine).TestCase


# -- protocol and edge cases --------------------------------------------------------------------


def test_protocols() -> None:
    assert isinstance(SortedListCursorContainer(), RankedCursorContainer)
    assert not isinstance(HeapCursorContainer(), RankedCursorContainer)
    containers: list[CursorContainer] = [HeapCursorContainer(), SortedListCursorContainer()]
    assert all(len(c) == 0 for c in containers)


@pytest.mark.parametrize("factory", BOTH)
def test_untracked_and_unknown(factory: Callable[[], Container]) -> None:
    c = factory()
    c.add("idle", None)
    assert len(c) == 1 and "idle" in c and c.slowest_position() is None
    c.update("ghost", (0, 1))  # unknown: ignored, not added
    c.remove("ghost")
    assert "ghost" not in c and len(c) == 1
    c.update("idle", (0, 7))
    assert c.slowest_position() == (0, 7)
    c.add("idle", None)  # adding a known cursor moves it
    assert len(c) == 1 and c.slowest_position() is None
    if isinstance(c, SortedListCursorContainer):
        assert c.count_at_or_before("idle") == 0 and c.count_at_or_before("ghost") == 0


# -- regressions for the known defects the spec tells us not to copy ----------------------------


def test_tail_moved_in_place_leaves_its_shared_group() -> None:
    """§4.1: the tail shares a group with earlier nodes and moves forward without reordering."""
    c = SortedListCursorContainer()
    c.add("a", (0, 1))
    c.add("b", (0, 1))
    c.add("tail", (0, 1))
    c.update("tail", (0, 2))
    assert [c.count_at_or_before(n) for n in ("a", "b", "tail")] == [2, 2, 3]
    c.add("last", (0, 2))  # joins the tail's group and becomes the new tail
    c.update("last", (0, 5))
    assert [c.count_at_or_before(n) for n in ("a", "b", "tail", "last")] == [2, 2, 3, 4]
    c._check()


def test_heap_removal_sifts_up_when_needed() -> None:
    """§0.4/§4.3: the item moved into a vacated slot can be smaller than the slot's parent."""
    c = HeapCursorContainer()
    for x in (1, 10, 2, 11, 12, 3, 4):
        c.add(f"c{x}", (0, x))
    # Precondition: the array is [1, 10, 2, 11, 12, 3, 4], so 11 sits under 10 and 4 is last.
    assert [p[1] for p, _ in c._heap] == [1, 10, 2, 11, 12, 3, 4]
    c.remove("c11")  # 4 moves into 11's slot, under 10: it must rise above 10
    c._check()
    for x in (1, 2, 3):  # with a down-only removal, 4 stays hidden under 10 and 10 is reported
        c.update(f"c{x}", (0, 100))
        c._check()
    assert c.slowest_position() == (0, 4)
