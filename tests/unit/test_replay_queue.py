"""The dispatcher's replay queue against a plain reference model (a dict of what is queued)."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from brokerlab.broker.replay import ReplayQueue
from brokerlab.protocols import Position

positions = st.tuples(st.integers(1, 3), st.integers(0, 12))
keys = st.integers(-1, 4)
owners = st.sampled_from(["a", "b", None])


class ReplayQueueMachine(RuleBasedStateMachine):
    """Each queued position with its key, owner and whether it was ever a redelivery."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: ReplayQueue[str] = ReplayQueue()
        self.model: dict[Position, tuple[int, str | None, bool]] = {}

    @rule(position=positions, key=keys, owner=owners, redelivery=st.booleans())
    def add(self, position: Position, key: int, owner: str | None, redelivery: bool) -> None:
        added = self.queue.add(position, key, owner, redelivery=redelivery)
        assert added == (position not in self.model)
        if added:
            self.model[position] = (key, owner, redelivery)
        elif redelivery:  # queued already: only the redelivery mark can change
            old_key, old_owner, _ = self.model[position]
            self.model[position] = (old_key, old_owner, True)

    @rule(position=positions)
    def discard(self, position: Position) -> None:
        entry = self.model.pop(position, None)
        assert self.queue.discard(position) == (entry is not None and entry[2])

    @rule(limit=st.integers(1, 20))
    def first(self, limit: int) -> None:
        assert self.queue.first(limit) == sorted(self.model)[:limit]

    @rule(
        caps=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 5)),
        limit=st.integers(1, 20),
    )
    def first_owned_by(self, caps: dict[str, int], limit: int) -> None:
        expected: list[Position] = []
        for owner, cap in caps.items():
            expected += sorted(p for p, (_, o, _) in self.model.items() if o == owner)[:cap]
        assert self.queue.first_owned_by(caps.items(), limit) == sorted(expected)[:limit]

    @rule()
    def reassign(self) -> None:
        def owner_of_key(key: int) -> str | None:
            return None if key < 0 else "ab"[key % 2]

        self.queue.reassign(owner_of_key)
        self.model = {p: (k, owner_of_key(k), r) for p, (k, _, r) in self.model.items()}

    @rule()
    def clear(self) -> None:
        self.queue.clear()
        self.model.clear()

    @invariant()
    def agrees(self) -> None:
        queue, model = self.queue, self.model
        assert len(queue) == queue.size == len(model)
        assert bool(queue) == bool(model)
        assert list(queue) == sorted(model)
        assert queue.redeliveries() == sorted(p for p, (_, _, r) in model.items() if r)
        for key in range(-1, 5):
            assert queue.has_key(key) == any(k == key for k, _, _ in model.values())
        for position in model:
            assert position in queue


TestReplayQueue = ReplayQueueMachine.TestCase
TestReplayQueue.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
