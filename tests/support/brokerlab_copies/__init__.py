"""A third-party plugin of pure-Python copies of the built-in eviction predicates and cursor
containers, and of caches that reach the built-in PIP-430 cache only through its protocols
(#26 item 2: one call path for everyone).

Register it as any outside plugin is: ``PluginHost(modules=["brokerlab_copies"])`` or
``brokerlab -p brokerlab_copies``. Its records:

* ``copy-recently-accessed``, ``copy-expected-reads``: the built-in predicates' own source, run
  interpreted, with the optional protocols the built-ins implement (``SilentPredicate``,
  ``AttributedPredicate``);
* ``plain-recently-accessed``, ``plain-expected-reads``: the same rules written against the plain
  ``EvictionPredicate`` protocol only; named after PIP-430's reasons, so their requeues count there;
* ``copy-heap``, ``copy-sorted-list``: the built-in containers' own source, run interpreted;
* ``wrapped-pip430``, ``wrapped-pip430-single``: the built-in PIP-430 cache behind a forwarding
  wrapper that has only the ``EntryCache`` members, or those and ``SingleEntryCache``'s.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import (
    CursorContainerRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    hookimpl,
)
from brokerlab_copies.caches import ForwardingCache, ForwardingSingleEntryCache
from brokerlab_copies.plain import PlainExpectedReads, PlainRecentlyAccessed
from brokerlab_copies.sources import heap, predicates, sorted_list

__all__ = ["COPIES", "PLAIN"]

COPIES = {"recently-accessed": "copy-recently-accessed", "expected-reads": "copy-expected-reads"}
"""Built-in predicate -> its copy with the optional protocols."""
PLAIN = {"recently-accessed": "plain-recently-accessed", "expected-reads": "plain-expected-reads"}
"""Built-in predicate -> its copy on the plain protocol."""


class _CopyRecentlyAccessed(predicates.RecentlyAccessedPredicate):  # type: ignore[name-defined,misc]
    name = "copy-recently-accessed"


class _CopyExpectedReads(predicates.ExpectedReadsPredicate):  # type: ignore[name-defined,misc]
    name = "copy-expected-reads"


@hookimpl
def brokerlab_eviction_predicates() -> Iterator[EvictionPredicateRecord]:
    yield EvictionPredicateRecord(
        name="copy-recently-accessed",
        description="Interpreted copy of recently-accessed, with its optional protocols",
        factory=lambda context: _CopyRecentlyAccessed(),
    )
    yield EvictionPredicateRecord(
        name="copy-expected-reads",
        description="Interpreted copy of expected-reads, with its optional protocols",
        factory=lambda context: _CopyExpectedReads.from_settings(context.settings),
    )
    yield EvictionPredicateRecord(
        name="plain-recently-accessed",
        description="recently-accessed on the plain protocol",
        factory=lambda context: PlainRecentlyAccessed(),
    )
    yield EvictionPredicateRecord(
        name="plain-expected-reads",
        description="expected-reads on the plain protocol",
        factory=lambda context: PlainExpectedReads.from_settings(context.settings),
    )


@hookimpl
def brokerlab_cursor_containers() -> Iterator[CursorContainerRecord]:
    yield CursorContainerRecord(
        name="copy-heap",
        description="Interpreted copy of the heap container",
        factory=heap.HeapCursorContainer,
    )
    yield CursorContainerRecord(
        name="copy-sorted-list",
        description="Interpreted copy of the sorted-list container",
        factory=sorted_list.SortedListCursorContainer,
    )


@hookimpl
def brokerlab_entry_caches() -> Iterator[EntryCacheRecord]:
    yield EntryCacheRecord(
        name="wrapped-pip430",
        description="The pip430 cache behind the EntryCache protocol only",
        factory=ForwardingCache.of_pip430,
        uses_eviction_predicates=True,
    )
    yield EntryCacheRecord(
        name="wrapped-pip430-single",
        description="The pip430 cache behind EntryCache and SingleEntryCache",
        factory=ForwardingSingleEntryCache.of_pip430,
        uses_eviction_predicates=True,
    )
