"""``RangeCacheEntryWrapper``: one cached entry, the object the global removal queue holds."""

from __future__ import annotations

from brokerlab.protocols import Position

__all__ = ["CachedEntry"]


class CachedEntry:
    """A cached entry and its queue state; satisfies :class:`~brokerlab.protocols.CachedEntryView`.

    ``expected_reads`` is the entry's ``EntryReadCountHandler`` (``None``: no handler). In the
    simulation every reader copy is released before the next cache call, so the count lives here
    instead of in a handler object shared with copies. ``removed`` is the wrapper's ``key == null``:
    a range removal sets it and leaves the wrapper in the queue, to be dropped as MISSING.
    """

    __slots__ = (
        "accessed",
        "expected_reads",
        "owner",
        "position",
        "removed",
        "requeue_count",
        "size",
        "timestamp_ns",
    )

    def __init__(
        self,
        position: Position,
        size: int,
        timestamp_ns: int,
        expected_reads: int | None,
        owner: dict[int, CachedEntry],
    ) -> None:
        self.position = position
        self.size = size
        self.timestamp_ns = timestamp_ns
        self.expected_reads = expected_reads
        self.owner = owner  # the ledger's entry map this wrapper sits in
        self.requeue_count = 0
        self.accessed = False
        self.removed = False

    def __repr__(self) -> str:
        return (
            f"CachedEntry({self.position}, size={self.size}, ts={self.timestamp_ns}, "
            f"reads={self.expected_reads}, requeued={self.requeue_count}, "
            f"accessed={self.accessed}, removed={self.removed})"
        )
