"""The entry-cache and eviction-predicate contract kits catch a cache that drops young entries
and a predicate that stops a time pass where an expired, unread entry is due for removal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from brokerlab import EntryCacheRecord, EvictionPredicateRecord, hookimpl, load_profile
from brokerlab.host import PluginHost
from brokerlab.protocols import (
    CachedEntryView,
    CursorContainer,
    EntryCache,
    EvictionDecision,
    EvictionPass,
    PluginContext,
)
from brokerlab.testing.entry_cache import EntryCacheContract, EvictionPredicateContract
from brokerlab_plugins.pip430_cache import Pip430EntryCache, RecentlyAccessedPredicate


class ForgetfulCache:
    """PIP-430's cache that drops every topic's entries at each eviction run (a TTL read in the
    wrong unit, say). A wrapper: the built-in cache may be compiled."""

    def __init__(self, context: PluginContext) -> None:
        self.inner: EntryCache = Pip430EntryCache(context)
        self.topics: dict[str, CursorContainer] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        self.topics[topic] = cursors
        self.inner.open_ledger(topic, cursors)

    def evict_expired(self) -> None:
        self.inner.evict_expired()
        for topic, cursors in self.topics.items():
            self.inner.close_ledger(topic)
            self.inner.open_ledger(topic, cursors)


class StopsAtExpired(RecentlyAccessedPredicate):
    """Returns STOP for an unread entry in a time pass, expired or not."""

    name = "stops-at-expired"

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        if kind is EvictionPass.TIME and not entry.accessed:
            return EvictionDecision.STOP
        return super().decide(entry, kind, threshold_ns)


class CacheMutant:
    @hookimpl
    def brokerlab_entry_caches(self) -> Iterator[EntryCacheRecord]:
        yield EntryCacheRecord(
            name="forgetful",
            description="drops everything at each eviction run",
            factory=ForgetfulCache,
            uses_eviction_predicates=True,
        )


class PredicateMutant:
    @hookimpl
    def brokerlab_eviction_predicates(self) -> Iterator[EvictionPredicateRecord]:
        yield EvictionPredicateRecord(
            name="stops-at-expired",
            description="STOP where REMOVE is due",
            factory=lambda context: StopsAtExpired(),
        )


def host(mutant: object) -> PluginHost:
    """The installed plugins plus one mutant (the predicate kit chains every cache it finds)."""
    return PluginHost(plugins={"mutant": mutant})


@pytest.mark.parametrize(("cache", "fails"), [("pip430", False), ("forgetful", True)])
def test_the_kit_fails_a_cache_that_drops_entries_younger_than_the_ttl(
    cache: str, fails: bool
) -> None:
    contract: Any = EntryCacheContract()
    h = host(CacheMutant())
    run = lambda: contract.test_entries_stay_until_the_ttl(  # noqa: E731
        brokerlab_host=h, brokerlab_profile=load_profile(None, host=h), entry_cache=cache
    )
    if fails:
        with pytest.raises(AssertionError, match=r"is no longer served \d+ ms after"):
            run()
    else:
        run()


@pytest.mark.parametrize(
    ("predicate", "fails"), [("recently-accessed", False), ("stops-at-expired", True)]
)
def test_the_kit_fails_a_predicate_that_keeps_expired_unread_entries(
    predicate: str, fails: bool
) -> None:
    contract: Any = EvictionPredicateContract()
    h = host(PredicateMutant())
    profile = load_profile(None, ["sim.entryCache=pip430"], host=h)
    run = lambda: contract.test_chained_cache_still_expires_unread_entries(  # noqa: E731
        brokerlab_host=h, brokerlab_profile=profile, eviction_predicate=predicate
    )
    if fails:
        with pytest.raises(AssertionError, match=r"bytes still cached after the TTL"):
            run()
    else:
        run()
