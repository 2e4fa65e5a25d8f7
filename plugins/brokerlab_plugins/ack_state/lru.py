"""PIP-81's in-memory cap: whole user ledgers swapped in and out, least recently used first.

Sizes are each ledger's serialized per-ledger state (MessageRange form). A touch of a ledger whose
state is only in the cursor ledger swaps it in (``lruSwitch``); then least recently used ledgers
are swapped out, possibly several, until the resident bytes fit the cap again. The ledger just
touched always stays, so one ledger larger than the cap is still served. ``cap=None`` keeps
everything resident (``enableLruCacheMaxUnackedRanges=false``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

__all__ = ["LruLedgers"]


class LruLedgers:
    """Resident ledgers in least- to most-recently-used order, with their sizes."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self._sizes: OrderedDict[int, int] = OrderedDict()
        self._total = 0
        self.swap_ins = 0
        self.swap_outs = 0
        self.peak_bytes = 0

    @property
    def resident_bytes(self) -> int:
        return self._total

    def resident(self) -> list[int]:
        """Resident ledgers, least recently used first."""
        return list(self._sizes)

    def touch(self, ledger: int, size: int, persisted: bool) -> list[int]:
        """An ack or a read check needs ``ledger``; returns the ledgers swapped out for it.

        ``size`` is the ledger's state when it is not resident; ``persisted`` says whether that
        state lives in the cursor ledger (a swap-in) rather than being new.
        """
        if ledger in self._sizes:
            self._sizes.move_to_end(ledger)
        else:
            self._sizes[ledger] = size
            self._total += size
            self.swap_ins += persisted
        return self._shrink()

    def resize(self, sizes: Mapping[int, int]) -> list[int]:
        """Refresh resident sizes (after a write); ledgers without state leave memory."""
        for ledger in list(self._sizes):
            new = sizes.get(ledger, 0)
            self._total += new - self._sizes[ledger]
            if new:
                self._sizes[ledger] = new
            else:
                del self._sizes[ledger]
        return self._shrink()

    def load(self, newest_first: Iterable[tuple[int, int]]) -> None:
        """Recovery: load from the latest ledger back until the cap would be exceeded."""
        self._sizes.clear()
        self._total = 0
        loaded: list[tuple[int, int]] = []
        for ledger, size in newest_first:
            if loaded and self.cap is not None and self._total + size > self.cap:
                break
            loaded.append((ledger, size))
            self._total += size
        for ledger, size in reversed(loaded):  # the earliest loaded is the least recently used
            self._sizes[ledger] = size
        self.peak_bytes = max(self.peak_bytes, self._total)

    def _shrink(self) -> list[int]:
        out: list[int] = []
        while self.cap is not None and self._total > self.cap and len(self._sizes) > 1:
            ledger, size = self._sizes.popitem(last=False)
            self._total -= size
            self.swap_outs += 1
            out.append(ledger)
        self.peak_bytes = max(self.peak_bytes, self._total)
        return out
