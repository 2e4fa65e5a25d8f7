"""Metrics: what each reported number means, and the registry of every declared metric.

A metric belongs to whoever produces it. The framework declares the broker model's own metrics
(:data:`FRAMEWORK_METRICS`: messages, latency, storage reads, publishing, invariants, and the
vocabulary every plugin of an extension point shares, such as an entry cache's hits and misses);
each plugin declares its own through the ``brokerlab_metrics`` hook. The plugin host assembles the
union of what the loaded plugins declare into a :class:`MetricRegistry`; a name declared twice is
an error naming both plugins. Results, reports and ``docs/metrics.md`` are built from it.

:data:`METRICS` is the registry in effect: the one a caller set with :func:`using` (the CLI sets
its host's, a report the one recorded with its results), else the installed plugins'.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Literal

__all__ = [
    "FRAMEWORK_METRICS",
    "FRAMEWORK_PLUGIN",
    "METRICS",
    "Declared",
    "Metric",
    "MetricRegistry",
    "current",
    "installed",
    "invariants",
    "metric",
    "metrics_of",
    "using",
]

Kind = Literal["counter", "gauge", "ratio", "latency", "summary"]
Aggregation = Literal["mean", "sum", "max", "min"]


@dataclass(frozen=True)
class Metric:
    """A reported number, as its producer declares it.

    ``kind``: a ``counter`` adds up over the run (and over a cluster's brokers), a ``gauge`` is a
    peak or end value, a ``ratio`` is computed at the end, a ``latency`` or ``summary`` is a
    statistic (percentile, mean) of a distribution. ``invariant`` metrics must be zero in every
    correct run. ``simulator`` names the broker model whose runs report it: other simulators'
    runs leave it empty (null). A metric with ``reported_when`` is reported only by runs that meet
    that condition (a mechanism the workload switches on); every other declared metric appears in
    every run of its simulator, null when nothing reported it. ``higher_is_better`` tells a report
    which way to rank configurations (a hit ratio, a rate achieved); any other metric is a cost.
    ``aggregation`` says how the values of several seeds combine into one (``summary.csv`` gives
    it beside the mean and its interval). ``ratio_of`` makes the metric a ratio the broker model
    computes itself once the counters are final (also over a cluster's brokers):
    ``(numerator, (denominator terms...))``, null when one of them was not reported, 0 when the
    denominator is.
    """

    name: str
    unit: str
    kind: Kind
    description: str
    group: str
    invariant: bool = False
    simulator: str = "pulsar"
    reported_when: str = ""
    higher_is_better: bool = False
    aggregation: Aggregation = "mean"
    ratio_of: tuple[str, tuple[str, ...]] | None = None

    def as_json(self) -> dict[str, Any]:
        """Every field, as plain JSON data (how results folders record the metric)."""
        data = asdict(self)
        data["ratio_of"] = None if self.ratio_of is None else [self.ratio_of[0], *self.ratio_of[1]]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Metric:
        """The metric :meth:`as_json` wrote; fields it does not know are ignored."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        ratio = known.pop("ratio_of", None)
        if ratio:
            known["ratio_of"] = (str(ratio[0]), tuple(str(t) for t in ratio[1:]))
        return cls(**known)


# The metrics of one group share its group and reporting condition.
_publishing = partial(
    Metric,
    group="publishing",
    reported_when="a topic sets max_pending_messages or storage.write_latency_ms is not zero",
)

FRAMEWORK_METRICS: tuple[Metric, ...] = (
    # -- messages ------------------------------------------------------------------------------
    Metric(
        "published",
        "messages",
        "counter",
        "Messages published by producers: persisted to the managed ledgers (with a write latency, once their write completed), the backlog written before time zero included.",
        "messages",
    ),
    Metric(
        "published_entries",
        "entries",
        "counter",
        "Entries (batches) written to the managed ledgers.",
        "messages",
    ),
    Metric(
        "delivered",
        "messages",
        "counter",
        "Messages dispatched to consumers, redeliveries included.",
        "messages",
    ),
    Metric(
        "acked",
        "messages",
        "counter",
        "Messages acknowledged by consumers; a message redelivered after a restart and acknowledged again counts again.",
        "messages",
    ),
    Metric(
        "redelivered",
        "messages",
        "counter",
        "Messages dispatched again that were delivered and not acknowledged: after a negative ack, because their consumer left, or after a broker restart or unload (acknowledged ones a restart forgot: see redelivered_after_restart).",
        "messages",
    ),
    Metric(
        "redelivered_after_restart",
        "messages",
        "counter",
        "Messages acknowledged before a broker restart and dispatched again after it, because the persisted ack state did not record them.",
        "messages",
    ),
    Metric(
        "unacked_at_end",
        "messages",
        "gauge",
        "Messages not acknowledged when the run ends, summed over subscriptions as delivered and acked are: a message two subscriptions never acknowledged counts twice.",
        "messages",
    ),
    Metric(
        "lost",
        "messages",
        "counter",
        "Messages a subscription will never receive: recovered as acknowledged without having been acknowledged. Must be zero.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "delivered_after_ack",
        "messages",
        "counter",
        "Messages dispatched to a subscription after that subscription acknowledged them (outside a restart). Must be zero.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "delayed_early_deliveries",
        "messages",
        "counter",
        "Delayed messages handed out before their deliver-at time (strict mode) or more than one tick of the subscription's own before it (non-strict). Must be zero for a faithful tracker.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "latency_p50_ms",
        "ms",
        "latency",
        "Median end-to-end latency (publish to consumer processing), virtual time.",
        "latency",
    ),
    Metric(
        "latency_p99_ms",
        "ms",
        "latency",
        "99th percentile end-to-end latency, virtual time.",
        "latency",
    ),
    # -- entry cache ---------------------------------------------------------------------------
    Metric("cache_hits", "entries", "counter", "Entries served from the entry cache.", "cache"),
    Metric(
        "cache_misses", "entries", "counter", "Entries the entry cache could not serve.", "cache"
    ),
    Metric(
        "cache_hit_ratio",
        "ratio",
        "ratio",
        "cache_hits / (cache_hits + cache_misses).",
        "cache",
        higher_is_better=True,
        ratio_of=("cache_hits", ("cache_hits", "cache_misses")),
    ),
    Metric(
        "storage_entries_read",
        "entries",
        "counter",
        "Entries read from storage (BookKeeper reads).",
        "cache",
    ),
    Metric("storage_bytes_read", "bytes", "counter", "Bytes read from storage.", "cache"),
    Metric(
        "unavailable_ms",
        "ms",
        "counter",
        "Time topics were unavailable during restart and unload outages (outage_s), summed over "
        "topics.",
        "messages",
    ),
    Metric(
        "brokers",
        "brokers",
        "gauge",
        "Brokers in the cluster (the workload's [cluster] table). With more than one, counters "
        "add up over brokers and gauges are the largest broker's.",
        "messages",
    ),
    Metric(
        "topic_moves",
        "topics",
        "counter",
        "Topics handed over to another broker when a broker's outage ended, or moved with their "
        "bundle by an unload of a topic.",
        "messages",
    ),
    Metric(
        "held_entries",
        "entries",
        "counter",
        "Entries producers held while their topic was unavailable, persisted once it was back.",
        "messages",
    ),
    Metric(
        "storage_read_ops",
        "reads",
        "counter",
        "Read operations sent to storage (each reads one or more entries of one ledger).",
        "cache",
    ),
    Metric(
        "storage_entries_shared",
        "entries",
        "counter",
        "Entries a read took from another read of the same ledger already under way, instead of "
        "reading them from storage again (Pulsar's PendingReadsManager). Zero when storage reads "
        "take no time.",
        "reads",
    ),
    Metric(
        "storage_wait_ms",
        "ms",
        "counter",
        "Time dispatchers' reads were under way, from issue to hand-over, summed over reads: "
        "waiting in the in-flight limiter's line and for storage.",
        "reads",
    ),
    Metric(
        "storage_reads_in_flight_peak",
        "reads",
        "gauge",
        "Most storage read operations under way at once on the broker.",
        "reads",
    ),
    Metric(
        "reads_in_flight_peak_bytes",
        "bytes",
        "gauge",
        "Peak of the in-flight reads limiter's estimated bytes held "
        "(managedLedgerMaxReadsInFlightSizeInMB; zero when it is disabled).",
        "reads",
    ),
    Metric(
        "read_permit_wait_ms",
        "ms",
        "counter",
        "Time reads waited in the in-flight reads limiter's line, summed over reads.",
        "reads",
    ),
    Metric(
        "read_failures",
        "reads",
        "counter",
        "Reads that failed because the in-flight reads limiter timed them out or had no room in "
        "its line; each makes its dispatcher back off (dispatcherReadFailureBackoff*).",
        "reads",
    ),
    Metric("cache_inserts", "entries", "counter", "Entries inserted into the cache.", "cache"),
    Metric(
        "cache_peak_bytes", "bytes", "gauge", "Largest number of bytes the cache held.", "cache"
    ),
    Metric(
        "cache_max_overshoot_bytes",
        "bytes",
        "gauge",
        "Largest excess of cached bytes over the configured limit.",
        "cache",
    ),
    Metric(
        "cache_evictions_time",
        "entries",
        "counter",
        "Entries evicted because their time to live ran out.",
        "cache",
    ),
    Metric("cache_evictions_size", "entries", "counter", "Entries evicted to free space.", "cache"),
    Metric(
        "cache_evictions_invalidation",
        "entries",
        "counter",
        "Entries removed because every reader moved past them.",
        "cache",
    ),
    Metric(
        "cache_evictions_clear",
        "entries",
        "counter",
        "Entries removed when a cache was cleared or closed.",
        "cache",
    ),
    Metric(
        "cache_evictions_ledger_deleted",
        "entries",
        "counter",
        "Entries removed with a deleted or trimmed ledger.",
        "cache",
    ),
    Metric(
        "cache_eviction_work",
        "entries",
        "counter",
        "Queue slots or cached entries examined by eviction passes (a CPU proxy).",
        "cache",
    ),
    # -- delayed delivery ----------------------------------------------------------------------
    Metric(
        "delayed_messages",
        "messages",
        "counter",
        "Messages the delayed-delivery tracker accepted.",
        "delayed",
    ),
    Metric(
        "delayed_max_earliness_ms",
        "ms",
        "gauge",
        "Largest earliness of an early delayed delivery.",
        "delayed",
    ),
    Metric(
        "delayed_duplicate_deliveries",
        "messages",
        "counter",
        "Positions returned to a subscription more often than that subscription added them.",
        "delayed",
    ),
    Metric(
        "delayed_spurious_available",
        "calls",
        "counter",
        "has-message-available answered true, then nothing was scheduled.",
        "delayed",
    ),
    Metric(
        "delayed_foreign_tick_changes",
        "events",
        "counter",
        "A subscription's tick changed without a tick change of its own.",
        "delayed",
    ),
    Metric(
        "delayed_index_bytes",
        "bytes",
        "gauge",
        "Peak bytes of the delayed-delivery index (shared index, or the sum over trackers).",
        "delayed",
    ),
    Metric(
        "delayed_index_positions",
        "positions",
        "gauge",
        "Peak (bucket, position) pairs stored in the index.",
        "delayed",
    ),
    Metric(
        "delayed_pulsar_memory_bytes",
        "bytes",
        "gauge",
        "Peak of the trackers' own memory estimate, as Pulsar reports it.",
        "delayed",
    ),
    Metric(
        "delayed_timer_wakeups",
        "wakeups",
        "counter",
        "Dispatcher read wake-ups requested by delayed-delivery timers.",
        "delayed",
    ),
    # -- ack state -----------------------------------------------------------------------------
    Metric(
        "ack_persists",
        "writes",
        "counter",
        "Cursor ack-state writes (cursor-ledger entries and metadata-store nodes).",
        "ack_state",
    ),
    Metric(
        "ack_persisted_bytes",
        "bytes",
        "counter",
        "Bytes of every cursor ack-state write.",
        "ack_state",
    ),
    Metric(
        "ack_ranges_dropped",
        "ranges",
        "counter",
        "Acked ranges left out of persists because of a limit, summed over persists.",
        "ack_state",
    ),
    Metric(
        "ack_bytes_per_ack",
        "bytes",
        "ratio",
        "Ack-state bytes written per acknowledgement.",
        "ack_state",
        ratio_of=("ack_persisted_bytes", ("acked",)),
    ),
    Metric(
        "ack_max_ranges",
        "ranges",
        "gauge",
        "Largest individually-acked range count of any cursor.",
        "ack_state",
    ),
    Metric(
        "dispatch_paused_ms",
        "ms",
        "counter",
        "Time dispatchers spent paused by the ack-state persister, summed over subscriptions.",
        "ack_state",
    ),
    Metric("broker_restarts", "events", "counter", "Broker restarts simulated.", "ack_state"),
    Metric(
        "dedup_producers_lost",
        "producers",
        "counter",
        "With deduplication on: producers whose last sequence id a restart or unload lost (not in the recovered pulsar.dedup snapshot, no entry after it).",
        "ack_state",
    ),
    # -- publishing: closed-loop producers and write latency -----------------------------------
    _publishing(
        "publish_offered",
        "messages",
        "counter",
        "Messages the producers' arrival processes offered while publishing: published, rejected, still waiting for room in a blocked producer's queue when producers stopped, or still being written when the run ended.",
    ),
    _publishing(
        "publish_rate_achieved",
        "messages/s",
        "ratio",
        "Messages sent while publishing and persisted by the end of the run, per second of the publishing period (time zero until the last producer stops). Below the offered rate when producers wait for their pending sends or reject sends.",
        higher_is_better=True,
    ),
    _publishing(
        "publish_latency_p50_ms",
        "ms",
        "latency",
        "Median publish latency: from a message's send to its entry being persisted (its write and every earlier write of the topic completed), virtual time, 1 us resolution.",
    ),
    _publishing(
        "publish_latency_p99_ms",
        "ms",
        "latency",
        "99th percentile publish latency, virtual time, 1 us resolution.",
    ),
    _publishing(
        "publish_rejected",
        "messages",
        "counter",
        "Messages whose send failed at once because their producer had max_pending_messages pending (block_if_queue_full = false).",
    ),
    _publishing(
        "producer_blocked_ms",
        "ms",
        "counter",
        "Time producers spent blocked in send, their queue of pending messages full (block_if_queue_full = true), summed over producers.",
    ),
)
"""The broker model's own metrics, declared by the framework's ``pulsar`` simulator."""

FRAMEWORK_PLUGIN = "brokerlab.broker.simulator"
"""The name under which the framework's own simulator (and so its metrics) is registered."""


@dataclass(frozen=True)
class Declared:
    """A metric with the plugin that declared it: ``plugin`` is its name in the host (the
    entry-point name, or the module of ``-p``), ``source`` its distribution and version."""

    metric: Metric
    plugin: str
    source: str


class MetricRegistry(Mapping[str, Metric]):
    """Declared metrics by name, in declaration order, each with the plugin that declared it."""

    def __init__(self, declared: Iterable[Declared] = ()) -> None:
        self._declared: dict[str, Declared] = {}
        for entry in declared:
            other = self._declared.get(entry.metric.name)
            if other is not None:
                raise ValueError(
                    f"the metric {entry.metric.name!r} is declared twice: by {other.plugin} "
                    f"({other.source}) and by {entry.plugin} ({entry.source})"
                )
            self._declared[entry.metric.name] = entry

    def __getitem__(self, name: str) -> Metric:
        return self._declared[name].metric

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)

    def __repr__(self) -> str:
        return f"MetricRegistry({len(self)} metrics)"

    def declared(self) -> tuple[Declared, ...]:
        """Every declaration, in order."""
        return tuple(self._declared.values())

    def owner(self, name: str) -> Declared:
        """The declaration of ``name``, with its plugin; a KeyError names an unknown metric."""
        try:
            return self._declared[name]
        except KeyError:
            raise KeyError(f"metric {name!r} is not declared by any loaded plugin") from None

    def of(self, simulator: str, *, conditional: bool = True) -> list[str]:
        """Names of the metrics ``simulator``'s runs report, in order; without the ones reported
        only under a condition when ``conditional`` is false (what every run reports)."""
        return [
            m.name
            for m in self.values()
            if m.simulator == simulator and (conditional or not m.reported_when)
        ]

    def invariants(self) -> list[str]:
        """Names of the metrics that must be zero in every correct run."""
        return [m.name for m in self.values() if m.invariant]

    def as_json(self) -> dict[str, dict[str, Any]]:
        """Name -> the metric's fields and its ``owner`` (plugin) and ``source``: what a results
        folder records, so a report needs no plugin installed to read its metrics."""
        return {
            name: {**d.metric.as_json(), "owner": d.plugin, "source": d.source}
            for name, d in self._declared.items()
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, Any]]) -> MetricRegistry:
        """The registry :meth:`as_json` wrote."""
        return cls(
            Declared(
                Metric.from_json({**fields, "name": name}),
                str(fields.get("owner", "")),
                str(fields.get("source", "")),
            )
            for name, fields in data.items()
        )

    def merged(self, newer: MetricRegistry) -> MetricRegistry:
        """This registry with ``newer``'s declarations added, ``newer``'s winning on a name."""
        entries = {**self._declared, **{d.metric.name: d for d in newer.declared()}}
        return MetricRegistry(entries.values())


