"""Exact sizes of a cursor's ack state as Pulsar serialises it (proto2, no protobuf library).

Every field number of the cursor messages is at most 15, so every tag is one byte; repeated int64
fields are not packed, so each value costs its own tag.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from brokerlab.protocols import BatchAck, Position

__all__ = [
    "batch_info_bytes",
    "header_bytes",
    "length_delimited",
    "message_range_bytes",
    "position_info_bytes",
    "varint_size",
]


def varint_size(value: int) -> int:
    """Bytes of an int64 varint: 1 for 0..127, ... 9 below 2**63, 10 for any negative value."""
    if value < 0:
        return 10
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def length_delimited(inner: int) -> int:
    """A nested message field: tag + length varint + the message."""
    return 1 + varint_size(inner) + inner


def header_bytes(mark_delete: Position) -> int:
    """The mark-delete position fields (ledgerId, entryId) of a PositionInfo."""
    return 2 + varint_size(mark_delete[0]) + varint_size(mark_delete[1])


def _nested_position(ledger_id: int, entry_id: int) -> int:
    return 2 + varint_size(ledger_id) + varint_size(entry_id)


def message_range_bytes(lower: Position, upper: Position) -> int:
    """One MessageRange ``(lower, upper]`` inside PositionInfo, tag and length included."""
    inner = length_delimited(_nested_position(*lower)) + length_delimited(_nested_position(*upper))
    return length_delimited(inner)


def batch_info_bytes(position: Position, ack: BatchAck) -> int:
    """One BatchedEntryDeletionIndexInfo: the position plus the unacked-bits words."""
    words = max(1, -(-ack.batch_size // 64))
    mask = ack.unacked
    word_bytes = 0
    for _ in range(words):
        word = mask & 0xFFFF_FFFF_FFFF_FFFF
        mask >>= 64
        # A word with bit 63 set is a negative int64: 10 bytes.
        word_bytes += 1 + (10 if word >> 63 else varint_size(word))
    return length_delimited(length_delimited(_nested_position(*position)) + word_bytes)


def position_info_bytes(
    mark_delete: Position,
    ranges: Iterable[tuple[Position, Position]],
    batch_acks: Mapping[Position, BatchAck],
) -> int:
    """A whole PositionInfo entry in the MessageRange form (field 3), no properties."""
    total = header_bytes(mark_delete)
    total += sum(message_range_bytes(lower, upper) for lower, upper in ranges)
    total += sum(batch_info_bytes(pos, ack) for pos, ack in batch_acks.items())
    return total
