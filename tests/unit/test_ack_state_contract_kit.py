"""The ack-state contract kit catches a persister that recovers acks it never wrote."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

import pytest

from brokerlab import load_profile
from brokerlab.host import PluginHost
from brokerlab.protocols import AckState, AckStatePersister, PersistOutcome, RecoveredAckState
from brokerlab.testing._common import build_context
from brokerlab.testing.ack_state import TIGHT_ACK_LIMITS, play_ack_script
from brokerlab_plugins.ack_state.range_count import new_range_count_persister

# Acks at one instant under a mark-delete rate limit: only the first one is written at once.
SCRIPT = [("ack", 5), ("ack", 6), ("ack", 7), ("crash",)]


class KeepsLiveState:
    """Range-count keeping the broker's AckState object instead of a copy: recover() reads the
    acks made since the last write, which a crash lost. (A wrapper: the built-in persisters may
    be compiled, and a compiled class cannot have an interpreted subclass.)"""

    def __init__(self, inner: AckStatePersister) -> None:
        self.inner = inner
        self.live: AckState | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        self.live = state
        return self.inner.acked(state, changed_ledgers)

    def recover(self) -> RecoveredAckState:
        got = self.inner.recover()
        if self.live is None:
            return got
        ranges = tuple(self.live.acked_ranges())
        return replace(got, mark_delete=self.live.mark_delete, acked_ranges=ranges)


def persister(live: bool) -> AckStatePersister:
    host = PluginHost()
    context, _ = build_context(host, load_profile(None, TIGHT_ACK_LIMITS, host=host))
    built = new_range_count_persister(context, "t/s")
    return cast("AckStatePersister", KeepsLiveState(built)) if live else built


def test_the_kit_passes_range_count() -> None:
    play_ack_script(persister(live=False), SCRIPT, lambda seconds: None)


def test_the_kit_fails_a_persister_that_recovers_acks_it_never_wrote() -> None:
    with pytest.raises(AssertionError, match=r"claims unwritten \(acked after the last write\)"):
        play_ack_script(persister(live=True), SCRIPT, lambda seconds: None)
