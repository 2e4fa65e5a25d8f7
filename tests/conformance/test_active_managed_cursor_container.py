"""The PIP-430 cursor container answers, for any cursor, how many tracked cursors are at its
position or before it, through shuffled adds, shared positions and random seeks."""

from __future__ import annotations

import bisect
import random

from _conformance import UpstreamClass, reexpresses

from brokerlab.protocols import Position
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

UPSTREAM = UpstreamClass(
    name="ActiveManagedCursorContainerTest",
    area="Cursor containers",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/ActiveManagedCursorContainerTest.java",
    commit="63ce0441854c4d36a663a989ef57747412a1edc6",
    methods=(
        "testAddingInReverseOrder",
        "testAddingMultipleWithSamePosition",
        "testCountNumberOfCursorsAtSamePositionOrBefore",
        "testCountNumberOfCursorsAtSamePositionOrBefore_SamePosition",
        "testRandomSeekingForward",
        "testRandomSeeking",
    ),
    note="Upstream runs each method on the linked-list `ActiveManagedCursorContainerImpl` and on"
    " the test-only `NavigableSetImpl`; brokerlab's counterpart of both is the `sorted-list`"
    " container (the `heap` has no rank query). Where upstream checks the container's internal"
    " state after every seek, these tests compare the rank with a plain sorted-list model after"
    " every seek and check the internal state periodically.",
)

LONG_MAX = 2**63 - 1


def _added(positions: dict[int, Position], seed: int) -> SortedListCursorContainer:
    """cursor<i> at ``positions[i]``, added in a shuffled order."""
    container = SortedListCursorContainer()
    order = list(positions)
    random.Random(seed).shuffle(order)
    for i in order:
        container.add(f"cursor{i}", positions[i])
    return container


def _ranks(container: SortedListCursorContainer, n: int) -> list[int]:
    return [container.count_at_or_before(f"cursor{i}") for i in range(1, n + 1)]


@reexpresses(UPSTREAM, "testAddingInReverseOrder")
def test_cursors_added_in_reverse_position_order() -> None:
    """cursor3, cursor2, cursor1 at 0:3, 0:2, 0:1 are added in that order: cursor i ranks i."""
    container = SortedListCursorContainer()
    for i in (3, 2, 1):
        container.add(f"cursor{i}", (0, i))
    assert _ranks(container, 3) == [1, 2, 3]


@reexpresses(UPSTREAM, "testAddingMultipleWithSamePosition")
def test_pairs_of_cursors_share_positions() -> None:
    """A thousand cursors, cursor i at 0:(i // 2), so that positions are shared in pairs except at
    both ends: a cursor ranks every cursor of its pair (i + 1 for an even i from 2 to 998, i for
    an odd i and for the lone cursors 1 and 1000)."""
    container = _added({i: (0, i // 2) for i in range(1, 1001)}, seed=20)
    expected = [i + 1 if i % 2 == 0 and 2 <= i <= 998 else i for i in range(1, 1001)]
    assert _ranks(container, 1000) == expected


@reexpresses(UPSTREAM, "testCountNumberOfCursorsAtSamePositionOrBefore")
def test_one_cursor_seeks_past_all_others() -> None:
    """A thousand cursors at distinct positions 0:1..0:1000 rank 1..1000; cursor500 then seeks to
    0:1001: it ranks 1000, the cursors behind it keep their rank, those ahead lose one."""
    container = _added({i: (0, i) for i in range(1, 1001)}, seed=21)
    assert _ranks(container, 1000) == list(range(1, 1001))
    container.update("cursor500", (0, 1001))
    assert container.count_at_or_before("cursor500") == 1000
    ranks = _ranks(container, 1000)
    assert ranks[:499] == list(range(1, 500))
    assert ranks[500:] == list(range(500, 1000))


@reexpresses(UPSTREAM, "testCountNumberOfCursorsAtSamePositionOrBefore_SamePosition")
def test_a_large_group_at_one_position() -> None:
    """cursor1 at 0:1, cursor2 at 0:2, cursors 3..998 all at 0:3, then 0:4 and 0:5: any member of
    the large group ranks 998."""
    container = SortedListCursorContainer()
    container.add("cursor1", (0, 1))
    container.add("cursor2", (0, 2))
    for i in range(3, 999):
        container.add(f"cursor{i}", (0, 3))
    container.add("cursor999", (0, 4))
    container.add("cursor1000", (0, 5))
    assert container.count_at_or_before("cursor4") == 998


class _Seeker:
    """The container under test beside a plain sorted list of the tracked positions."""

    def __init__(self, positions: dict[int, Position], seed: int) -> None:
        self.container = _added(positions, seed)
        self.where = {f"cursor{i}": position for i, position in positions.items()}
        self.model = sorted(positions.values())
        self.steps = 0

    def seek(self, name: str, position: Position) -> None:
        old = self.where[name]
        self.container.update(name, position)
        self.where[name] = position
        del self.model[bisect.bisect_left(self.model, old)]
        bisect.insort(self.model, position)
        assert self.container.slowest_position() == self.model[0]
        assert self.container.count_at_or_before(name) == bisect.bisect_right(self.model, position)
        self.steps += 1
        if self.steps % 2000 == 0:
            self.container._check()


@reexpresses(UPSTREAM, "testRandomSeekingForward")
def test_random_forward_seeks_then_back_to_the_start() -> None:
    """Ten thousand seeks, each moving a random cursor 1 to 99 entries forward; every rank matches
    the model. Once all cursors are back at 0:i, cursor i ranks i again."""
    seeker = _Seeker({i: (0, i) for i in range(1, 1001)}, seed=22)
    rng = random.Random(1)
    for _ in range(10_000):
        name = f"cursor{rng.randint(1, 999)}"
        ledger, entry = seeker.where[name]
        seeker.seek(name, (ledger, entry + rng.randint(1, 99)))
    for i in range(1, 1001):
        seeker.seek(f"cursor{i}", (0, i))
    seeker.container._check()
    assert _ranks(seeker.container, 1000) == list(range(1, 1001))


@reexpresses(UPSTREAM, "testRandomSeeking")
def test_random_seeks_both_ways_extremes_and_crowding() -> None:
    """Cursors start at 1:1..1:1000 and seek back and forth (at most 25 entries back, never before
    entry 1); then random cursors visit 0:1 and 2:Long.MAX and return; then every cursor crowds
    into 0:1..0:9, a hundred times over. Ranks match the model throughout, and once every cursor
    is at 0:i again, cursor i ranks i."""
    seeker = _Seeker({i: (1, i) for i in range(1, 1001)}, seed=23)
    rng = random.Random(1)
    for _ in range(10_000):
        name = f"cursor{rng.randint(1, 999)}"
        ledger, entry = seeker.where[name]
        seeker.seek(name, (ledger, max(entry + rng.randint(1, 99) - 25, 1)))
    for _ in range(10_000):
        name = f"cursor{rng.randint(1, 999)}"
        original = seeker.where[name]
        seeker.seek(name, (0, 1))
        seeker.seek(name, (2, LONG_MAX))
        seeker.seek(name, original)
    for _ in range(100):
        for i in range(1, 1001):
            seeker.seek(f"cursor{i}", (0, rng.randint(1, 9)))
    for i in range(1, 1001):
        seeker.seek(f"cursor{i}", (0, i))
    seeker.container._check()
    assert _ranks(seeker.container, 1000) == list(range(1, 1001))