_ACTIVE: ContextVar[MetricRegistry | None] = ContextVar("brokerlab_metrics", default=None)


@functools.cache
def _installed(disabled: str) -> MetricRegistry:
    from brokerlab.host import PluginHost  # late: the host's modules import this one

    return PluginHost().metrics()


def installed() -> MetricRegistry:
    """The registry of the installed plugins (entry points, less ``BROKERLAB_DISABLE_PLUGINS``)."""
    return _installed(os.environ.get("BROKERLAB_DISABLE_PLUGINS", ""))


def current() -> MetricRegistry:
    """The registry in effect: the innermost :func:`using`'s, else :func:`installed`."""
    return _ACTIVE.get() or installed()


@contextmanager
def using(registry: MetricRegistry) -> Iterator[MetricRegistry]:
    """Make ``registry`` the one :data:`METRICS` and :func:`current` answer with, inside."""
    token = _ACTIVE.set(registry)
    try:
        yield registry
    finally:
        _ACTIVE.reset(token)


class _Current(Mapping[str, Metric]):
    """:func:`current`, as a mapping that follows it."""

    def __getitem__(self, name: str) -> Metric:
        return current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(current())

    def __len__(self) -> int:
        return len(current())

    def __repr__(self) -> str:
        return f"METRICS({current()!r})"


METRICS: Mapping[str, Metric] = _Current()
"""Every metric of the registry in effect (:func:`current`), by name."""


def metric(name: str) -> Metric:
    """The declared metric ``name``; a KeyError names the unknown metric."""
    return current().owner(name).metric


def metrics_of(simulator: str, *, conditional: bool = True) -> list[str]:
    """:meth:`MetricRegistry.of` of the registry in effect."""
    return current().of(simulator, conditional=conditional)


def invariants() -> list[str]:
    """Names of the metrics of the registry in effect that must be zero in every correct run."""
    return current().invariants()
