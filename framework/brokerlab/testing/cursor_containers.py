"""Contract for active-cursor containers: every query equals a brute-force answer over a dict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from brokerlab.host import PluginHost
from brokerlab.protocols import CursorContainer, Position, RankedCursorContainer
from brokerlab.records import CursorContainerRecord
from brokerlab.testing._common import Simulate, check_simulation, examples, run_machine

__all__ = ["CursorContainerContract", "CursorContainerMachine", "brute_rank"]

NAMES = ("a", "b", "c", "d", "e", "f", "g", "h")
# A tiny position space, so that shared positions and moves in place are frequent.
POSITIONS = st.none() | st.tuples(st.integers(0, 1), st.integers(0, 4))


def brute_rank(model: Mapping[str, Position | None], cursor: str) -> int:
    """|{tracked d : pos(d) <= pos(cursor)}|, counting ``cursor``; 0 when it is not tracked."""
    mine = model.get(cursor)
    if mine is None:
        return 0
    return sum(1 for p in model.values() if p is not None and p <= mine)


class CursorContainerMachine(RuleBasedStateMachine):
    """Random ``add``/``update``/``remove`` against a dict of cursor -> position.

    After every step: ``slowest_position``, ``len``, ``tracked_count`` and ``in`` match the dict,
    and a :class:`~brokerlab.protocols.RankedCursorContainer` answers ``count_at_or_before`` as
    :func:`brute_rank` does for every name (known or not). Override :meth:`check_container` to add
    an implementation's own consistency check.
    """

    def __init__(self, factory: Callable[[], CursorContainer]) -> None:
        super().__init__()
        self.container = factory()
        self.model: dict[str, Position | None] = {}

    def check_container(self) -> None:
        """Extra checks of one implementation (its internal invariants); none by default."""

    @rule(cursor=st.sampled_from(NAMES), position=POSITIONS)
    def add(self, cursor: str, position: Position | None) -> None:
        self.container.add(cursor, position)
        self.model[cursor] = position

    @rule(cursor=st.sampled_from(NAMES), position=POSITIONS)
    def update(self, cursor: str, position: Position | None) -> None:
        self.container.update(cursor, position)
        if cursor in self.model:  # moving an unknown cursor must not make it known
            self.model[cursor] = position

    @rule(cursor=st.sampled_from(NAMES))
    def remove(self, cursor: str) -> None:
        self.container.remove(cursor)
        self.model.pop(cursor, None)

    @invariant()
    def matches_model(self) -> None:
        self.check_container()
        tracked = [p for p in self.model.values() if p is not None]
        assert self.container.slowest_position() == (min(tracked) if tracked else None)
        assert len(self.container) == len(self.model)
        assert self.container.tracked_count() == len(tracked)
        for name in (*NAMES, "unknown"):
            assert (name in self.container) == (name in self.model), name
        if isinstance(self.container, RankedCursorContainer):
            for name in (*NAMES, "unknown"):
                got = self.container.count_at_or_before(name)
                assert got == brute_rank(self.model, name), f"rank of {name}: {got}"


class CursorContainerContract:
    """What every active-cursor container must do. Subclass it and name your record::

        class TestMyContainer(CursorContainerContract):
            @pytest.fixture
            def cursor_container(self) -> str:
                return "my-container"

    A container that satisfies :class:`~brokerlab.protocols.RankedCursorContainer` has its rank
    query checked too.
    """

    examples: ClassVar[int] = 100

    @pytest.fixture
    def cursor_container(self) -> str:
        """The name of the cursor-container record under test (override this fixture)."""
        pytest.fail("override the 'cursor_container' fixture to name the record under test")

    def test_a_new_container_is_empty(
        self, brokerlab_host: PluginHost, cursor_container: str
    ) -> None:
        """The factory returns a container that knows no cursor."""
        record: CursorContainerRecord = brokerlab_host.select(
            "cursor_container", cursor_container
        ).record
        container = record.factory()
        assert len(container) == 0 and container.tracked_count() == 0
        assert container.slowest_position() is None and "a" not in container

    def test_queries_equal_brute_force(
        self, brokerlab_host: PluginHost, cursor_container: str
    ) -> None:
        """Slowest position, counts, membership and the rank query over random moves."""
        record: CursorContainerRecord = brokerlab_host.select(
            "cursor_container", cursor_container
        ).record
        run_machine(
            lambda: CursorContainerMachine(record.factory),
            examples(self.examples, stateful_step_count=40),
        )

    def test_runs_deterministically_in_a_simulation(
        self, simulate: Simulate, cursor_container: str
    ) -> None:
        """The broker runs with this container: same seed, same result; no invariant broken."""
        check_simulation(simulate, {"sim.cursorContainer": cursor_container})
