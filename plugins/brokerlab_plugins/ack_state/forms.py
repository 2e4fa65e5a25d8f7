"""The MessageRange form of one write, as a cursor-ledger entry or as a metadata-store node.

Every persister falls back to this form: the metadata store has no long-array form (§2.4), and the
long-array path falls back to it when its map is empty. Only the choice of what to keep differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from brokerlab.protocols import BatchAck, Position
from brokerlab_plugins.ack_state.shapes import Snapshot
from brokerlab_plugins.ack_state.storage import Encoded
from brokerlab_plugins.ack_state.wire_size import (
    batches_bytes,
    managed_cursor_info_bytes,
    ranges_bytes,
)

__all__ = ["range_entry", "range_node"]

STATE_IN_NODE: Final = -1
"""``cursorsLedgerId`` of a node that carries the state itself."""


def range_entry(snap: Snapshot, kept: int, batches: Mapping[Position, BatchAck]) -> Encoded:
    """A PositionInfo with the ``kept`` lowest ranges (field 3), ``batches`` and the properties.

    Its size is ``position_info_bytes`` with the header and properties taken from the snapshot,
    which sized them once for the whole write.
    """
    ranges = snap.ranges[:kept]
    return Encoded(
        snap, ranges, batches, snap.position_bytes + ranges_bytes(ranges) + batches_bytes(batches)
    )


def range_node(
    snap: Snapshot, kept: int, batches: Mapping[Position, BatchAck], now_ms: int
) -> Encoded:
    """A ManagedCursorInfo holding the state, its batch bitsets included (field 7); whether
    recovery reads them back is the storage's choice (``CursorStorage``, §6.1)."""
    ranges = snap.ranges[:kept]
    size = managed_cursor_info_bytes(
        STATE_IN_NODE,
        snap.mark_delete,
        ranges,
        batches,
        snap.properties,
        snap.cursor_properties,
        now_ms,
    )
    return Encoded(snap, ranges, batches, size)
