"""The cache Pulsar uses when ``managedLedgerCacheSizeMB=0``: every read is a miss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerlab.protocols import CursorContainer, Position


class DisabledEntryCache:
    """Caches nothing; counts every requested entry as a miss so hit ratios stay comparable."""

    def __init__(self) -> None:
        self._misses = 0

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        return None

    def close_ledger(self, topic: str) -> None:
        return None

    def insert(self, topic: str, position: Position, size: int) -> bool:
        return False

    def read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> list[int]:
        self._misses += last - first + 1
        # A comprehension, not list(range(...)): compiled, it is a C loop with no range object.
        return [entry_id for entry_id in range(first, last + 1)]

    def storage_read(
        self,
        topic: str,
        ledger_id: int,
        entry_ids: Sequence[int],
        sizes: Sequence[int],
        reader: str,
    ) -> None:
        return None

    def released(self, topic: str, position: Position) -> None:
        return None

    def replayed(self, topic: str, position: Position) -> None:
        return None

    def cursors_changed(self, topic: str) -> None:
        return None

    def ledger_deleted(self, topic: str, ledger_id: int) -> None:
        return None

    def evict_expired(self) -> None:
        return None

    def size_bytes(self) -> int:
        return 0

    def stats(self) -> Mapping[str, float]:
        return {"cache_hits": 0, "cache_misses": self._misses}
