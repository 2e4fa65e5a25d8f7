"""The ack state cut per user ledger: what a persister snapshots, diffs and sizes.

Every persister needs the same few views of :class:`~brokerlab.protocols.AckState`: the ranges and
batch bitsets of one ledger, a ledger's acked entries as a bitmap (the long-array form), and which
ledgers changed since the last successful write (write amplification, PIP-81 dirty ledgers).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

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

_NOTHING: Final[Mapping[Any, Any]] = {}
"""The one empty mapping every snapshot shares for a part the state does not have (most writes
have no batch bitsets and no properties). Snapshot parts are read-only (typed ``Mapping``), so
sharing is safe; a copy per write would be kept until the next write and then freed, by then out
of the processor's caches (``many-topics`` writes 10,000 cursors in turn)."""


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
    ranges: Sequence[Range], batches: Mapping[Position, BatchAck]
) -> Mapping[int, LedgerState]:
    """Group ranges and batches by ledger, ascending; ledgers with neither are absent.

    ``ranges`` are in order (a ledger's ranges are consecutive); should a ledger come back after
    another one, its last run wins.
    """
    if not ranges and not batches:
        return _NOTHING  # the usual write: nothing individually acked
    by_id: dict[int, tuple[Range, ...]] = {}
    if ranges:
        # Runs of one ledger id, cut by index (no key function called per range).
        start, current = 0, ranges[0][0][0]
        for i, (lower, _) in enumerate(ranges):
            if lower[0] != current:
                by_id[current] = tuple(ranges[start:i])
                start, current = i, lower[0]
        by_id[current] = tuple(ranges[start:])
    by_batch: dict[int, list[tuple[Position, BatchAck]]] = {}
    for pos in sorted(batches):
        by_batch.setdefault(pos[0], []).append((pos, batches[pos]))
    return {
        lid: LedgerState(by_id.get(lid, ()), tuple(by_batch.get(lid, ())))
        for lid in sorted(by_id.keys() | by_batch.keys())
    }


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


class Snapshot:
    """The live state read once per write: every persister sizes and truncates from this.

    The parts every write needs whatever it keeps (the mark-delete header and both property
    lists) are sized once here; the per-ledger view is grouped on first use. Nothing in a
    snapshot is mutated after it is taken, so an encoding may keep references to its parts.
    """

    __slots__ = (
        "_ledgers",
        "batches",
        "cursor_properties",
        "cursor_properties_bytes",
        "mark_delete",
        "position_bytes",
        "properties",
        "ranges",
    )

    def __init__(
        self,
        # Any, not Position: compiled, a typed pair is unboxed here and boxed into a new tuple
        # each time a write hands it on; kept as it is, it stays the cursor's own tuple.
        mark_delete: Any,
        ranges: tuple[Range, ...],
        batches: Mapping[Position, BatchAck],
        properties: Mapping[str, int] | None = None,
        cursor_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.mark_delete = mark_delete
        self.ranges = ranges
        self.batches = batches
        self.properties: Mapping[str, int] = properties or _NOTHING
        self.cursor_properties: Mapping[str, str] = cursor_properties or _NOTHING
        # Most cursors have no properties of either kind: size them only when present.
        self.position_bytes = header_bytes(mark_delete) + (
            long_properties_bytes(properties) if properties else 0
        )
        """Header + mark-delete properties: what every PositionInfo of this state carries."""
        self.cursor_properties_bytes = (
            string_properties_bytes(cursor_properties) if cursor_properties else 0
        )
        """The subscription properties (StringProperty list), in the metadata store only."""
        self._ledgers: Mapping[int, LedgerState] | None = None

    @staticmethod
    def of(state: AckState) -> Snapshot:
        """Copy the live state (the broker mutates its own containers after the write)."""
        batches = state.batch_acks()
        properties = state.mark_delete_properties()
        cursor_properties = state.subscription_properties()
        # Not a classmethod's ``cls(...)``: compiled, naming the class is a direct constructor
        # call, ``cls`` a generic one, and every write takes a snapshot. The mark-delete read
        # through an untyped reference: as the protocol's Position it would be unboxed, then
        # boxed into a new tuple for the snapshot.
        live: Any = state
        return Snapshot(
            live.mark_delete,
            tuple(state.acked_ranges()),
            dict(batches) if batches else _NOTHING,
            dict(properties) if properties else _NOTHING,
            dict(cursor_properties) if cursor_properties else _NOTHING,
        )

    @property
    def ledgers(self) -> Mapping[int, LedgerState]:
        """The state per ledger, ascending (grouped once per write, on first use)."""
        ledgers = self._ledgers
        if ledgers is None:
            ledgers = self._ledgers = by_ledger(self.ranges, self.batches)
        return ledgers

    def changed_bytes(self, changed: Collection[int]) -> int:
        """Header + properties + the MessageRange form of the changed ledgers (§0.4)."""
        total = self.position_bytes + self.cursor_properties_bytes
        if changed:
            ledgers = self.ledgers
            total += sum(ledgers[lid].bytes for lid in set(changed) if lid in ledgers)
        return total


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
