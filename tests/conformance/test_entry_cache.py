"""A range read through a managed ledger's entry cache, in both cache lines: a fully cached range
is served without storage, and a range with entries missing before, after, in the middle of or
scattered through it still yields every entry."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, reexpresses
from _read_bench import ReadBench, read_bench

from brokerlab.broker.broker import Counters

UPSTREAM = UpstreamClass(
    name="EntryCacheTest",
    area="Entry cache (PIP-430)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/EntryCacheTest.java",
    commit="79864281725f7b85ff44524335e2e3ea18fef844",
    methods=(
        "testRead",
        "testReadMissingBefore",
        "testReadMissingAfter",
        "testReadMissingMiddle",
        "testReadMissingMultiple",
        "testReadWithError",
    ),
    not_applicable={
        "testReadWithError": "the ledger handle fails every storage read with "
        "BKNoSuchLedgerExistsException and the read must fail; brokerlab's storage never fails "
        "a read (the [storage] section models latency and transfer time only)",
    },
    line="pre-PIP-430",
    profile="pulsar-4.0-legacy",
    note="This apache/pulsar version predates PIP-430 (the cache classes still in "
    "org.apache.bookkeeper.mledger.impl); later versions keep these five read cases with the same "
    "expectations, so each test runs twice: the legacy cache under pulsar-4.0-legacy and the "
    "PIP-430 cache under pulsar-4.2. A broker reads a 10-entry backlog (10-byte entries, ledger 1 "
    "for upstream's ledger 0) in one dispatcher read after the test cached part of it. Upstream "
    "asserts only that the read returns 10 entries (and, fully cached, that storage is not read). "
    "What Pulsar reads from storage on a partial hit differs by line: the pre-PIP-430 "
    "RangeEntryCacheImpl.asyncReadEntry0 releases the cached entries and reads the whole range "
    "again (no hit counted); PIP-430's reads each missing run apart. Each test asserts its "
    "line's reads.",
)

ENTRIES = 10
# Each cache line under the ready profile that claims it.
LINES = pytest.mark.parametrize(
    "profile", ["pulsar-4.0-legacy", "pulsar-4.2"], ids=["legacy", "pip430"]
)


def _read(profile: str, *cached: int) -> tuple[ReadBench, Counters]:
    """Cache ``cached`` of entries 0..9, then let the consumer's read of 0..9 run."""
    b = read_bench(profile, entries=ENTRIES, size=10)
    assert all(b.cache(*cached))
    assert b.cached() == sorted(cached)
    return b, b.run()


def _all_read_with(profile: str, b: ReadBench, counters: Counters, missing: list[int]) -> None:
    """The consumer got all ten entries. The pre-PIP-430 cache (this class's line) reads the
    whole range from storage again when any entry of it is missing, and counts no hit; the
    PIP-430 cache reads each run of missing entries apart and serves the rest from the cache."""
    assert counters.delivered == ENTRIES
    if profile == "pulsar-4.0-legacy":
        assert (counters.storage_read_ops, counters.storage_entries_read) == (1, ENTRIES)
        assert b.broker.cache.stats()["cache_hits"] == 0
    else:
        runs = sum(1 for i, e in enumerate(missing) if i == 0 or missing[i - 1] != e - 1)
        assert (counters.storage_read_ops, counters.storage_entries_read) == (runs, len(missing))
        assert b.broker.cache.stats()["cache_hits"] == ENTRIES - len(missing)


def _check(profile: str, *cached: int) -> None:
    b, counters = _read(profile, *cached)
    _all_read_with(profile, b, counters, [e for e in range(ENTRIES) if e not in cached])


@reexpresses(UPSTREAM, "testRead")
@LINES
def test_a_fully_cached_range_is_served_without_storage(profile: str) -> None:
    """Entries 0..9 all cached: the read of 0..9 serves ten entries, all from the cache, and
    storage is never read."""
    b, counters = _read(profile, *range(10))
    assert counters.delivered == ENTRIES
    assert b.broker.cache.stats()["cache_hits"] == ENTRIES
    assert (counters.storage_read_ops, counters.storage_entries_read) == (0, 0)


@reexpresses(UPSTREAM, "testReadMissingBefore")
@LINES
def test_entries_missing_before_the_cached_ones_are_read(profile: str) -> None:
    """Entries 3..9 cached, 0..2 not: the read of 0..9 still yields ten entries; storage serves
    the whole range (legacy) or 0..2 (PIP-430)."""
    _check(profile, *range(3, 10))


@reexpresses(UPSTREAM, "testReadMissingAfter")
@LINES
def test_entries_missing_after_the_cached_ones_are_read(profile: str) -> None:
    """Entries 0..7 cached, 8 and 9 not: ten entries; storage serves the whole range (legacy)
    or 8 and 9 (PIP-430)."""
    _check(profile, *range(8))


@reexpresses(UPSTREAM, "testReadMissingMiddle")
@LINES
def test_entries_missing_in_the_middle_are_read(profile: str) -> None:
    """Entries 0, 1, 8 and 9 cached, 2..7 not: ten entries; storage serves the whole range
    (legacy) or 2..7 in one read (PIP-430)."""
    _check(profile, 0, 1, 8, 9)


@reexpresses(UPSTREAM, "testReadMissingMultiple")
@LINES
def test_scattered_missing_entries_are_read(profile: str) -> None:
    """Entries 0, 2, 5 and 8 cached, six others not: ten entries; storage serves the whole
    range (legacy) or the four missing runs in four reads (PIP-430)."""
    _check(profile, 0, 2, 5, 8)
