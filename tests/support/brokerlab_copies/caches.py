"""The built-in PIP-430 cache as a third party would reuse it: wrapped, reached only through the
protocols the wrapper forwards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerlab import CursorContainer, EntryCache, PluginContext, Position
from brokerlab_plugins.pip430_cache import Pip430EntryCache

__all__ = ["ForwardingCache", "ForwardingSingleEntryCache"]


class ForwardingCache:
    """Every ``EntryCache`` call, forwarded; nothing else."""

    def __init__(self, inner: EntryCache) -> None:
        self.inner = inner

    @classmethod
    def of_pip430(cls, context: PluginContext) -> ForwardingCache:
        return cls(Pip430EntryCache(context))

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        self.inner.open_ledger(topic, cursors)

    def close_ledger(self, topic: str) -> None:
        self.inner.close_ledger(topic)

    def insert(self, topic: str, position: Position, size: int) -> bool:
        return self.inner.insert(topic, position, size)

    def read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> list[int]:
        return self.inner.read(topic, ledger_id, first, last, reader)

    def storage_read(
        self,
        topic: str,
        ledger_id: int,
        entry_ids: Sequence[int],
        sizes: Sequence[int],
        reader: str,
    ) -> None:
        self.inner.storage_read(topic, ledger_id, entry_ids, sizes, reader)

    def released(self, topic: str, position: Position) -> None:
        self.inner.released(topic, position)

    def replayed(self, topic: str, position: Position) -> None:
        self.inner.replayed(topic, position)

    def cursors_changed(self, topic: str) -> None:
        self.inner.cursors_changed(topic)

    def ledger_deleted(self, topic: str, ledger_id: int) -> None:
        self.inner.ledger_deleted(topic, ledger_id)

    def evict_expired(self) -> None:
        self.inner.evict_expired()

    def size_bytes(self) -> int:
        return self.inner.size_bytes()

    def stats(self) -> Mapping[str, float]:
        return self.inner.stats()


class ForwardingSingleEntryCache(ForwardingCache):
    """:class:`ForwardingCache` and the ``SingleEntryCache`` one-entry calls."""

    inner: Pip430EntryCache

    @classmethod
    def of_pip430(cls, context: PluginContext) -> ForwardingSingleEntryCache:
        return cls(Pip430EntryCache(context))

    def read_entry(self, topic: str, ledger_id: int, entry_id: int, reader: str) -> bool:
        return self.inner.read_entry(topic, ledger_id, entry_id, reader)

    def storage_read_entry(
        self, topic: str, ledger_id: int, entry_id: int, size: int, reader: str
    ) -> None:
        self.inner.storage_read_entry(topic, ledger_id, entry_id, size, reader)

    def release_entry(self, topic: str, ledger_id: int, entry_id: int) -> None:
        self.inner.release_entry(topic, ledger_id, entry_id)
