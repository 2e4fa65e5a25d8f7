"""The Kafka tiered-storage workload format, validated by pydantic.

A document with ``simulator = "kafka-tiered-storage"`` describes partitions whose old segments live
in remote storage, the consumers that fetch from them, and leadership events, as seen by one
observed broker (the one whose remote index cache is measured)::

    simulator = "kafka-tiered-storage"
    name = "kafka-leadership-change"
    duration_s = 10800

    [[partitions]]
    name = "orders"
    count = 16
    segment_interval_s = 300          # a segment rolls and is tiered every 5 minutes
    history_s = 7200                  # remote data that exists when the run starts
    retention_s = 7200                # the leader deletes remote segments older than this
    index = { offset_kib = { min = 400, max = 600 }, time_kib = { min = 600, max = 900 } }

    [[consumers]]
    name = "backfill"
    partitions = "orders"
    from_age_s = 7200
    at_end = "loop"
    fetch_rate = 1.0

    [[events]]
    at_s = 1800
    kind = "leadership-change"
    partitions = "orders"
    fraction = 0.75

Data is placed on a time axis: a segment holds ``segment_interval_s`` of data and is tiered when
it rolls. A consumer's position is the data time it reads; data younger than
``local_retention_s`` is read from the local log and never touches the remote index cache.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from brokerlab.workloads import WorkloadDocument
from brokerlab.workloads.model import MAX_RATE, MAX_SECONDS, Bound

__all__ = [
    "ConsumerGroup",
    "IndexSizes",
    "KafkaEvent",
    "KafkaWorkload",
    "KibRange",
    "PartitionGroup",
]

SIMULATOR: Literal["kafka-tiered-storage"] = "kafka-tiered-storage"


MAX_PARTITIONS = 1_000_000

MAX_AGE_S = 100 * 365 * 86_400

# Times stay inside what the model counts in integer nanoseconds: moments of the run at most
# MAX_SECONDS (116 days, as duration_s), ages of data (history, retention, a segment's span)
# at most a century.
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
PositiveSeconds = Annotated[float, Field(gt=0, le=MAX_SECONDS)]
Age = Annotated[float, Field(ge=0, le=MAX_AGE_S)]
PositiveAge = Annotated[float, Field(gt=0, le=MAX_AGE_S)]
PartitionCount = Annotated[
    int,
    Field(ge=1, le=MAX_PARTITIONS),
    Bound(
        "a Kafka cluster holds at most a few million partitions and one broker far fewer; each "
        f"simulated one keeps its remote segments and readers: at most {MAX_PARTITIONS:,}"
    ),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KibRange(_Strict):
    """Sizes drawn uniformly from ``min..max`` KiB (inclusive), one draw per segment."""

    min: Annotated[int, Field(ge=0)]
    max: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def _ordered(self) -> KibRange:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self


class IndexSizes(_Strict):
    """The three index files of a remote segment. ``txn_missing_fraction`` of the segments have
    no transaction index in remote storage (the cache then writes an empty file)."""

    offset_kib: KibRange
    time_kib: KibRange
    txn_kib: KibRange = KibRange(min=0, max=0)
    txn_missing_fraction: Annotated[float, Field(ge=0, le=1)] = 0.0


class PartitionGroup(_Strict):
    """``count`` partitions alike; the observed broker leads them at the start when
    ``led_here``, and otherwise holds a follower replica when ``replica_here``."""

    name: str
    count: PartitionCount
    led_here: bool = True
    replica_here: bool = True
    segment_interval_s: PositiveAge
    history_s: Age
    retention_s: PositiveAge
    local_retention_s: Age = 0.0
    index: IndexSizes
    new_index: IndexSizes | None = None
    """Index sizes of segments tiered during the run (default: ``index``)."""


class ConsumerGroup(_Strict):
    """A consumer group reading every partition of ``partitions`` from remote storage.

    It starts at data ``from_age_s`` old (clamped to the oldest remote segment) and reads forward,
    ``fetch_rate`` fetch requests per second per partition, each covering
    ``1/fetches_per_segment`` of a segment. On reaching data ``to_age_s`` old it either keeps
    tailing (``tail``: local reads from then on), jumps back to ``from_age_s`` (``loop``), or
    stops. A consumer whose position was deleted by retention resets to the earliest segment.
    With ``read_from_replica`` a partition this broker follows is fetched from this broker.
    """

    name: str
    partitions: str
    start_s: Seconds = 0.0
    stop_s: PositiveSeconds | None = None
    from_age_s: Age
    to_age_s: Age = 0.0
    at_end: Literal["tail", "loop", "stop"] = "tail"
    fetch_rate: Annotated[float, Field(gt=0, le=MAX_RATE)]
    fetches_per_segment: Annotated[int, Field(ge=1)] = 10
    read_from_replica: bool = False

    @model_validator(mode="after")
    def _window(self) -> ConsumerGroup:
        if self.to_age_s >= self.from_age_s:
            raise ValueError(
                f"to_age_s ({self.to_age_s}) must be below from_age_s ({self.from_age_s}): "
                "consumers read from older data towards newer"
            )
        return self


class KafkaEvent(_Strict):
    """``leadership-change``: ``fraction`` of the group's partitions move ``away`` from the
    observed broker (it stays a follower) or ``here``; ``resize``: the cache's size bound becomes
    ``bytes`` (Kafka's dynamic ``remote.log.index.file.cache.total.size.bytes``)."""

    at_s: Seconds
    kind: Literal["leadership-change", "resize"]
    partitions: str | None = None
    fraction: Annotated[float, Field(gt=0, le=1)] = 1.0
    to: Literal["away", "here"] = "away"
    bytes: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _arguments(self) -> KafkaEvent:
        if self.kind == "leadership-change" and self.partitions is None:
            raise ValueError("a leadership-change event needs the partition group it moves")
        if self.kind == "resize" and self.bytes is None:
            raise ValueError("a resize event needs the new size in bytes")
        return self


class KafkaWorkload(WorkloadDocument):
    """A whole Kafka tiered-storage workload."""

    simulator: Literal["kafka-tiered-storage"] = SIMULATOR
    partitions: tuple[PartitionGroup, ...] = Field(min_length=1)
    consumers: tuple[ConsumerGroup, ...] = ()
    events: tuple[KafkaEvent, ...] = ()

    @model_validator(mode="after")
    def _groups_exist(self) -> KafkaWorkload:
        groups = [p.name for p in self.partitions]
        if len(set(groups)) != len(groups):
            raise ValueError(f"partition group names repeat: {', '.join(groups)}")
        for name in [c.partitions for c in self.consumers] + [
            e.partitions for e in self.events if e.partitions is not None
        ]:
            if name not in groups:
                raise ValueError(
                    f"partition group {name!r} is not defined; known: {', '.join(groups)}"
                )
        return self
