"""The broker settings model: one field per Pulsar key the broker model or a built-in plugin reads.

Each field's alias is the key exactly as a profile spells it (Pulsar's own spelling, or ``sim.*``
for simulator keys). ``json_schema_extra`` carries the display ``section``, the key's ``source``
(``pulsar`` for keys in released Pulsar, ``pip-299`` / ``pip-81`` / ``pip-448`` for proposal keys,
``sim`` for simulator keys) and the ``spec`` passage that describes it. Defaults are Pulsar 4.2.x,
the release the specs take as their baseline; where 5.0 differs the description says so.

Sources and precedence are the loader's business; this module only declares and validates.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from brokerlab.records import JAVA_INT, JAVA_LONG, JavaLong

__all__ = ["SECTIONS", "BrokerSettings", "cache_size_bytes", "field_for_key"]

SECTIONS: tuple[str, ...] = (
    "Simulation",
    "Managed ledger",
    "Dispatcher",
    "Entry cache",
    "Cursors and ack state",
    "Delayed delivery",
    "Cluster",
)

Source = Literal["pulsar", "pip-299", "pip-81", "pip-448", "sim"]
CompressionType = Literal["NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"]

_MB = 1024 * 1024
# The lower bound of a key Pulsar does not bound: its Java type's (the loader checks that type).
_ANY_INT = JAVA_INT.low
_ANY_LONG = JAVA_LONG.low
# Pulsar's maxMessageSize bound: a frame (message plus 10 KiB of padding) must fit a Java int.
_MAX_MESSAGE_SIZE = JAVA_INT.high - 10 * 1024
# Pulsar's getter caps managedLedgerCacheEvictionIntervalMs at MAX_ML_CACHE_EVICTION_INTERVAL_MS.
_MAX_CACHE_EVICTION_INTERVAL_MS = 1_000_000
_CACHE = "pip430-entry-cache.md"
_DELAYED = "delayed-delivery.md"
_ACK = "ack-state.md"


def _meta(section: str, source: Source, spec: str) -> dict[str, Any]:
    assert section in SECTIONS, section
    return {"section": section, "source": source, "spec": spec}


def _sim(spec: str) -> dict[str, Any]:
    return _meta("Simulation", "sim", spec)


def _ml(spec: str) -> dict[str, Any]:
    return _meta("Managed ledger", "pulsar", spec)


def _cache(spec: str) -> dict[str, Any]:
    return _meta("Entry cache", "pulsar", f"{_CACHE} {spec}")


def _ack(spec: str, source: Source = "pulsar") -> dict[str, Any]:
    return _meta("Cursors and ack state", source, f"{_ACK} {spec}")


def _delayed(spec: str, source: Source = "pulsar") -> dict[str, Any]:
    return _meta("Delayed delivery", source, f"{_DELAYED} {spec}")


class BrokerSettings(BaseSettings):
    """Validated broker settings of one profile (Pulsar keys as snake_case attributes)."""

    model_config = SettingsConfigDict(
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
        case_sensitive=True,
    )

    # --- Simulation -------------------------------------------------------------------------
    sim_entry_cache: str = Field(
        default="pip430",
        alias="sim.entryCache",
        description="Name (or alias) of the entry-cache record that manages every topic's cache, "
        "e.g. 'legacy' or 'pip430'.",
        json_schema_extra=_sim("design.md Extension points; pip430-entry-cache.md §0"),
    )
    sim_eviction_predicates: tuple[str, ...] = Field(
        default=(),
        alias="sim.evictionPredicates",
        description="Comma-separated names of extra eviction predicates, appended after the ones "
        "the Pulsar switches select, to the PIP-430 removal-queue chain.",
        json_schema_extra=_sim("design.md Extension points; pip430-entry-cache.md §2.4"),
    )
    sim_cursor_container: str | None = Field(
        default=None,
        alias="sim.cursorContainer",
        description="Name of the active-cursor container. Empty follows "
        "cacheEvictionByExpectedReadCount: 'sorted-list' when true, 'heap' when false.",
        json_schema_extra=_sim("design.md Extension points; pip430-entry-cache.md §4"),
    )
    sim_ack_state_persister: str = Field(
        default="range-count",
        alias="sim.ackStatePersister",
        description="Name of the cursor ack-state persister: Pulsar's range-count limits, the "
        "PIP-299 byte limit or PIP-81 split acknowledgements.",
        json_schema_extra=_sim(f"{_ACK} §0"),
    )
    sim_include: tuple[str, ...] = Field(
        default=(),
        alias="sim.include",
        description="Comma-separated base profiles, applied before this file, whose keys this "
        "file overrides.",
        json_schema_extra=_sim("design.md Profiles"),
    )
    sim_max_direct_memory_mb: int = Field(
        default=4096,
        alias="sim.maxDirectMemoryMB",
        ge=1,
        description="Simulated JVM maximum direct memory, in MiB. Pulsar derives computed defaults "
        "from it, such as managedLedgerCacheSizeMB when that key is empty.",
        json_schema_extra=_sim(f"{_CACHE} §6"),
    )

    # --- Managed ledger ---------------------------------------------------------------------
    managed_ledger_max_entries_per_ledger: int = Field(
        default=50_000,
        alias="managedLedgerMaxEntriesPerLedger",
        ge=1,
        description="Entries written to one data ledger before the managed ledger rolls over to a "
        "new one. It also sets the span of one ledger's long-array ack state. Pulsar sets no "
        "minimum: below 1 a ledger is full at once but rolls over only after "
        "managedLedgerMinLedgerRolloverTimeMinutes, which brokerlab does not model.",
        json_schema_extra=_ml(f"{_ACK} §9"),
    )
    managed_ledger_max_reads_in_flight_size_in_mb: JavaLong = Field(
        default=0,
        alias="managedLedgerMaxReadsInFlightSizeInMB",
        ge=_ANY_LONG,
        le=JAVA_LONG.high // _MB,
        description="Broker-wide limit on the estimated bytes of entries read (from storage or the "
        "cache) and not yet handed to consumers, in MiB; 0 or less disables it, as in Pulsar. A "
        "read that does not fit waits in line; a read estimated above the whole limit gets the "
        "whole limit once nothing else is in flight (Pulsar master's InflightReadsLimiter; the "
        "broker only warns about a limit below dispatcherMaxReadSizeBytes). Above the upper "
        "bound Pulsar's conversion to bytes overflows a Java long, which brokerlab does not "
        "reproduce.",
        json_schema_extra=_ml("issue #23 (storage reads)"),
    )
    managed_ledger_max_reads_in_flight_permits_acquire_timeout_millis: JavaLong = Field(
        default=60_000,
        alias="managedLedgerMaxReadsInFlightPermitsAcquireTimeoutMillis",
        ge=_ANY_LONG,
        description="How long a read may wait in line for the in-flight limit before it fails "
        "(the dispatcher then backs off); 0 or less waits without limit, as in Pulsar.",
        json_schema_extra=_ml("issue #23 (storage reads)"),
    )
    managed_ledger_max_reads_in_flight_permits_acquire_queue_size: int = Field(
        default=50_000,
        alias="managedLedgerMaxReadsInFlightPermitsAcquireQueueSize",
        ge=_ANY_INT,
        le=2**30,
        description="Most reads that may wait in line for the in-flight limit; one more fails "
        "at once. As Pulsar's JCTools SpscArrayQueue, the line holds this many rounded up to a "
        "power of two, and at least 4 (so 4 for any value up to 4); above 2^30 JCTools refuses "
        "the capacity.",
        json_schema_extra=_ml("issue #23 (storage reads)"),
    )
    max_message_size: int = Field(
        default=5_242_880,
        alias="maxMessageSize",
        ge=1,
        le=_MAX_MESSAGE_SIZE,
        description="Largest message accepted, in bytes. A BookKeeper entry (such as a cursor's "
        "ack-state entry) may be at most this plus 10 KiB of frame padding. The upper bound is "
        "Pulsar's; Pulsar sets no minimum, but below 1 byte every message would be refused, "
        "which brokerlab does not model.",
        json_schema_extra=_ml(f"{_ACK} §2.5, §9"),
    )

    # --- Cluster ----------------------------------------------------------------------------
    default_number_of_namespace_bundles: int = Field(
        default=4,
        alias="defaultNumberOfNamespaceBundles",
        ge=1,
        le=1024,
        description="Bundles of a namespace: a topic belongs to the bundle its name hashes into, "
        "and a cluster of brokers (a workload's [cluster] table) places and hands over whole "
        "bundles. Pulsar takes 1 to 2^32 when it creates a namespace; the cap of 1024 is "
        "brokerlab's, to keep a hand-over of a broker's bundles cheap.",
        json_schema_extra=_meta("Cluster", "pulsar", "issue #23 (a cluster of brokers)"),
    )

    # --- Dispatcher -------------------------------------------------------------------------
    dispatcher_max_read_batch_size: int = Field(
        default=100,
        alias="dispatcherMaxReadBatchSize",
        ge=1,
        description="Most entries a subscription's dispatcher reads in one batch, from the cache "
        "or from storage. Pulsar sets no minimum, but its managed cursor refuses a read of fewer "
        "than 1 entry, so no subscription could read; brokerlab refuses such values.",
        json_schema_extra=_meta("Dispatcher", "pulsar", "issue #3 (broker model)"),
    )
    dispatcher_max_read_size_bytes: int = Field(
        default=5 * 1024 * 1024,
        alias="dispatcherMaxReadSizeBytes",
        ge=1,
        description="Most bytes a subscription's dispatcher reads in one normal read: the batch is "
        "capped at this divided by the topic's average entry size (at least one entry). Pulsar "
        "sets no minimum, but -1 makes its multi-consumer dispatchers skip every read (their "
        "no-read marker) and other values below 1 read one entry at a time; brokerlab does not "
        "model these.",
        json_schema_extra=_meta("Dispatcher", "pulsar", "issue #23 (storage reads)"),
    )
    dispatcher_min_read_batch_size: int = Field(
        default=1,
        alias="dispatcherMinReadBatchSize",
        ge=1,
        description="Read batch size a dispatcher falls back to after a failed read; each "
        "successful read doubles it again, up to dispatcherMaxReadBatchSize. Pulsar sets no "
        "minimum, but its managed cursor refuses a read of fewer than 1 entry; brokerlab refuses "
        "such values.",
        json_schema_extra=_meta("Dispatcher", "pulsar", "issue #23 (storage reads)"),
    )
    dispatcher_read_failure_backoff_initial_time_in_ms: int = Field(
        default=15_000,
        alias="dispatcherReadFailureBackoffInitialTimeInMs",
        ge=0,
        description="How long a dispatcher waits before reading again after its first failed "
        "read (here: a read refused by the in-flight reads limiter); doubles with each further "
        "failure, halves with each success. Pulsar sets no minimum; its older Backoff retries at "
        "once below 0, but the backoff builder its Shared dispatcher uses was not checked, so "
        "brokerlab refuses such values.",
        json_schema_extra=_meta("Dispatcher", "pulsar", "issue #23 (storage reads)"),
    )
    dispatcher_read_failure_backoff_max_time_in_ms: int = Field(
        default=60_000,
        alias="dispatcherReadFailureBackoffMaxTimeInMs",
        ge=0,
        description="Longest wait between a failed read and the next attempt. Pulsar sets no "
        "minimum; below the initial wait the initial wait applies, as here, but brokerlab "
        "refuses a negative value, like a negative initial wait.",
        json_schema_extra=_meta("Dispatcher", "pulsar", "issue #23 (storage reads)"),
    )

    # --- Entry cache ------------------------------------------------------------------------
    managed_ledger_cache_size_mb: int | None = Field(
        default=None,
        alias="managedLedgerCacheSizeMB",
        ge=0,
        description="Broker-wide entry-cache limit, in MiB; 0 disables caching. Empty means "
        "max(64, 20% of sim.maxDirectMemoryMB), following the spec (broker.conf's comment "
        "mentions only the 1/5 of direct memory). Pulsar sets no minimum, but disables the cache "
        "only at exactly 0: a negative limit keeps a cache that evicts all it holds, which "
        "brokerlab does not model.",
        json_schema_extra=_cache("§6"),
    )
    managed_ledger_cache_eviction_watermark: float = Field(
        default=0.9,
        alias="managedLedgerCacheEvictionWatermark",
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Fraction of the cache limit that a size eviction frees the cache down to. "
        "Size eviction starts once the cache holds more than 0.98 of the limit. Pulsar does not "
        "check the value: outside [0, 1] the eviction target leaves the limit (above 1 the cache "
        "outgrows it), and NaN or an infinity goes through Java's long cast; brokerlab keeps the "
        "fractions.",
        json_schema_extra=_cache("§2.5, §6"),
    )
    managed_ledger_cache_eviction_interval_ms: JavaLong = Field(
        default=10,
        alias="managedLedgerCacheEvictionIntervalMs",
        ge=1,
        description="Delay between two runs of the periodic cache-eviction task, in milliseconds "
        "(fixed delay); as in Pulsar, values above 1000000 act as 1000000. Pulsar fails to start "
        "below 1 (the task cannot be scheduled).",
        json_schema_extra=_cache("§0.5, §6"),
    )
    managed_ledger_cache_eviction_time_threshold_millis: JavaLong = Field(
        default=1000,
        alias="managedLedgerCacheEvictionTimeThresholdMillis",
        ge=0,
        description="Time to live of a cached entry, in milliseconds. Each TTL extension grants "
        "one more TTL counted from the eviction check. Pulsar sets no minimum: below 0 the expiry "
        "cut-off lies in the future and every check finds every entry expired, which brokerlab "
        "does not model.",
        json_schema_extra=_cache("§2.4, §6"),
    )
    cache_eviction_by_expected_read_count: bool = Field(
        default=True,
        alias="cacheEvictionByExpectedReadCount",
        description="PIP-430 mode: track how many active cursors still expect to read each entry "
        "and use the sorted cursor container with rank queries. False brings back the legacy "
        "rules, including the backlogged-cursor caching keys.",
        json_schema_extra=_cache("§3, §6"),
    )
    managed_ledger_cache_eviction_extend_ttl_of_entries_with_remaining_expected_reads_max_times: int = Field(  # noqa: E501
        default=5,
        alias="managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes",
        ge=_ANY_INT,
        description="How many times an entry that still has expected reads is requeued instead of "
        "expiring (0 or less: never). The counter is shared with the recently-accessed requeues.",
        json_schema_extra=_cache("§2.4, §6"),
    )
    managed_ledger_cache_eviction_extend_ttl_of_recently_accessed: bool = Field(
        default=True,
        alias="managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed",
        description="Requeue, rather than expire, an entry read since the previous eviction check "
        "(LRU-like). Default true as in Pulsar 4.2.x; Pulsar 5.0 defaults to false.",
        json_schema_extra=_cache("§0.3, §2.4, §6"),
    )
    managed_ledger_continue_caching_added_entries_after_last_active_cursor_leaves_millis: (
        JavaLong | None
    ) = Field(
        default=None,
        alias="managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis",
        ge=0,
        description="How long, in milliseconds, newly added entries are still cached after the "
        "last active cursor leaves or the ledger is loaded (PIP-430 mode only). Empty means twice "
        "managedLedgerCacheEvictionTimeThresholdMillis. Pulsar sets no minimum; how its cursor "
        "container reads a negative window was not checked, so brokerlab refuses one.",
        json_schema_extra=_cache("§3.5, §6"),
    )
    cache_eviction_by_mark_deleted_position: bool = Field(
        default=False,
        alias="cacheEvictionByMarkDeletedPosition",
        description="Legacy mode: invalidate cached entries up to the slowest mark-delete "
        "position instead of the slowest read position.",
        json_schema_extra=_cache("§5.3, §6"),
    )
    managed_ledger_cursor_backlogged_threshold: JavaLong = Field(
        default=1000,
        alias="managedLedgerCursorBackloggedThreshold",
        ge=-1,
        description="Entries left to read (from the read position, less individual acks) at "
        "or above which a cursor counts as backlogged and is made inactive, so it no longer keeps "
        "entries cached; -1 turns this off (cursors with consumers stay active), as Pulsar's "
        "configuration documents. Pulsar sets no minimum, but documents no other negative value; "
        "brokerlab refuses them.",
        json_schema_extra=_cache("§3.4, §6"),
    )
    managed_ledger_minimum_backlog_cursors_for_caching: int = Field(
        default=0,
        alias="managedLedgerMinimumBacklogCursorsForCaching",
        ge=_ANY_INT,
        description="Legacy backlogged-cursor caching: how many cursors with a similar backlog "
        "make a backlogged cursor cache its storage reads; below 1 the feature is off.",
        json_schema_extra=_cache("§5.3, §6"),
    )
    managed_ledger_minimum_backlog_entries_for_caching: int = Field(
        default=1000,
        alias="managedLedgerMinimumBacklogEntriesForCaching",
        ge=_ANY_INT,
        description="Legacy backlogged-cursor caching: the smallest backlog, in entries, for a "
        "cursor to be considered (0 or less: every cursor).",
        json_schema_extra=_cache("§5.3, §6"),
    )
    managed_ledger_max_backlog_between_cursors_for_caching: int = Field(
        default=1000,
        alias="managedLedgerMaxBacklogBetweenCursorsForCaching",
        ge=_ANY_INT,
        description="Legacy backlogged-cursor caching: the largest backlog difference, in entries, "
        "for two cursors to count as similar (below 0: no two cursors are).",
        json_schema_extra=_cache("§5.3, §6"),
    )

    # --- Cursors and ack state --------------------------------------------------------------
    managed_ledger_max_unacked_ranges_to_persist: int = Field(
        default=10_000,
        alias="managedLedgerMaxUnackedRangesToPersist",
        ge=_ANY_INT,
        description="Most acknowledgement-hole ranges a cursor persists; ranges above the cap are "
        "kept in memory only and redelivered after a crash. Also the PIP-299 pause threshold. "
        "Below 0 it persists no range, as 0 does, and the pause holds even with no hole, as in "
        "Pulsar. Pulsar 5.0 raises it to 200000; ignored by the PIP-299 byte-limit persister.",
        json_schema_extra=_ack("§0.1, §4, §9"),
    )
    managed_ledger_max_unacked_ranges_to_persist_in_metadata_store: int = Field(
        default=1000,
        alias="managedLedgerMaxUnackedRangesToPersistInMetadataStore",
        ge=_ANY_INT,
        description="On cursor close, state with more ranges than this goes to the cursor ledger, "
        "otherwise to the metadata store; any value below 0 (Pulsar's tests use -1) sends every "
        "close of a writable cursor ledger to the ledger. Pulsar 5.0 raises it to 200000.",
        json_schema_extra=_ack("§3.7, §9"),
    )
    managed_ledger_max_unacked_ranges_to_persist_in_zoo_keeper: int = Field(
        default=-1,
        alias="managedLedgerMaxUnackedRangesToPersistInZooKeeper",
        ge=_ANY_INT,
        description="Deprecated older name of "
        "managedLedgerMaxUnackedRangesToPersistInMetadataStore: a value above 0 is used in its "
        "place; 0 or less (-1 by default) leaves it unset, as in Pulsar.",
        json_schema_extra=_ack("§9"),
    )
    managed_ledger_max_batch_deleted_index_to_persist: int = Field(
        default=10_000,
        alias="managedLedgerMaxBatchDeletedIndexToPersist",
        ge=_ANY_INT,
        description="Most batch-index bitsets (partly acknowledged batches) a cursor persists "
        "(0 or less: none). Pulsar 5.0 raises it to 200000.",
        json_schema_extra=_ack("§4, §9"),
    )
    managed_ledger_persist_individual_ack_as_long_array: bool = Field(
        default=True,
        alias="managedLedgerPersistIndividualAckAsLongArray",
        description="Write individual acks to the cursor ledger as one dense array of 64-bit words "
        "per ledger instead of a list of ranges. Default true since Pulsar 4.1 (false up to 4.0).",
        json_schema_extra=_ack("§2.4, §4.3, §9"),
    )
    managed_ledger_unacked_ranges_open_cache_set_enabled: bool = Field(
        default=True,
        alias="managedLedgerUnackedRangesOpenCacheSetEnabled",
        description="Keep acknowledgement holes in the bitmap-based range set; when false the "
        "long-array form is not used. Removed in Pulsar 5.0.",
        json_schema_extra=_ack("§2.4, §9"),
    )
    acknowledgment_at_batch_index_level_enabled: bool = Field(
        default=True,
        alias="acknowledgmentAtBatchIndexLevelEnabled",
        description="Track and persist acknowledgements of single messages inside a batch; a "
        "batch sent again then carries its ackSet, so only its unacked messages are delivered "
        "(when false, the client alone tracks them and the whole batch is delivered again). "
        "Default true as in Pulsar 4.2.x and 5.0 (false in 4.0.x, as in the broker.conf fixture).",
        json_schema_extra=_ack("§9"),
    )
    dispatcher_pause_on_ack_state_persistent_enabled: bool = Field(
        default=False,
        alias="dispatcherPauseOnAckStatePersistentEnabled",
        description="Pulsar's merged PIP-299 switch: a Shared or Key_Shared dispatcher stops "
        "reading new entries while its cursor has more ack-hole ranges than "
        "managedLedgerMaxUnackedRangesToPersist; replays continue.",
        json_schema_extra=_ack("§5, §9"),
    )
    managed_ledger_default_mark_delete_rate_limit: float = Field(
        default=1.0,
        alias="managedLedgerDefaultMarkDeleteRateLimit",
        ge=0.0,
        allow_inf_nan=True,  # +Infinity, as Pulsar's Guava limiter takes it; ge still refuses NaN
        description="Ack-state persists per second allowed per cursor; calls over the rate only "
        "mark the cursor dirty. 0 turns the limiter off; Infinity lets every call through, as "
        "in Pulsar.",
        json_schema_extra=_ack("§3.4, §9"),
    )
    managed_ledger_cursor_position_flush_seconds: int = Field(
        default=60,
        alias="managedLedgerCursorPositionFlushSeconds",
        ge=1,
        description="Period, in seconds, of the task that persists cursors left dirty by the "
        "mark-delete rate limiter.",
        json_schema_extra=_ack("§3.4, §9"),
    )
    managed_ledger_cursor_max_entries_per_ledger: int = Field(
        default=50_000,
        alias="managedLedgerCursorMaxEntriesPerLedger",
        ge=_ANY_INT,
        description="Entries appended to a cursor ledger before it is rolled over to a new one: "
        "as in Pulsar, the append whose entry id reaches this value rolls it (0 or less: every "
        "append).",
        json_schema_extra=_ack("§3.5, §9"),
    )
    managed_ledger_cursor_rollover_time_in_seconds: int = Field(
        default=14_400,
        alias="managedLedgerCursorRolloverTimeInSeconds",
        ge=_ANY_INT,
        description="Age, in seconds, after which a cursor ledger is rolled over on its next "
        "append: as in Pulsar, an append more than this many whole milliseconds after the last "
        "switch (0 or less: every append a millisecond or more later). Pulsar computes the "
        "milliseconds in a Java int, so above 2147483 s the value wraps; brokerlab wraps it too.",
        json_schema_extra=_ack("§3.5, §9"),
    )
    managed_cursor_info_compression_type: CompressionType = Field(
        default="NONE",
        alias="managedCursorInfoCompressionType",
        description="Codec for cursor state written to the metadata store (one of NONE, LZ4, "
        "ZLIB, ZSTD, SNAPPY). Pulsar 5.0 defaults to LZ4; cursor-ledger entries are never "
        "compressed.",
        json_schema_extra=_ack("§2.4, §9"),
    )
    managed_cursor_info_compression_threshold_in_bytes: JavaLong = Field(
        default=16_384,
        alias="managedCursorInfoCompressionThresholdInBytes",
        ge=_ANY_LONG,
        description="Cursor state written to the metadata store is compressed only when larger "
        "than this many bytes (0 or less: always, as in Pulsar).",
        json_schema_extra=_ack("§2.4, §9"),
    )
    broker_deduplication_enabled: bool = Field(
        default=False,
        alias="brokerDeduplicationEnabled",
        description="Enable message deduplication on every topic; its cursor then persists the "
        "producers' last sequence ids with each snapshot.",
        json_schema_extra=_ack("§7"),
    )
    broker_deduplication_max_number_of_producers: int = Field(
        default=10_000,
        alias="brokerDeduplicationMaxNumberOfProducers",
        ge=_ANY_INT,
        description="Most producers whose last sequence id one deduplication snapshot records "
        "(0 or less: none).",
        json_schema_extra=_ack("§7, §9"),
    )
    broker_deduplication_entries_interval: int = Field(
        default=1000,
        alias="brokerDeduplicationEntriesInterval",
        ge=_ANY_INT,
        description="Persisted entries between two deduplication snapshots (1 or less: a snapshot "
        "after every entry).",
        json_schema_extra=_ack("§7, §9"),
    )
    managed_ledger_max_ack_state_in_bytes_to_persist: int = Field(
        default=5 * _MB,
        alias="managedLedgerMaxAckStateInBytesToPersist",
        ge=1024,
        le=5 * _MB,
        description="PIP-299 byte-limit persister: most bytes of cursor metadata persisted, in "
        "bytes (1 KiB to 5 MiB); only individual acks beyond it are cut. With this persister it "
        "replaces managedLedgerMaxUnackedRangesToPersist, which then neither truncates nor pauses.",
        json_schema_extra=_ack("§0.2, §9", "pip-299"),
    )
    dispatcher_pause_on_ack_persistent_state_enabled: bool = Field(
        default=True,
        alias="dispatcherPauseOnAckPersistentStateEnabled",
        description="PIP-299 byte-limit persister: pause dispatch while the cursor metadata size "
        "cached at the last persist reaches the byte limit; when false the excess is simply not "
        "persisted. Not the same key as dispatcherPauseOnAckStatePersistentEnabled.",
        json_schema_extra=_ack("§0.2, §9", "pip-299"),
    )
    max_individual_ack_cache_bytes_per_cursor: JavaLong = Field(
        default=3 * _MB,
        alias="maxIndividualAckCacheBytesPerCursor",
        ge=0,
        description="PIP-81 persister: memory cap, in bytes, on one cursor's per-ledger ack state; "
        "least recently used ledgers are swapped out to the cursor ledger beyond it.",
        json_schema_extra=_ack("§0.3, §9", "pip-81"),
    )
    enable_lru_cache_max_unacked_ranges: bool = Field(
        default=True,
        alias="enableLruCacheMaxUnackedRanges",
        description="PIP-81 persister: apply maxIndividualAckCacheBytesPerCursor with LRU "
        "swapping; when false all ack state stays in memory (the multi-entry format still "
        "applies).",
        json_schema_extra=_ack("§0.3, §9", "pip-81"),
    )

    # --- Delayed delivery -------------------------------------------------------------------
    delayed_delivery_enabled: bool = Field(
        default=True,
        alias="delayedDeliveryEnabled",
        description="Hold messages with a delivery time until it is due; when false they are "
        "delivered at once and nothing is tracked.",
        json_schema_extra=_delayed("§5"),
    )
    delayed_delivery_tracker_factory_class_name: str = Field(
        default="org.apache.pulsar.broker.delayed.InMemoryDelayedDeliveryTrackerFactory",
        alias="delayedDeliveryTrackerFactoryClassName",
        description="Delayed-delivery tracker factory: a record name or Pulsar class name, e.g. "
        "org.apache.pulsar.broker.delayed.InMemoryTopicDelayedDeliveryTrackerFactory for PIP-448.",
        json_schema_extra=_delayed("§0.2, §5"),
    )
    delayed_delivery_tick_time_millis: JavaLong = Field(
        default=1000,
        alias="delayedDeliveryTickTimeMillis",
        ge=1,
        description="Delayed-delivery tick, in milliseconds: the timer wheel's tick, the minimum "
        "spacing of tracker wake-ups, the early-delivery allowance in non-strict mode, and the "
        "basis of the bucket precision.",
        json_schema_extra=_delayed("§2, §3.3, §5"),
    )
    is_delayed_delivery_deliver_at_time_strict: bool = Field(
        default=False,
        alias="isDelayedDeliveryDeliverAtTimeStrict",
        description="When true a delayed message is never delivered before its delivery time; "
        "when false it may go out up to one tick early.",
        json_schema_extra=_delayed("§2, §3.3, §5"),
    )
    delayed_delivery_fixed_delay_detection_lookahead: JavaLong = Field(
        default=50_000,
        alias="delayedDeliveryFixedDelayDetectionLookahead",
        ge=_ANY_LONG,
        description="Number of buffered delayed messages, all in delivery-time order, after which "
        "the dispatcher stops reading new entries until some are due; 0 or less disables the "
        "pause, as in Pulsar.",
        json_schema_extra=_delayed("§3.9, §5"),
    )
    delayed_delivery_prune_min_interval_millis: JavaLong = Field(
        default=0,
        alias="delayedDeliveryPruneMinIntervalMillis",
        ge=_ANY_LONG,
        description="PIP-448: minimum time between two prunes of a topic's shared delayed index, "
        "in milliseconds; 0 or less means adaptive, the tick clamped to 5..50 ms.",
        json_schema_extra=_delayed("§0.2, §4.4, §5", "pip-448"),
    )
    delayed_delivery_prune_eligible_ratio: float = Field(
        default=0.5,
        alias="delayedDeliveryPruneEligibleRatio",
        allow_inf_nan=True,  # any double, as the PIP-448 draft takes it
        description="PIP-448: share of a topic's subscriptions that must have a due message before "
        "a timer firing tries to prune. As in the PIP-448 draft, any value is clamped into "
        "[0, 1] and NaN means 0.5.",
        json_schema_extra=_delayed("§0.2, §4.4, §5", "pip-448"),
    )
    delayed_delivery_topic_manager_idle_millis: JavaLong = Field(
        default=0,
        alias="delayedDeliveryTopicManagerIdleMillis",
        ge=_ANY_LONG,
        description="PIP-448: how long, in milliseconds, a topic's tracker manager with no "
        "subscriptions is kept for reuse; 0 or less removes it at once.",
        json_schema_extra=_delayed("§0.2, §4.6, §5", "pip-448"),
    )

    @field_validator("sim_eviction_predicates", "sim_include", mode="before")
    @classmethod
    def _split_comma_list(cls, value: object) -> object:
        """Accept a list as a profile writes it: comma-separated, blanks ignored."""
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    # --- Derived values ---------------------------------------------------------------------
    @property
    def cache_size_bytes(self) -> int:
        """Effective entry-cache limit in bytes (``managedLedgerCacheSizeMB``, or its computed
        default from ``sim.maxDirectMemoryMB``)."""
        return cache_size_bytes(self.managed_ledger_cache_size_mb, self.sim_max_direct_memory_mb)

    @property
    def cache_eviction_interval_ms(self) -> int:
        """Effective period of the cache-eviction task (``managedLedgerCacheEvictionIntervalMs``,
        capped as Pulsar's getter caps it)."""
        return min(self.managed_ledger_cache_eviction_interval_ms, _MAX_CACHE_EVICTION_INTERVAL_MS)

    @property
    def continue_caching_window_ms(self) -> int:
        """Effective continue-caching window in milliseconds (empty: twice the cache TTL)."""
        window = self.managed_ledger_continue_caching_added_entries_after_last_active_cursor_leaves_millis  # noqa: E501
        if window is None:
            return 2 * self.managed_ledger_cache_eviction_time_threshold_millis
        return window

    @property
    def cursor_container_name(self) -> str:
        """The active-cursor container to use: ``sim.cursorContainer``, else by cache mode."""
        if self.sim_cursor_container is not None:
            return self.sim_cursor_container
        return "sorted-list" if self.cache_eviction_by_expected_read_count else "heap"

    @property
    def unacked_ranges_to_persist_in_metadata_store(self) -> int:
        """Effective close-time metadata-store threshold (the deprecated ZooKeeper key wins when
        above 0)."""
        legacy = self.managed_ledger_max_unacked_ranges_to_persist_in_zoo_keeper
        if legacy > 0:  # Pulsar's getter: 0 leaves the metadata-store key in effect too
            return legacy
        return self.managed_ledger_max_unacked_ranges_to_persist_in_metadata_store


def cache_size_bytes(cache_size_mb: int | None, max_direct_memory_mb: int) -> int:
    """The entry-cache limit in bytes: ``managedLedgerCacheSizeMB``, or when it is empty
    Pulsar's default of a fifth of the direct memory (at least 64 MB)."""
    mb = max(64, max_direct_memory_mb // 5) if cache_size_mb is None else cache_size_mb
    return mb * _MB


_BY_KEY: dict[str, tuple[str, FieldInfo]] = {
    info.alias or name: (name, info) for name, info in BrokerSettings.model_fields.items()
}


def field_for_key(key: str) -> tuple[str, FieldInfo] | None:
    """The (field name, field info) of a profile key spelled exactly as in a profile, or None."""
    return _BY_KEY.get(key)
