"""``RangeCacheEntryWrapper``: one cached entry, the object the global removal queue holds."""

from __future__ import annotations

from brokerlab.protocols import Position

__all__ = ["CachedEntry"]


class CachedEntry:
    """A cached entry and its queue state; satisfies :class:`~brokerlab.protocols.CachedEntryView`.

    ``expected_reads`` is the entry's ``EntryReadCountHandler`` (``None``: no handler), kept in
    ``reads`` when ``counted``. In the simulation every reader copy is released before the next
    cache call, so the count lives here instead of in a handler object shared with copies.
    ``removed`` is the wrapper's ``key == null``: a range removal sets it and leaves the wrapper
    in the queue, to be dropped as MISSING.
    """

    __slots__ = (
        "accessed",
        "counted",
        "owner",
        "position",
        "reads",
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
        # The count as a plain int and whether there is one: adding to an ``int | None`` field
        # would make a new int object on every release.
        self.reads = 0 if expected_reads is None else expected_reads
        self.counted = expected_reads is not None
        self.owner = owner  # the ledger's entry map this wrapper sits in
        self.requeue_count = 0
        self.accessed = False
        self.removed = False

    @property
    def expected_reads(self) -> int | None:
        return self.reads if self.counted else None

    def __repr__(self) -> str:
        return (
            f"CachedEntry({self.position}, size={self.size}, ts={self.timestamp_ns}, "
            f"reads={self.expected_reads}, requeued={self.requeue_count}, "
            f"accessed={self.accessed}, removed={self.removed})"
        )
