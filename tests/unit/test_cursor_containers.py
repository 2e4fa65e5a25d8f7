"""Cursor containers against plain reference models (spec §0.4, §4, scenarios 19-26)."""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable

import pytest
from hypothesis import settings

from brokerlab.protocols import CursorContainer, Position, RankedCursorContainer
from brokerlab.testing.cursor_containers import CursorContainerMachine
from brokerlab_plugins.cursor_containers.heap import HeapCursorContainer
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

Container = HeapCursorContainer | SortedListCursorContainer
BOTH: list[Callable[[], Container]] = [HeapCursorContainer, SortedListCursorContainer]
LONG_MAX = 2**63 - 1


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


# -- spec §7: ActiveManagedCursorContainerTest (rank query) -------------------------------------


def _ranked(positions: dict[int, Position], seed: int = 0) -> SortedListCursorContainer:
    c = SortedListCursorContainer()
    order = list(positions)
    random.Random(seed).shuffle(order)
    for i in order:
        c.add(f"cursor{i}", positions[i])
    return c


def test_scenario_19_reverse_insertion() -> None:
    c = SortedListCursorContainer()
    for i in (3, 2, 1):
        c.add(f"cursor{i}", (0, i))
    assert [c.count_at_or_before(f"cursor{i}") for i in (1, 2, 3)] == [1, 2, 3]


def test_scenario_20_shared_positions() -> None:
    c = _ranked({i: (0, i // 2) for i in range(1, 1001)})
    for i in range(1, 1001):
        expected = i + 1 if i % 2 == 0 and 2 <= i <= 998 else i
        assert c.count_at_or_before(f"cursor{i}") == expected, i


def test_scenario_21_seek_forward() -> None:
    c = _ranked({i: (0, i) for i in range(1, 1001)})
    assert all(c.count_at_or_before(f"cursor{i}") == i for i in range(1, 1001))
    c.update("cursor500", (0, 1001))
    assert c.count_at_or_before("cursor500") == 1000
    for i in range(1, 1001):
        if i != 500:
            assert c.count_at_or_before(f"cursor{i}") == (i if i < 500 else i - 1), i


def test_scenario_22_one_large_group() -> None:
    positions = {1: (0, 1), 2: (0, 2), 999: (0, 4), 1000: (0, 5)}
    positions |= {i: (0, 3) for i in range(3, 999)}
    c = _ranked(positions)
    assert c.count_at_or_before("cursor4") == 998
    assert c.count_at_or_before("cursor999") == 999


@pytest.mark.parametrize("factory", BOTH)
def test_scenario_23_random_seeks(factory: Callable[[], Container]) -> None:
    rng = random.Random(23)
    n = 1000
    c = factory()
    where: dict[str, Position] = {}
    ref: list[Position] = []  # sorted positions: the plain sorted-list reference model
    for i in rng.sample(range(1, n + 1), n):
        where[f"cursor{i}"] = (0, i)
        c.add(f"cursor{i}", (0, i))
        bisect.insort(ref, (0, i))
    names = list(where)
    for step in range(10_000):
        name = rng.choice(names)
        kind = rng.random()
        old = where[name]
        if kind < 0.45:
            new = (old[0], old[1] + rng.randint(1, 99))  # forward seek
        elif kind < 0.9:
            new = (0, max(1, old[1] + rng.randint(-200, 200)))  # back and forth
        else:
            new = rng.choice([(0, 1), (2, LONG_MAX)])
        c.update(name, new)
        where[name] = new
        ref.pop(bisect.bisect_left(ref, old))
        bisect.insort(ref, new)
        assert c.slowest_position() == ref[0]
        if isinstance(c, SortedListCursorContainer):
            for probe in (name, rng.choice(names)):
                assert c.count_at_or_before(probe) == bisect.bisect_right(ref, where[probe])
        if step % 2_500 == 0:
            c._check()
    for name in names:
        c.update(name, (0, int(name.removeprefix("cursor"))))
    c._check()
    assert c.slowest_position() == (0, 1)
    if isinstance(c, SortedListCursorContainer):
        assert all(c.count_at_or_before(f"cursor{i}") == i for i in range(1, n + 1))


# -- spec §7: ManagedCursorContainerTest (slowest), run on both containers ----------------------


@pytest.mark.parametrize("factory", BOTH)
def test_scenario_24_simple(factory: Callable[[], Container]) -> None:
    c = factory()
    c.add("c1", (5, 5))
    assert c.slowest_position() == (5, 5)
    c.add("c2", (2, 2))
    assert c.slowest_position() == (2, 2)
    c.add("c3", (2, 0))
    assert c.slowest_position() == (2, 0)
    c.add("c4", (4, 0))
    c.add("c5", (3, 5))
    assert c.slowest_position() == (2, 0)
    c.update("c3", (3, 0))
    assert c.slowest_position() == (2, 2)
    c.update("c2", (10, 5))
    assert c.slowest_position() == (3, 0)
    c.remove("c3")
    assert c.slowest_position() == (3, 5)
    for name in ("c2", "c5", "c1"):
        c.remove(name)
    assert c.slowest_position() == (4, 0)
    c.remove("c4")
    assert c.slowest_position() is None and len(c) == 0


@pytest.mark.parametrize("factory", BOTH)
def test_scenario_25_updating_outside_the_container(factory: Callable[[], Container]) -> None:
    where: dict[str, Position] = {"a": (5, 5), "b": (2, 2)}
    c = factory()
    for name, position in where.items():
        c.add(name, position)
    where["b"] = (8, 8)  # the cursor moves, the container is not told
    assert c.slowest_position() == (2, 2)
    c.update("b", where["b"])
    assert c.slowest_position() == (5, 5)


@pytest.mark.parametrize("factory", BOTH)
def test_scenario_26_ordering(factory: Callable[[], Container]) -> None:
    c = factory()
    for name, position in [
        ("test1", (5, 5)),
        ("test2", (5, 1)),
        ("test3", (7, 1)),
        ("test4", (6, 4)),
        ("test5", (7, 0)),
    ]:
        c.add(name, position)
    assert c.slowest_position() == (5, 1)
    c.remove("test2")
    assert c.slowest_position() == (5, 5)
    c.remove("test1")
    assert c.slowest_position() == (6, 4)
    c.remove("test4")
    assert c.slowest_position() == (7, 0)


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
