"""``EntryCacheDefaultEvictionPolicy``: which ledger caches a legacy size eviction takes from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from brokerlab_plugins.legacy_cache.ledger_cache import LedgerCache

__all__ = ["PERCENT_OF_SIZE_TO_CONSIDER", "evict_proportionally"]

PERCENT_OF_SIZE_TO_CONSIDER: Final = 0.5


def evict_proportionally(caches: Iterable[LedgerCache], size_to_free: int) -> tuple[int, int]:
    """Free about ``size_to_free`` bytes from the largest caches (spec §5.2).

    The largest caches that together hold at least half of all cached bytes each give up a share
    proportional to their size, lowest positions first. Smaller caches are never touched, however
    old their entries. Returns (entries, bytes) removed.
    """
    ordered = sorted(caches, key=lambda c: c.size, reverse=True)
    total = sum(c.size for c in ordered)
    to_consider = int(total * PERCENT_OF_SIZE_TO_CONSIDER)
    selected: list[LedgerCache] = []
    selected_size = 0
    for cache in ordered:
        if selected_size >= to_consider:
            break
        selected.append(cache)
        selected_size += cache.size
    count = freed = 0
    if selected_size <= 0:
        return 0, 0
    for cache in selected:
        # Pulsar computes the share in double arithmetic, (long)(sizeToFree * (size /
        # (double) selectedTotal)), which can land one byte below the exact integer quotient.
        share = int(size_to_free * (cache.size / selected_size))
        if share > 0:
            c, f = cache.evict_lowest(share)
            count += c
            freed += f
    return count, freed
