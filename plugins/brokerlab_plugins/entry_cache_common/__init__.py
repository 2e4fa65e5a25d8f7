"""Code both entry caches share: limits, counters, the async size-eviction trigger, backlog caching.

This package registers nothing; ``legacy_cache`` and ``pip430_cache`` import from it so that the
rules they have in common (spec §1.5, §2.6, §5.1, §5.3) live in exactly one place.
"""

from __future__ import annotations

from brokerlab_plugins.entry_cache_common.backlog import BacklogCaching
from brokerlab_plugins.entry_cache_common.counters import CacheCounters
from brokerlab_plugins.entry_cache_common.limits import EVICTION_TRIGGER_FRACTION, CacheLimits
from brokerlab_plugins.entry_cache_common.trigger import AsyncEviction

__all__ = [
    "EVICTION_TRIGGER_FRACTION",
    "AsyncEviction",
    "BacklogCaching",
    "CacheCounters",
    "CacheLimits",
]
