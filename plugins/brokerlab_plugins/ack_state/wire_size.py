"""Exact sizes of a cursor's ack state as Pulsar serialises it (proto2, no protobuf library).

Every field number of the cursor messages is at most 15, so every tag is one byte; repeated int64
fields are not packed, so each value costs its own tag. Two messages carry the state:

* ``PositionInfo``, a cursor-ledger (BookKeeper) entry: the mark-delete header, MessageRange list
  (field 3) or LongListMap list (field 6), LongProperty (4), BatchedEntryDeletionIndexInfo (5);
* ``ManagedCursorInfo``, the metadata-store node: the same ranges, properties and batches in the
  MessageRange form only, plus the cursor-ledger id, ``lastActive`` and the StringProperty
  subscription properties (field 8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from brokerlab.protocols import BatchAck, Position

__all__ = [
    "FRAME_PADDING",
    "batch_info_bytes",
    "batches_bytes",
    "header_bytes",
    "length_delimited",
    "long_list_map_bytes",
    "long_properties_bytes",
    "long_property_bytes",
    "managed_cursor_info_bytes",
    "message_range_bytes",
    "nested_position_bytes",
    "position_info_bytes",
    "ranges_bytes",
    "string_properties_bytes",
    "string_property_bytes",
    "varint_size",
    "word_bytes",
]

FRAME_PADDING: Final = 10 * 1024
"""BookKeeper's frame limit is ``maxMessageSize`` plus this padding (``nettyMaxFrameSizeBytes``)."""

_WORD: Final = 0xFFFF_FFFF_FFFF_FFFF


def varint_size(value: int) -> int:
    """Bytes of an int64 varint: 1 for 0..127, ... 9 below 2**63, 10 for any negative value."""
    if value < 0:
        return 10
    return (value.bit_length() + 6) // 7 or 1


def length_delimited(inner: int) -> int:
    """A nested message (or string) field: tag + length varint + the payload."""
    return 1 + varint_size(inner) + inner


def header_bytes(mark_delete: Position) -> int:
    """The mark-delete position fields (ledgerId, entryId) of a PositionInfo."""
    return 2 + _v(mark_delete[0]) + _v(mark_delete[1])


def _nested_position(ledger_id: int, entry_id: int) -> int:
    return 2 + varint_size(ledger_id) + varint_size(entry_id)


def nested_position_bytes(ledger_id: int, entry_id: int) -> int:
    """One NestedPositionInfo field (tag and length included)."""
    return length_delimited(_nested_position(ledger_id, entry_id))


def message_range_bytes(lower: Position, upper: Position) -> int:
    """One MessageRange ``(lower, upper]`` inside PositionInfo, tag and length included.

    Each nested position is at most 22 bytes and the range at most 48, so every length is one
    byte: ``m + 2`` with ``m = 8 + v(L_lo) + v(L_hi) + v(E_lo) + v(E_hi)`` (§2.3).
    """
    return 10 + _v(lower[0]) + _v(upper[0]) + _v(lower[1]) + _v(upper[1])


def _v(x: int) -> int:
    # The hot path of every size: small non-negative values first, without a loop.
    if 0 <= x < 128:
        return 1
    if 0 <= x < 16_384:
        return 2
    if 0 <= x < 2_097_152:
        return 3
    return varint_size(x)


def ranges_bytes(ranges: Iterable[tuple[Position, Position]]) -> int:
    """A whole MessageRange list (every range a field of its own)."""
    total = 0
    for (ledger_lo, lo), (ledger_hi, hi) in ranges:
        total += 10 + _v(ledger_lo) + _v(ledger_hi) + _v(lo) + _v(hi)
    return total


def word_bytes(word: int) -> int:
    """One unpacked repeated int64 value: tag plus varint; a word with bit 63 set is negative."""
    word &= _WORD
    return 1 + (10 if word >> 63 else varint_size(word))


def long_list_map_bytes(ledger_id: int, words: Mapping[int, int]) -> int:
    """One LongListMap field for a ledger given its non-zero words (word index -> 64-bit word).

    The words are the dense ``BitSet.toLongArray`` form: word 0 up to the word holding the highest
    set bit, leading and inner zero words included at 2 bytes each (so the cost follows the span
    of entry ids, not the number of holes).
    """
    inner = 1 + varint_size(ledger_id)
    if words:
        inner += 2 * (max(words) + 1 - len(words))
        inner += sum(word_bytes(w) for w in words.values())
    return length_delimited(inner)


def batch_info_bytes(position: Position, ack: BatchAck) -> int:
    """One BatchedEntryDeletionIndexInfo: the position plus the unacked-bits words, as
    ``BitSet.toLongArray()`` gives them: up to the word holding the highest set bit, so trailing
    all-zero words are not written (spec §2.3)."""
    mask = ack.unacked
    total = 0
    while mask:
        total += word_bytes(mask)
        mask >>= 64
    return length_delimited(length_delimited(_nested_position(*position)) + total)


def batches_bytes(batch_acks: Mapping[Position, BatchAck]) -> int:
    if not batch_acks:
        return 0  # most writes: no partial batch, and no items() view to build and walk
    total = 0
    for pos, ack in batch_acks.items():
        total += batch_info_bytes(pos, ack)
    return total


def long_property_bytes(name: str, value: int) -> int:
    """One LongProperty field {1 name, 2 value}: the mark-delete properties (dedup sequence ids)."""
    return length_delimited(length_delimited(len(name.encode())) + 1 + varint_size(value))


def long_properties_bytes(properties: Mapping[str, int]) -> int:
    total = 0
    for name, value in properties.items():
        total += long_property_bytes(name, value)
    return total


def string_property_bytes(name: str, value: str) -> int:
    """One StringProperty field {1 name, 2 value}: a subscription property (metadata store only).

    The spec's §2.3 formula counts one byte more; this is the proto2 encoding, checked against a
    byte-level encoder in the tests.
    """
    inner = length_delimited(len(name.encode())) + length_delimited(len(value.encode()))
    return length_delimited(inner)


def string_properties_bytes(properties: Mapping[str, str]) -> int:
    total = 0
    for name, value in properties.items():
        total += string_property_bytes(name, value)
    return total


def position_info_bytes(
    mark_delete: Position,
    ranges: Iterable[tuple[Position, Position]],
    batch_acks: Mapping[Position, BatchAck],
    properties: Mapping[str, int] | None = None,
) -> int:
    """A whole PositionInfo entry in the MessageRange form (field 3)."""
    total = header_bytes(mark_delete) + ranges_bytes(ranges) + batches_bytes(batch_acks)
    return total + (long_properties_bytes(properties) if properties else 0)


def managed_cursor_info_bytes(
    cursors_ledger_id: int,
    mark_delete: Position,
    ranges: Iterable[tuple[Position, Position]] = (),
    batch_acks: Mapping[Position, BatchAck] | None = None,
    properties: Mapping[str, int] | None = None,
    cursor_properties: Mapping[str, str] | None = None,
    last_active_ms: int = 0,
) -> int:
    """A ManagedCursorInfo node; ``cursors_ledger_id = -1`` means the state is in the node."""
    total = 1 + varint_size(cursors_ledger_id) + 2 + varint_size(mark_delete[0])
    total += varint_size(mark_delete[1]) + 1 + varint_size(last_active_ms)
    total += ranges_bytes(ranges)
    total += batches_bytes(batch_acks) if batch_acks else 0
    total += long_properties_bytes(properties) if properties else 0
    return total + (string_properties_bytes(cursor_properties) if cursor_properties else 0)
