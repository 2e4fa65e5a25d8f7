"""What one run of a Kafka tiered-storage workload will cost, from the validated document alone.

A run keeps, per partition, its remote segments (those of ``history_s`` and those tiered during
the run, until retention deletes them), and the observed broker's cache keeps an entry per
segment a consumer fetched, stale ones included, until the size bound, the TTL or the leader
removes it. So the peak memory grows with partitions x segments: the partitions' ``count`` times
their history, retention and the run's ``duration_s`` over ``segment_interval_s``. The samples of
cached, resident and stale bytes grow with ``duration_s``. The constants below were measured
(peak RSS of real runs, ``docs/scripts/memory_estimate.py``) and rounded up: the estimate errs
high. Nothing here allocates in proportion to a count: it is arithmetic on the document's keys.
"""

from __future__ import annotations

import math

from brokerlab.workloads.resources import BASE_BYTES, Estimate
from brokerlab_plugins.kafka_remote_index.model import KafkaWorkload, PartitionGroup
from brokerlab_plugins.kafka_remote_index.settings import KafkaIndexCacheSettings

__all__ = ["estimate_kafka"]

PARTITION_BYTES = 2 * 2**10  # a partition, its tiering timer, a reader per consumer group
SEGMENT_BYTES = 450  # a remote segment: its record, its uuid, its slot in the partition's deque
ENTRY_BYTES = 1000  # a cached segment: the entry, its file names, the policy's node, stale marks
SAMPLE_BYTES = 700  # one sample of cached, resident and stale bytes

_DEFAULTS = KafkaIndexCacheSettings()
_SMALLER = (
    "a smaller workload (fewer partitions, a shorter history_s or retention_s, a longer "
    "segment_interval_s, a shorter duration_s, or --scale)"
)


def _segments(group: PartitionGroup, duration_s: float) -> tuple[float, float]:
    """A partition's remote segments: at most at once, and over the whole run (floats: a
    document may ask for more than any integer the run could count to)."""
    interval = group.segment_interval_s
    history = _ceil(group.history_s / interval)
    ever = history + duration_s / interval
    # The whole history exists when the run starts; from then on retention keeps what is
    # younger than retention_s, plus the segment it is deleting.
    return max(history, min(ever, group.retention_s / interval + 2)), ever


def _ceil(value: float) -> float:
    return float(math.ceil(value)) if value < 2**53 else value


def _fetched(group: PartitionGroup, workload: KafkaWorkload) -> float:
    """At most how many segments of a partition of ``group`` its consumers fetch, and so may
    cache: those of the data they read (from ``from_age_s`` back to the run's end), and no more
    than they have fetch rounds for."""
    interval, duration = group.segment_interval_s, workload.duration_s
    fetched = 0.0
    for consumer in workload.consumers:
        if consumer.partitions == group.name:
            until = duration if consumer.stop_s is None else min(consumer.stop_s, duration)
            rounds = max(0.0, until - consumer.start_s) * consumer.fetch_rate
            span = (consumer.from_age_s + duration) / interval + 1
            fetched += min(span, rounds / consumer.fetches_per_segment + 1)
    return fetched


def estimate_kafka(workload: KafkaWorkload) -> Estimate:
    """The estimated peak memory and events of one run of ``workload`` (already scaled)."""
    assert isinstance(workload, KafkaWorkload)
    duration = workload.duration_s
    drivers: list[tuple[str, float]] = []
    events = 0.0
    for index, group in enumerate(workload.partitions):
        at = f"partitions[{index}]"
        alive, ever = _segments(group, duration)
        count = f"{at}.count ({group.count:,})"
        drivers.append((count, group.count * PARTITION_BYTES))
        per = f"over {at}.segment_interval_s ({group.segment_interval_s:g} s)"
        span = (
            f"{at}.history_s ({group.history_s:g} s) + duration_s ({duration:g} s) "
            f"(retention_s {group.retention_s:g} s) {per}"
        )
        drivers.append((f"{count} x {span}", group.count * alive * SEGMENT_BYTES))
        cached = min(ever, _fetched(group, workload))
        if cached:
            # Every segment a consumer fetches may stay cached (stale ones too) in a large cache.
            drivers.append(
                (
                    f"{count} x the segments its consumers fetch (from_age_s + duration_s "
                    f"({duration:g} s) {per})",
                    group.count * cached * ENTRY_BYTES,
                )
            )
        # A segment tiered; one fetched may be evicted and its files deleted later.
        events += group.count * (duration / group.segment_interval_s + cached)
    samples = duration / _DEFAULTS.sample_interval_s
    drivers.append((f"duration_s ({duration:g} s) of samples", samples * SAMPLE_BYTES))
    for consumer in workload.consumers:
        until = duration if consumer.stop_s is None else min(consumer.stop_s, duration)
        events += max(0.0, until - consumer.start_s) * consumer.fetch_rate
    events += samples + duration * 1000 / _DEFAULTS.task_interval_ms
    drivers.sort(key=lambda item: -item[1])
    peak = BASE_BYTES + sum(cost for _, cost in drivers)
    return Estimate(peak, events, tuple(drivers), smaller=_SMALLER)
