"""A persister with no limits: the whole ack state, on Pulsar's cadence, never truncated.

It is the honest upper bound the limited persisters are compared with: after a restart only the
acknowledgements made since the last write (the unpersisted window) are redelivered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerlab.protocols import AckState, Clock, PersistOutcome, RecoveredAckState
from brokerlab_plugins.ack_state.cadence import MarkDeleteRateLimiter
from brokerlab_plugins.ack_state.wire_size import position_info_bytes

__all__ = ["UnlimitedPersister"]


class UnlimitedPersister:
    """Writes the complete state (MessageRange form) whenever the cadence allows."""

    def __init__(self, clock: Clock, mark_delete_rate: float) -> None:
        self._clock = clock
        self._limiter = MarkDeleteRateLimiter(mark_delete_rate, clock.now_ns())
        self._durable = RecoveredAckState(mark_delete=(-1, -1))
        self._dirty = False

    def _persist(self, state: AckState) -> PersistOutcome:
        ranges = tuple(state.acked_ranges())
        batch = dict(state.batch_acks())
        self._durable = RecoveredAckState(state.mark_delete, ranges, batch)
        self._dirty = False
        size = position_info_bytes(state.mark_delete, ranges, batch)
        return PersistOutcome(bytes_written=size, ranges_persisted=len(ranges))

    def created(self, state: AckState) -> PersistOutcome | None:
        return self._persist(state)

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        if self._limiter.try_acquire(self._clock.now_ns()):
            return self._persist(state)
        self._dirty = True
        return None

    def flush(self, state: AckState) -> PersistOutcome | None:
        return self._persist(state) if self._dirty else None

    def close(self, state: AckState) -> PersistOutcome | None:
        return self._persist(state)

    def crash(self) -> None:
        self._dirty = False

    def recover(self) -> RecoveredAckState:
        return self._durable

    def should_pause_dispatch(self, state: AckState) -> bool:
        return False

    def stats(self) -> Mapping[str, float]:
        # Writes and bytes reach the broker through each PersistOutcome.
        return {}
