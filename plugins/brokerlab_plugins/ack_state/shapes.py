"""The ack state cut per user ledger: what a persister snapshots, diffs and sizes.

Every persister needs the same few views of :class:`~brokerlab.protocols.AckState`: the ranges and
batch bitsets of one ledger, a ledger's acked entries as a bitmap (the long-array form), and which
ledgers changed since the last successful write (write amplification, PIP-81 dirty ledgers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import groupby

from brokerlab.protocols import AckState, BatchAck, Position, RecoveredAckState
from brokerlab_plugins.ack_state.wire_size import (
    batches_bytes,
    header_bytes,
    long_properties_bytes,
    ranges_bytes,
    string_properties_bytes,
)

__all__ = ["LedgerState", "Snapshot", "by_ledger", "ledger_words", "recovered"]

Range = tuple[Position, Position]


@dataclass(frozen=True)
class LedgerState:
    """One user ledger's individually acked ranges and partial batches (MessageRange form)."""

    ranges: tuple[Range, ...] = ()
    batches: tuple[tuple[Position, BatchAck], ...] = ()

    @cached_property
    def bytes(self) -> int:
        """Serialized size of this ledger's state (the PIP-81 per-ledger measure, §0.3 item 5)."""
        return ranges_bytes(self.ranges) + batches_bytes(dict(self.batches))

    @property
    def cardinality(self) -> int:
        """Acked entries in this ledger (what the long-array ``toRanges`` cap counts)."""
        return sum(upper[1] - lower[1] for lower, upper in self.ranges)


def by_ledger(
    ranges: Iterable[Range], batches: Mapping[Position, BatchAck]
) -> dict[int, LedgerState]:
    """Group ranges and batches by ledger, ascending; ledgers with neither are absent."""
    by_id: dict[int, tuple[Range, ...]] = {
        lid: tuple(group) for lid, group in groupby(ranges, key=_ledger_of)
    }
    by_batch: dict[int, list[tuple[Position, BatchAck]]] = {}
    for pos in sorted(batches):
        by_batch.setdefault(pos[0], []).append((pos, batches[pos]))
    return {
        lid: LedgerState(by_id.get(lid, ()), tuple(by_batch.get(lid, ())))
        for lid in sorted(by_id.keys() | by_batch.keys())
    }


def _ledger_of(r: Range) -> int:
    return r[0][0]


def ledger_words(ranges: Iterable[Range]) -> dict[int, int]:
    """One ledger's acked entry ids as non-zero 64-bit words (word i holds entries 64i..64i+63).

    Built word by word, so a ledger of 50,000 entries costs its ~800 words, not a 50,000-bit
    integer rebuilt per range.
    """
    words: dict[int, int] = {}
    for lower, upper in ranges:
        first, last = lower[1] + 1, upper[1]
        while first <= last:
            index = first >> 6
            top = min(last, (index << 6) + 63)
            bits = ((1 << (top - first + 1)) - 1) << (first & 63)
            words[index] = words.get(index, 0) | bits
            first = top + 1
    return words


@dataclass(frozen=True)
class Snapshot:
    """The live state read once per write: every persister sizes and truncates from this."""

    mark_delete: Position
    ranges: tuple[Range, ...]
    batches: Mapping[Position, BatchAck]
    properties: Mapping[str, int] = field(default_factory=dict)
    cursor_properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, state: AckState) -> Snapshot:
        return cls(
            state.mark_delete,
            tuple(state.acked_ranges()),
            dict(state.batch_acks()),
            dict(state.mark_delete_properties()),
            dict(state.subscription_properties()),
        )

    @cached_property
    def ledgers(self) -> dict[int, LedgerState]:
        """The state per ledger, ascending (computed once per write)."""
        return by_ledger(self.ranges, self.batches)

    def changed_bytes(self, changed: Iterable[int]) -> int:
        """Header + properties + the MessageRange form of the changed ledgers (§0.4)."""
        ledgers = self.ledgers
        total = header_bytes(self.mark_delete) + long_properties_bytes(self.properties)
        total += string_properties_bytes(self.cursor_properties)
        return total + sum(ledgers[lid].bytes for lid in set(changed) if lid in ledgers)


def recovered(
    mark_delete: Position,
    ranges: Iterable[Range],
    batches: Mapping[Position, BatchAck] | None = None,
    properties: Mapping[str, int] | None = None,
) -> RecoveredAckState:
    """A recovered state clipped to after the mark-delete (older per-ledger data may overlap).

    ``properties`` are the mark-delete properties the write carried; subscription properties
    live in the metadata store only and are attached by the persister at recovery.
    """
    kept: list[Range] = []
    for lower, upper in ranges:
        if upper <= mark_delete:
            continue
        if lower < mark_delete:
            lower = mark_delete
        kept.append((lower, upper))
    kept_batches = {p: b for p, b in (batches or {}).items() if p > mark_delete}
    return RecoveredAckState(mark_delete, tuple(kept), kept_batches, dict(properties or {}))
