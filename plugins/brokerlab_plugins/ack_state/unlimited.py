"""A persister with no limits: the whole ack state, on Pulsar's cadence, never truncated.

It is the honest upper bound the limited persisters are compared with: after a restart only the
acknowledgements made since the last write (the unpersisted window) are redelivered. It shares the
cadence and storage model of :mod:`.whole_state`, with no frame limit and no pause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from brokerlab.protocols import AckState, PluginContext
from brokerlab_plugins.ack_state.forms import range_entry, range_node
from brokerlab_plugins.ack_state.shapes import Snapshot
from brokerlab_plugins.ack_state.storage import Encoded
from brokerlab_plugins.ack_state.whole_state import (
    WholeStatePersister,
    store_keeps_batches,
    write_latency,
)

__all__ = ["UnlimitedEncoder", "new_unlimited_persister"]


class UnlimitedEncoder:
    """The complete state in the MessageRange form, every time."""

    def entry(self, snap: Snapshot) -> Encoded:
        return range_entry(snap, len(snap.ranges), snap.batches)

    def metadata_store(self, snap: Snapshot, now_ms: int) -> Encoded:
        return range_node(snap, len(snap.ranges), snap.batches, now_ms)

    def close_to_ledger(self) -> bool:
        return True

    def over_limit(self, state: AckState) -> bool:
        return False

    def stats(self) -> Mapping[str, float]:
        return {}


_ENCODER: Final = UnlimitedEncoder()
"""Stateless, so every cursor shares it (one object fewer per cursor to bring into the cache)."""


def new_unlimited_persister(context: PluginContext, cursor: str) -> WholeStatePersister:
    # No frame limit: the baseline never falls back to the metadata store.
    return WholeStatePersister(
        context.clock,
        context.settings,
        _ENCODER,
        write_ns=write_latency(context, cursor),
        store_keeps_batches=store_keeps_batches(context),
    )
