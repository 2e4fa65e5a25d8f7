"""A small Kafka tiered-storage model around one broker's remote index cache.

It simulates what the cache of one observed broker sees: partitions whose rolled segments are
tiered to remote storage, consumers fetching old data (each remote fetch looks up the segment's
indexes in the cache), retention deleting remote segments on the leader's remote-log-manager
cadence, and leadership moving between this broker and others. Only the leader deletes remote
segments and clears its cached entries; a broker that is not the leader is never told, so its
cached entries of deleted segments become *stale*: the motivation of KAFKA-19970 (spec §6).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from brokerlab.broker.events import EventLoop
from brokerlab.broker.streams import stream
from brokerlab.protocols import SimulationOutput, SimulationRequest
from brokerlab_plugins.kafka_remote_index.cache import (
    IndexType,
    RemoteIndexCache,
    RemoteResourceNotFound,
    RemoteSegment,
    RemovalCause,
)
from brokerlab_plugins.kafka_remote_index.model import (
    SIMULATOR,
    ConsumerGroup,
    IndexSizes,
    KafkaEvent,
    KafkaWorkload,
    KibRange,
    PartitionGroup,
)
from brokerlab_plugins.kafka_remote_index.settings import NAMESPACE, KafkaIndexCacheSettings

__all__ = ["TieredStorageModel", "run_tiered_storage"]

_NS = 1_000_000_000
_KIB = 1024
_OFFSETS_PER_SEGMENT = 1_000_000  # only orders the segments' start offsets


def _ns(seconds: float) -> int:
    return round(seconds * _NS)


@dataclass(slots=True)
class _Segment:
    index: int  # the segment holds data time [index * interval, (index + 1) * interval)
    remote: RemoteSegment


@dataclass(slots=True)
class _Partition:
    name: str
    group: PartitionGroup
    led_here: bool
    replica_here: bool
    segments: deque[_Segment] = field(default_factory=deque)  # remote ones, oldest first

    def segment_at(self, data_s: float) -> _Segment | None:
        if not self.segments:
            return None
        index = math.floor(data_s / self.group.segment_interval_s)
        first = self.segments[0].index
        if index < first or index - first >= len(self.segments):
            return None
        return self.segments[index - first]


@dataclass(slots=True)
class _Reader:
    partition: _Partition
    position_s: float  # the data time the next fetch reads
    active: bool = True


@dataclass(slots=True)
class _Stale:
    deleted_ns: int
    weight: int


class TieredStorageModel:
    """One run: the observed broker's cache, its partitions, readers and retention."""

    def __init__(
        self, workload: KafkaWorkload, settings: KafkaIndexCacheSettings, seed: int
    ) -> None:
        self.workload = workload
        self.settings = settings
        self.seed = seed
        self.loop = EventLoop()
        self.cache = RemoteIndexCache(
            max_bytes=settings.total_size_bytes,
            ttl_ms=settings.ttl_ms,
            policy=settings.policy,
            clock=self.loop,
            scheduler=self.loop,
            storage=self,
            seed=int(stream(seed, "kafka", "policy").integers(0, 2**63)),
            file_delete_delay_ms=settings.file_delete_delay_ms,
            maintenance_every_reads=settings.maintenance_every_reads,
            on_removed=self._removed,
        )
        self.partitions: dict[str, list[_Partition]] = {}
        self.fetched_bytes = 0
        self.segments_deleted = 0
        self.leadership_changes = 0
        self.stale: dict[str, _Stale] = {}
        self.stale_bytes = 0
        self.stale_byte_ns = 0
        self._stale_since_ns = 0
        self.residences_ns: list[int] = []
        self.samples: list[dict[str, float]] = []

    # ---- the remote storage manager the cache fetches from ----------------------------------

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> int:
        if index_type is IndexType.TRANSACTION and segment.txn_missing:
            raise RemoteResourceNotFound(segment.uuid)
        size = (
            segment.offset_index_bytes,
            segment.time_index_bytes,
            segment.txn_index_bytes,
        )[index_type.value]
        self.fetched_bytes += size
        return size

    # ---- building --------------------------------------------------------------------------

    def build(self) -> None:
        loop = self.loop
        for group in self.workload.partitions:
            members = [
                _Partition(f"{group.name}-{i}", group, group.led_here, group.replica_here)
                for i in range(group.count)
            ]
            self.partitions[group.name] = members
            interval = group.segment_interval_s
            for partition in members:
                sizes = stream(self.seed, "kafka", "segments", partition.name)
                history = math.ceil(group.history_s / interval)
                for index in range(-history, 0):
                    partition.segments.append(self._segment(partition, index, group.index, sizes))
                loop.call_every(
                    _ns(interval),
                    _ns(interval),
                    self._tierer(partition, sizes),
                )
        for consumer in self.workload.consumers:
            self._start_consumer(consumer)
        for event in self.workload.events:
            loop.at(_ns(event.at_s), self._event_action(event))
        task = self.settings.task_interval_ms * 1_000_000
        loop.call_every(task, task, self._retention)
        sample = _ns(self.settings.sample_interval_s)
        loop.call_every(0, sample, self._sample)

    def _segment(
        self,
        partition: _Partition,
        index: int,
        sizes: IndexSizes,
        rng: np.random.Generator,
    ) -> _Segment:
        def draw(kib: KibRange) -> int:
            return int(rng.integers(kib.min, kib.max + 1)) * _KIB

        history = math.ceil(partition.group.history_s / partition.group.segment_interval_s)
        txn_missing = bool(rng.random() < sizes.txn_missing_fraction)
        remote = RemoteSegment(
            uuid=f"{partition.name}:{index}",
            start_offset=(index + history) * _OFFSETS_PER_SEGMENT,
            offset_index_bytes=draw(sizes.offset_kib),
            time_index_bytes=draw(sizes.time_kib),
            txn_index_bytes=0 if txn_missing else draw(sizes.txn_kib),
            txn_missing=txn_missing,
        )
        return _Segment(index, remote)

    def _tierer(self, partition: _Partition, rng: np.random.Generator) -> Callable[[], None]:
        group = partition.group
        sizes = group.new_index or group.index

        def tier() -> None:
            # The segment that just rolled (data up to now) is copied to remote storage.
            index = round(self.loop.now_ns() / _NS / group.segment_interval_s) - 1
            partition.segments.append(self._segment(partition, index, sizes, rng))

        return tier

    # ---- consumers -------------------------------------------------------------------------

    def _start_consumer(self, consumer: ConsumerGroup) -> None:
        jitter = stream(self.seed, "kafka", "consumer", consumer.name)
        members = self.partitions[consumer.partitions]
        interval = members[0].group.segment_interval_s
        readers = [
            _Reader(p, consumer.start_s - consumer.from_age_s + float(jitter.random()) * interval)
            for p in members
        ]
        step = interval / consumer.fetches_per_segment
        period = _ns(1.0 / consumer.fetch_rate)
        stop_ns = None if consumer.stop_s is None else _ns(consumer.stop_s)

        def fetch_round() -> None:
            now_ns = self.loop.now_ns()
            if stop_ns is not None and now_ns >= stop_ns:
                return
            now = now_ns / _NS
            alive = False
            for reader in readers:
                if reader.active:
                    self._fetch(consumer, reader, now, step)
                    alive = alive or reader.active
            if alive:
                self.loop.at(now_ns + period, fetch_round)

        self.loop.at(_ns(consumer.start_s), fetch_round)

    def _fetch(self, consumer: ConsumerGroup, reader: _Reader, now: float, step: float) -> None:
        partition = reader.partition
        if reader.position_s >= now - consumer.to_age_s:
            if consumer.at_end != "loop":
                reader.active = False  # tailing reads the local log from here on; or it stopped
                return
            reader.position_s = now - consumer.from_age_s
        group = partition.group
        tiered_until = math.floor(now / group.segment_interval_s) * group.segment_interval_s
        if reader.position_s >= tiered_until or reader.position_s >= now - group.local_retention_s:
            reader.position_s = min(reader.position_s + step, now)  # a local read
            return
        segment = partition.segment_at(reader.position_s)
        if segment is None:
            if not partition.segments:
                return
            # Retention deleted the position: the consumer resets to the earliest offset.
            segment = partition.segments[0]
            reader.position_s = segment.index * group.segment_interval_s
        if partition.led_here or (consumer.read_from_replica and partition.replica_here):
            self.cache.get_index_entry(segment.remote)
        reader.position_s += step

    # ---- retention, leadership, resize -----------------------------------------------------

    def _retention(self) -> None:
        now = self.loop.now_ns() / _NS
        for members in self.partitions.values():
            for partition in members:
                group = partition.group
                horizon = now - group.retention_s
                segments = partition.segments
                while segments and (segments[0].index + 1) * group.segment_interval_s <= horizon:
                    uuid = segments.popleft().remote.uuid
                    self.segments_deleted += 1
                    if partition.led_here:
                        self.cache.remove(uuid)  # the leader clears its own entries
                    else:
                        self._mark_stale(uuid)

    def _mark_stale(self, uuid: str) -> None:
        entry = self.cache.peek(uuid)
        if entry is None or uuid in self.stale:
            return
        self._advance_stale_integral()
        self.stale[uuid] = _Stale(self.loop.now_ns(), entry.weight)
        self.stale_bytes += entry.weight

    def _removed(self, uuid: str, cause: RemovalCause, weight: int) -> None:
        stale = self.stale.pop(uuid, None)
        if stale is None:
            return
        self._advance_stale_integral()
        self.stale_bytes -= stale.weight
        self.residences_ns.append(self.loop.now_ns() - stale.deleted_ns)

    def _advance_stale_integral(self) -> None:
        now = self.loop.now_ns()
        self.stale_byte_ns += self.stale_bytes * (now - self._stale_since_ns)
        self._stale_since_ns = now

    def _event_action(self, event: KafkaEvent) -> Callable[[], None]:
        if event.kind == "resize":
            size = event.bytes
            assert size is not None
            return lambda: self.cache.resize(size)
        assert event.partitions is not None
        members = self.partitions[event.partitions]
        here = event.to == "here"

        def move() -> None:
            candidates = [p for p in members if p.led_here != here]
            for partition in candidates[: round(event.fraction * len(candidates))]:
                partition.led_here = here
                partition.replica_here = True  # it stays in the replica set
                self.leadership_changes += 1

        return move

    # ---- measuring -------------------------------------------------------------------------

    def _sample(self) -> None:
        self._advance_stale_integral()
        self.samples.append(
            {
                "t_s": self.loop.now_ns() / _NS,
                # Not weighted_size: an expired entry is resident until maintenance removes it,
                # but no longer live (spec §0.4).
                "live_bytes": self.cache.live_bytes,
                "resident_bytes": self.cache.resident_bytes,
                "stale_bytes": self.stale_bytes,
                "stale_entries": len(self.stale),
            }
        )

    def run(self, progress: Callable[[float], None] | None = None) -> SimulationOutput:
        end = _ns(self.workload.duration_s)
        report = None if progress is None else (lambda now: progress(now / end))
        self.loop.run_until(end, report)
        self._sample()
        return SimulationOutput(
            metrics=self.metrics(),
            plugins={"simulator": SIMULATOR, "index_cache_policy": self.settings.policy},
            events=self.loop.events_run,
            timeline=tuple(self.samples),
        )

    def metrics(self) -> dict[str, float]:
        stats = self.cache.stats()
        end = self.loop.now_ns()
        hits, misses = stats["hits"], stats["misses"]
        residences = [*self.residences_ns, *(end - s.deleted_ns for s in self.stale.values())]
        live = [s["live_bytes"] for s in self.samples]
        return {
            "index_lookups": hits + misses,
            "index_cache_hits": hits,
            "index_cache_misses": misses,
            "index_cache_hit_ratio": hits / (hits + misses) if hits + misses else 0.0,
            "remote_index_fetches": sum(
                stats[k] for k in ("fetches_offset", "fetches_timestamp", "fetches_transaction")
            ),
            # Per index type too (spec §0.4): a missing transaction index is an RSM call that
            # fetches nothing, which the total alone hides.
            "remote_index_fetches_offset": stats["fetches_offset"],
            "remote_index_fetches_timestamp": stats["fetches_timestamp"],
            "remote_index_fetches_transaction": stats["fetches_transaction"],
            "remote_index_fetched_bytes": self.fetched_bytes,
            "index_cache_live_bytes_peak": max(live),
            "index_cache_live_bytes_mean": sum(live) / len(live),
            "index_cache_resident_bytes_peak": max(s["resident_bytes"] for s in self.samples),
            "index_cache_resident_bytes_end": stats["resident_bytes"],
            "index_cache_stale_bytes_peak": max(s["stale_bytes"] for s in self.samples),
            "index_cache_stale_bytes_end": self.stale_bytes,
            "index_cache_stale_entries_end": len(self.stale),
            "index_cache_stale_byte_seconds": self.stale_byte_ns / _NS,
            "index_cache_stale_residence_mean_s": (
                sum(residences) / len(residences) / _NS if residences else 0.0
            ),
            "index_cache_stale_residence_max_s": max(residences, default=0) / _NS,
            "index_cache_evictions_size": stats["evictions_size"],
            "index_cache_evictions_expired": stats["evictions_expired"],
            "index_cache_evictions_resize": stats["evictions_resize"],
            "index_cache_removals_explicit": stats["evictions_explicit"],
            "remote_segments_deleted": self.segments_deleted,
            "leadership_changes": self.leadership_changes,
        }


def run_tiered_storage(request: SimulationRequest) -> SimulationOutput:
    """The ``kafka-tiered-storage`` simulator: one run of a :class:`KafkaWorkload`."""
    workload = request.workload
    assert isinstance(workload, KafkaWorkload)
    settings = request.profile.plugin_settings[NAMESPACE]
    assert isinstance(settings, KafkaIndexCacheSettings)
    model = TieredStorageModel(workload, settings, request.seed)
    model.build()
    return model.run(request.progress)
