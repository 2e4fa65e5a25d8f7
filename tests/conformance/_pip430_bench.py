"""A ``pip430`` cache manager on a virtual clock, for the entry-cache (PIP-430) conformance modules.

The cache runs under a ready profile's settings (``ready_profile``), with the upstream test's
byte-sized limits in place of ``managedLedgerCacheSizeMB`` (Pulsar's managed-ledger tests size the
cache in bytes), the removal queue's predicate chain built as Pulsar's queue decides
(``shouldRequeue``: recently accessed first, then remaining expected reads), and the periodic
eviction task every ``managedLedgerCacheEvictionIntervalMs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from _conformance import UpstreamClass, ready_profile

from brokerlab.broker.events import EventLoop
from brokerlab.protocols import CursorContainer, EvictionPredicate, PluginContext, Position
from brokerlab_plugins.cursor_containers import HeapCursorContainer, SortedListCursorContainer
from brokerlab_plugins.entry_cache_common import CacheLimits
from brokerlab_plugins.pip430_cache import (
    ExpectedReadsPredicate,
    Pip430EntryCache,
    RecentlyAccessedPredicate,
)

MS = 1_000_000
_MAX_REQUEUE = (
    "managed_ledger_cache_eviction_extend_ttl_of_entries_with_remaining_expected_reads_max_times"
)
_EXTEND = "managed_ledger_cache_eviction_extend_ttl_of_recently_accessed"


@dataclass
class Bench:
    """A cache, its clock and the cursor container of each open topic."""

    cache: Pip430EntryCache
    loop: EventLoop
    context: PluginContext
    containers: dict[str, CursorContainer]

    def open(self, topic: str, cursors: Mapping[str, Position | None] = {}) -> CursorContainer:
        """Open ``topic``'s managed ledger with the active cursors ``cursors``."""
        assert self.context.new_cursor_container is not None
        container = self.containers[topic] = self.context.new_cursor_container()
        for name, position in cursors.items():
            container.add(name, position)
        self.cache.open_ledger(topic, container)
        return container

    def move(self, topic: str, cursor: str, position: Position | None) -> None:
        """Move (or add) an active cursor, or deactivate it (``None``), and tell the cache."""
        container = self.containers[topic]
        if position is None:
            container.remove(cursor)
        else:
            container.add(cursor, position)
        self.cache.cursors_changed(topic)

    def put(self, topic: str, position: Position, size: int, reads: int | None = None) -> bool:
        """``RangeEntryCacheImpl.insert`` of an entry with ``reads`` expected reads."""
        return self.cache.put(topic, position, size, reads)

    def hits(self, topic: str, ledger: int, first: int, last: int, reader: str = "r") -> list[int]:
        """Read ``first..last`` of ``ledger``; the entry ids served from the cache."""
        misses = set(self.cache.read(topic, ledger, first, last, reader))
        return [e for e in range(first, last + 1) if e not in misses]

    def size(self, topic: str | None = None) -> int:
        """Bytes cached: in all (``None``) or for one topic."""
        if topic is None:
            return self.cache.size_bytes()
        return sum(self.cache.cached(topic).values())

    def settle(self) -> None:
        """Run what is due now (the size eviction an insert scheduled)."""
        self.loop.run_until(self.loop.now_ns())

    def at_ms(self, ms: int) -> None:
        """Let virtual time run to ``ms`` milliseconds."""
        self.loop.run_until(ms * MS)

    def removed(self) -> int:
        """Entries that left the cache, whatever the reason."""
        return self.cache.counters.removals()


def bench(
    upstream: UpstreamClass,
    *,
    max_size: int | None = None,
    watermark: float | None = None,
    queue: tuple[int, bool] | None = None,
    tick: bool = True,
    **settings: Any,
) -> Bench:
    """A ``pip430`` cache under ``upstream``'s ready profile, with ``settings`` (model field
    names) changed, ``max_size`` bytes and ``watermark`` when given, and ``queue`` =
    (maxRequeue, extendTTLOfRecentlyAccessed) for the removal queue (default: the profile's)."""
    profile_settings = ready_profile(upstream).settings.model_copy(update=settings)
    if queue is None:
        queue = (getattr(profile_settings, _MAX_REQUEUE), getattr(profile_settings, _EXTEND))
    max_requeue, extend = queue
    profile_settings = profile_settings.model_copy(
        update={_MAX_REQUEUE: max_requeue, _EXTEND: extend}
    )
    chain: list[EvictionPredicate] = [RecentlyAccessedPredicate()] if extend else []
    chain.append(ExpectedReadsPredicate(max_requeue))
    container = (
        SortedListCursorContainer
        if profile_settings.cache_eviction_by_expected_read_count
        else HeapCursorContainer
    )
    loop = EventLoop()
    context = PluginContext(
        settings=profile_settings,
        clock=loop,
        scheduler=loop,
        rng=np.random.default_rng(0),
        eviction_predicates=tuple(chain),
        new_cursor_container=container,
    )
    limits = CacheLimits.from_settings(profile_settings)
    if max_size is not None or watermark is not None:
        limits = CacheLimits.of(
            profile_settings.cache_size_bytes if max_size is None else max_size,
            profile_settings.managed_ledger_cache_eviction_watermark
            if watermark is None
            else watermark,
            profile_settings.managed_ledger_cache_eviction_time_threshold_millis,
        )
    cache = Pip430EntryCache(context, limits=limits)
    if tick:
        interval = profile_settings.managed_ledger_cache_eviction_interval_ms * MS
        loop.call_every(interval, interval, cache.evict_expired)
    return Bench(cache, loop, context, {})
