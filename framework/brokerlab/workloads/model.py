"""The declarative workload format: what producers and consumers do, validated by pydantic.

A workload is a TOML document (see ``docs/workloads.md``)::

    name = "tailing"
    description = "One topic, consumers keep up"
    duration_s = 60

    [[topics]]
    name = "orders"
    rate = 2000                     # messages per second, per topic
    message_size = { kind = "fixed", value = 1024 }

    [[topics.subscriptions]]
    name = "billing"
    type = "Shared"

    [[topics.subscriptions.consumers]]
    count = 2
    rate = 1500                     # messages per second each consumer processes

Times are seconds of simulated time from the start of the run; rates are per second.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from brokerlab.metrics import METRICS

__all__ = [
    "Bound",
    "ClusterSpec",
    "ConsumerSpec",
    "DelaySpec",
    "DurationSpec",
    "EventSpec",
    "KeySpec",
    "SizeSpec",
    "StorageSpec",
    "SubscriptionSpec",
    "TopicSpec",
    "WorkloadDocument",
    "WorkloadSpec",
]

SubscriptionType = Literal["Exclusive", "Failover", "Shared", "Key_Shared"]

# Upper bounds that keep every value inside what the model can represent and allocate: times in
# integer nanoseconds, Poisson draws, per-key weights and backlog arrays. Far above any run that
# finishes (116 days of simulated time; a billion messages per second per topic).
MAX_SECONDS = 10_000_000
MAX_RATE = 1_000_000_000
MAX_KEYS = 1_000_000
MAX_BACKLOG = 10_000_000
MAX_BROKERS = 64
MAX_PARTITIONS = 10_000


@dataclass(frozen=True)
class Bound:
    """Why a count or size has the upper bound it has: ``Annotated`` metadata that the loader
    adds to its "out of range" error (no realistic broker goes beyond these)."""

    why: str


# Counts and sizes no realistic broker goes beyond; each simulated one costs memory and time.
MAX_TOPICS = 1_000_000
MAX_SUBSCRIPTIONS = 10_000
MAX_CONSUMERS = 10_000
MAX_PRODUCERS = 10_000
MAX_BATCH_SIZE = 100_000
MAX_MESSAGE_BYTES = 2**31 - 1 - 10 * 1024
MAX_SKEW = 10.0

_TOPICS_WHY = Bound(
    f"a Pulsar cluster serves at most about a million topics, and each simulated topic (each "
    f"partition) is a managed ledger with its cache and cursors: at most {MAX_TOPICS:,} in all"
)
TopicCount = Annotated[int, Field(ge=1, le=MAX_TOPICS), _TOPICS_WHY]
SubscriptionCount = Annotated[
    int,
    Field(ge=1, le=MAX_SUBSCRIPTIONS),
    Bound(
        "each subscription is a cursor with its own ack state and dispatcher; Pulsar topics "
        "have tens, exceptionally thousands"
    ),
]
ConsumerCount = Annotated[
    int,
    Field(ge=1, le=MAX_CONSUMERS),
    Bound("each consumer is a connection the dispatcher serves; subscriptions have a handful"),
]
ProducerCount = Annotated[
    int,
    Field(ge=1, le=MAX_PRODUCERS),
    Bound("each producer is a connection with its own sequence ids and pending sends"),
]
BatchSize = Annotated[
    int,
    Field(ge=1, le=MAX_BATCH_SIZE),
    Bound(
        "a batch is one entry, acknowledged index by index (a bitset of batch_size bits per "
        "entry); the Java client sends at most 1,000 messages per batch by default"
    ),
]
_FRAME = Bound("a message frame must fit a Java int: Pulsar's largest maxMessageSize")
MessageBytes = Annotated[int, Field(ge=1, le=MAX_MESSAGE_BYTES), _FRAME]
MedianBytes = Annotated[float, Field(gt=0, le=MAX_MESSAGE_BYTES), _FRAME]
Skew = Annotated[
    float,
    Field(ge=0, le=MAX_SKEW),
    Bound(
        "at skew 10 the most popular key already has 99.9% of the messages; beyond it the "
        "key weights underflow"
    ),
]

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
Millis = Annotated[int, Field(ge=0, le=MAX_SECONDS * 1000)]
Rate = Annotated[float, Field(ge=0, le=MAX_RATE)]


def _numbered(name: str, count: int) -> list[str]:
    """``count`` names: ``name`` alone, or ``name-0`` to ``name-<count-1>``."""
    if count == 1:
        return [name]
    return [f"{name}-{i}" for i in range(count)]


@dataclass(frozen=True)
class Names:
    """The names a table makes, without building them: ``base``, or ``base-0`` .. when
    ``count`` > 1, each followed by ``-partition-0`` .. when ``partitions`` > 0.

    Validation must not allocate in proportion to a count (a workload of 10^9 topics grew until
    the kernel killed it): membership is parsed, and clashes are found from one name each.
    """

    base: str
    count: int
    partitions: int = 0

    @property
    def first(self) -> str:
        """The name with every number 0: in every table that makes a name of the same shape."""
        return (
            self.base
            + ("-0" if self.count > 1 else "")
            + ("-partition-0" if self.partitions else "")
        )

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not name.startswith(self.base):
            return False
        rest = name[len(self.base) :]
        if self.partitions:
            rest, marker, k = rest.rpartition("-partition-")
            if not marker or not _index_below(k, self.partitions):
                return False
        if self.count == 1:
            return rest == ""
        return rest.startswith("-") and _index_below(rest[1:], self.count)

    def __iter__(self) -> Iterator[str]:
        """The names in order, one at a time."""
        for name in _numbered(self.base, 1) if self.count == 1 else _lazy(self.base, self.count):
            if not self.partitions:
                yield name
            else:
                yield from (f"{name}-partition-{k}" for k in range(self.partitions))

    def __len__(self) -> int:
        return self.count * max(1, self.partitions)

    def common(self, other: Names) -> str | None:
        """A name both make, or ``None``.

        A common name starts with both bases, so one base starts the other. The rest of it is
        the longer-base table's own suffix: the same shape for every name of that table, whose
        numbers only have upper bounds, so its first name is common whenever any name is.
        """
        longer, shorter = (other, self) if len(other.base) >= len(self.base) else (self, other)
        candidate = longer.first
        return candidate if candidate in shorter else None


def _lazy(base: str, count: int) -> Iterator[str]:
    return (f"{base}-{i}" for i in range(count))


def _index_below(text: str, bound: int) -> bool:
    """Whether ``text`` is a number as the names spell it (no sign, no leading zero) below
    ``bound``."""
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return False
    return len(text) <= len(str(bound)) and int(text) < bound


def _check_unique(tables: Sequence[Names], thing: str, table: str) -> None:
    """Raise if a table makes a name an earlier table makes too.

    Topics, and subscriptions within a topic, are known by name (the cache, the cursors, the
    random streams): two with one name would silently share them.
    """
    for index, names in enumerate(tables):
        for earlier in tables[:index]:
            clash = names.common(earlier)
            if clash == names.base:
                raise ValueError(
                    f"an earlier {table} table already has a {thing} named {clash!r}; "
                    "give each table its own name"
                )
            if clash is not None:
                raise ValueError(
                    f"name {names.base!r} makes {thing} {clash!r}, which an earlier {table} "
                    "table already has; give each table its own name"
                )


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadDocument(_Strict):
    """What every workload document has, whichever simulator runs it.

    ``simulator`` names the broker model (a :class:`~brokerlab.records.SimulatorRecord`); each
    simulator's own document model narrows it to a ``Literal`` of its name and adds its keys.
    """

    simulator: str = "pulsar"
    name: str
    description: str = ""
    duration_s: Annotated[float, Field(gt=0, le=MAX_SECONDS)]
    headline: str = ""
    """The metric the report ranks configurations on for this workload (a metric of its
    simulator); empty: its simulator's default (``brokerlab.report.verdicts.DEFAULT_HEADLINES``)."""

    @model_validator(mode="after")
    def _headline_is_a_metric_of_the_simulator(self) -> WorkloadDocument:
        if self.headline:
            known = METRICS.get(self.headline)
            if known is None or known.simulator != self.simulator:
                raise ValueError(
                    f"headline {self.headline!r} is not a metric of simulator "
                    f"{self.simulator!r} (see `brokerlab metrics`)"
                )
        return self


class SizeSpec(_Strict):
    """Message payload size in bytes: ``fixed`` (value), ``uniform`` (min..max) or ``lognormal``
    (median and sigma of the underlying normal), clipped to [min, max]."""

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    value: MessageBytes = 1024
    min: MessageBytes = 1
    max: MessageBytes = 5 * 1024 * 1024
    median: MedianBytes = 1024.0
    sigma: Annotated[float, Field(ge=0)] = 0.5

    @model_validator(mode="after")
    def _bounds_ordered(self) -> SizeSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


# The keys each kind of duration reads; a key of another kind is an error, not silently ignored.
_DURATION_KEYS = {
    "fixed": {"value"},
    "exponential": {"mean"},
    "lognormal": {"median", "sigma", "max"},
    "empirical": {"values", "weights"},
}


class DurationSpec(_Strict):
    """A time in milliseconds, drawn afresh for each operation it describes.

    ``fixed`` (``value``), ``exponential`` (``mean``), ``lognormal`` (``median`` and ``sigma`` of
    the underlying normal, capped at ``max``) or ``empirical`` (one of ``values``, with
    ``weights`` if given, else equally likely). The default is a fixed zero: no time at all.
    """

    kind: Literal["fixed", "exponential", "lognormal", "empirical"] = "fixed"
    value: Annotated[float, Field(ge=0, le=MAX_SECONDS * 1000)] = 0.0
    mean: Annotated[float, Field(gt=0, le=MAX_SECONDS * 1000)] = 1.0
    median: Annotated[float, Field(gt=0, le=MAX_SECONDS * 1000)] = 1.0
    sigma: Annotated[float, Field(ge=0, le=10)] = 0.5
    max: Annotated[float, Field(gt=0, le=MAX_SECONDS * 1000)] = 60_000.0
    values: tuple[Annotated[float, Field(ge=0, le=MAX_SECONDS * 1000)], ...] = ()
    weights: tuple[Annotated[float, Field(ge=0)], ...] = ()

    @model_validator(mode="after")
    def _keys_of_its_kind(self) -> DurationSpec:
        # Keys of another kind that differ from their defaults (a dumped document holds them all).
        fields = type(self).model_fields
        foreign = sorted(
            key
            for key in self.model_fields_set - {"kind"} - _DURATION_KEYS[self.kind]
            if getattr(self, key) != fields[key].default
        )
        if foreign:
            raise ValueError(
                f"{', '.join(foreign)} does not apply to kind {self.kind!r}, which reads "
                f"{', '.join(sorted(_DURATION_KEYS[self.kind]))}"
            )
        if self.kind == "empirical":
            if not self.values:
                raise ValueError("kind 'empirical' needs a non-empty list of values")
            if self.weights and len(self.weights) != len(self.values):
                raise ValueError(
                    f"weights has {len(self.weights)} items and values {len(self.values)}; "
                    "give one weight per value"
                )
            if self.weights and not sum(self.weights) > 0:
                raise ValueError("the weights add up to zero")
        return self

    @model_serializer(mode="wrap")
    def _only_its_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Only the keys its kind reads: a dump validates again (a scaled workload, a matrix
        # cell's workload on the executor), and the validator refuses another kind's keys.
        data: dict[str, Any] = handler(self)
        keys = _DURATION_KEYS[self.kind]
        return {k: v for k, v in data.items() if k == "kind" or k in keys}

    @property
    def is_zero(self) -> bool:
        """Whether every draw is zero (the neutral setting: no time at all)."""
        if self.kind == "fixed":
            return self.value == 0
        if self.kind == "empirical":
            return all(v == 0 or (self.weights and w == 0) for v, w in _pairs(self))
        return False

    @property
    def mean_ms(self) -> float:
        """The distribution's mean, in milliseconds (what an estimate of run time needs)."""
        if self.kind == "fixed":
            return self.value
        if self.kind == "exponential":
            return self.mean
        if self.kind == "lognormal":
            return min(self.max, self.median * math.exp(self.sigma**2 / 2))
        total = sum(w for _, w in _pairs(self))
        return sum(v * w for v, w in _pairs(self)) / total


def _pairs(spec: DurationSpec) -> list[tuple[float, float]]:
    """An empirical duration's values with their weights (1 each when none are given)."""
    weights = spec.weights or (1.0,) * len(spec.values)
    return list(zip(spec.values, weights, strict=True))


def _duration(value: object) -> object:
    """A bare number stands for a fixed duration: ``read_latency_ms = 2`` is ``{ value = 2 }``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"kind": "fixed", "value": value}
    if isinstance(value, dict):
        # A workload file is validated strictly from JSON, but what this validator returns is
        # validated as Python, where a list is no tuple: an empirical table's arrays become ones.
        return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
    return value


Duration = Annotated[DurationSpec, BeforeValidator(_duration)]


class ClusterSpec(_Strict):
    """The brokers that serve the workload's topics, sharing one storage (see
    ``broker/cluster.py`` for how topics are placed on them and handed over)."""

    brokers: Annotated[int, Field(ge=1, le=MAX_BROKERS)] = 1


class StorageSpec(_Strict):
    """The storage the brokers share (BookKeeper's bookies), as the workload's environment.

    ``read_latency_ms`` is drawn per storage read operation, and ``read_ms_per_mib`` adds the
    transfer time of what it reads; ``write_latency_ms`` is drawn per entry a producer sends: the
    entry is persisted (readable, acknowledged to its producer) that long after it was sent, and
    never before the topic's earlier entries; and per cursor-ledger write of ack state, which a
    crash loses while it is in flight. All zero by default: storage answers at once, as in a
    model without storage time.
    """

    read_latency_ms: Duration = DurationSpec()
    read_ms_per_mib: Annotated[float, Field(ge=0, le=MAX_SECONDS * 1000)] = 0.0
    write_latency_ms: Duration = DurationSpec()

    @property
    def reads_take_time(self) -> bool:
        return not self.read_latency_ms.is_zero or self.read_ms_per_mib > 0

    @property
    def writes_take_time(self) -> bool:
        """Whether an entry is persisted some time after it was sent."""
        return not self.write_latency_ms.is_zero


class KeySpec(_Strict):
    """Message keys: ``count`` distinct keys drawn with Zipf-like ``skew`` (0 = uniform)."""

    count: Annotated[int, Field(ge=1, le=MAX_KEYS)] = 100
    skew: Skew = 0.0


class DelaySpec(_Strict):
    """A share of messages published with a deliver-at time ``min_ms..max_ms`` after publishing."""

    fraction: Annotated[float, Field(gt=0, le=1)]
    min_ms: Millis
    max_ms: Millis

    @model_validator(mode="after")
    def _bounds_ordered(self) -> DelaySpec:
        if self.min_ms > self.max_ms:
            raise ValueError(f"min_ms ({self.min_ms}) must not exceed max_ms ({self.max_ms})")
        return self


class ConsumerSpec(_Strict):
    """``count`` identical consumers of one subscription.

    ``rate`` is how many messages per second each processes (0 = as fast as they arrive). Each
    processed entry is acknowledged, except a share ``ack_hole_probability`` left with an ack hole
    (one message never acknowledged: the whole entry, or one index of a batch) and a share
    ``nack_probability`` that is negatively acknowledged and redelivered after
    ``nack_redelivery_delay_ms``. ``group`` names the consumers for events.

    ``service_time_ms`` (drawn per message) and ``ack_group_ms`` (the client's
    acknowledgmentGroupTime; unset, the client default of 100 ms) switch a consumer to the
    message-by-message client model of ``broker/client.py``: the application takes one message
    at a time from its receiver queue, flow permits go back in half-queue batches and
    acknowledgements reach the broker in groups. A message then takes its drawn service time, but
    at least ``1 / rate`` when ``rate`` is set too. With neither key the consumer is the chunked
    model (chunks of one ack group's worth of processing at ``rate``).
    """

    name: str = "consumer"
    count: ConsumerCount = 1
    rate: Rate = 0.0
    receiver_queue_size: Annotated[int, Field(ge=1)] = 1000
    ack: Literal["individual", "cumulative"] = "individual"
    ack_hole_probability: Annotated[float, Field(ge=0, le=1)] = 0.0
    nack_probability: Annotated[float, Field(ge=0, le=1)] = 0.0
    nack_redelivery_delay_ms: Millis = 60_000
    connect_at_s: Seconds = 0.0
    disconnect_at_s: Annotated[float, Field(gt=0, le=MAX_SECONDS)] | None = None
    group: str | None = None
    service_time_ms: Duration | None = None
    ack_group_ms: Annotated[float, Field(ge=0, le=MAX_SECONDS * 1000)] | None = None

    @property
    def models_client(self) -> bool:
        """Whether the message-by-message client model applies (either of its keys is set)."""
        return self.service_time_ms is not None or self.ack_group_ms is not None

    @model_validator(mode="after")
    def _probabilities_fit(self) -> ConsumerSpec:
        if self.ack_hole_probability + self.nack_probability > 1:
            raise ValueError("ack_hole_probability + nack_probability must not exceed 1")
        if self.disconnect_at_s is not None and self.disconnect_at_s <= self.connect_at_s:
            raise ValueError("disconnect_at_s must be after connect_at_s")
        return self


class SubscriptionSpec(_Strict):
    """``count`` identical subscriptions (named ``name``, or ``name-0``.. when count > 1)."""

    name: str = "sub"
    count: SubscriptionCount = 1
    type: SubscriptionType = "Exclusive"
    initial_position: Literal["earliest", "latest"] = "latest"
    consumers: tuple[ConsumerSpec, ...] = (ConsumerSpec(),)

    def subscription_names(self) -> list[str]:
        """The names of the ``count`` subscriptions, numbered as topics are."""
        return _numbered(self.name, self.count)

    @property
    def names(self) -> Names:
        """The names it makes, not built."""
        return Names(self.name, self.count)

    @model_validator(mode="after")
    def _cumulative_needs_single_consumer(self) -> SubscriptionSpec:
        if self.type in ("Shared", "Key_Shared") and any(
            c.ack == "cumulative" for c in self.consumers
        ):
            raise ValueError(
                f"cumulative acknowledgement is not allowed on a {self.type} subscription"
            )
        return self


class TopicSpec(_Strict):
    """``count`` identical topics and what their producers publish.

    ``backlog`` messages are already in each topic when the run starts (published before time 0,
    rounded up to whole batches), so subscriptions that start at ``earliest`` have something to
    catch up on.

    ``partitions`` makes each a partitioned topic of that many partitions, named
    ``<topic>-partition-<k>`` as Pulsar names them. Each partition is a topic of its own (its
    managed ledger, its subscriptions, its broker in a cluster); the topic's ``rate`` and
    ``backlog`` are shared evenly among its partitions, as a producer's round-robin routing
    shares them.

    ``max_pending_messages`` bounds each producer's sends not yet persisted (the Java client's
    ``maxPendingMessages``; a batch of n messages holds n). When it is reached, a producer with
    ``block_if_queue_full`` waits and sends later; one without it fails the send at once (the
    message is rejected). Unset, producers are open-loop: every arrival is sent when it comes.
    """

    name: str = "topic"
    count: TopicCount = 1
    rate: Rate = 100.0
    arrival: Literal["constant", "poisson"] = "poisson"
    message_size: SizeSpec = SizeSpec()
    batch_size: BatchSize = 1
    producers: ProducerCount = 1
    keys: KeySpec | None = None
    delays: tuple[DelaySpec, ...] = ()
    backlog: Annotated[int, Field(ge=0, le=MAX_BACKLOG)] = 0
    publish_until_s: Seconds | None = None
    partitions: Annotated[int, Field(ge=0, le=MAX_PARTITIONS)] = 0
    max_pending_messages: Annotated[int, Field(ge=1)] | None = None
    block_if_queue_full: bool = False
    subscriptions: tuple[SubscriptionSpec, ...] = ()

    def topic_names(self) -> list[str]:
        """The names of the ``count`` topics: ``name``, or ``name-0`` to ``name-<count-1>``;
        with ``partitions``, each of them followed by ``-partition-0`` to ``-partition-<n-1>``."""
        names = _numbered(self.name, self.count)
        if not self.partitions:
            return names
        return [f"{name}-partition-{k}" for name in names for k in range(self.partitions)]

    @property
    def names(self) -> Names:
        """The names of its topics (partitions), not built."""
        return Names(self.name, self.count, self.partitions)

    @property
    def topic_count(self) -> int:
        """How many topics the table makes (each partition is one)."""
        return self.count * max(1, self.partitions)

    @property
    def rate_per_topic(self) -> float:
        """Messages per second each of its topics (partitions) receives."""
        return self.rate / self.partitions if self.partitions else self.rate

    @property
    def backlog_per_topic(self) -> int:
        """Backlog messages each of its topics (partitions) holds at the start."""
        return -(-self.backlog // self.partitions) if self.partitions else self.backlog

    @model_validator(mode="after")
    def _delay_shares_fit(self) -> TopicSpec:
        if sum(d.fraction for d in self.delays) > 1 + 1e-9:
            raise ValueError("the fractions of delays add up to more than 1")
        return self

    @model_validator(mode="after")
    def _flow_control_fits(self) -> TopicSpec:
        if self.max_pending_messages is None:
            if self.block_if_queue_full:
                raise ValueError(
                    "block_if_queue_full applies only with max_pending_messages: without a limit "
                    "a producer's queue is never full"
                )
        elif self.max_pending_messages < self.batch_size:
            raise ValueError(
                f"max_pending_messages ({self.max_pending_messages}) is below batch_size "
                f"({self.batch_size}): a batch holds one pending send per message, so it could "
                "never be sent"
            )
        return self

    @property
    def closed_loop(self) -> bool:
        """Whether the topics' producers have a bound on pending sends."""
        return self.max_pending_messages is not None

    @model_validator(mode="after")
    def _subscription_names_unique(self) -> TopicSpec:
        _check_unique(
            [s.names for s in self.subscriptions], "subscription", "[[topics.subscriptions]]"
        )
        return self


class EventSpec(_Strict):
    """What happens at ``at_s``: a broker restart (a crash), an unload of every topic (graceful),
    an unload of one topic's namespace bundle (``topic``, to ``to_broker`` or the least loaded
    other broker), or a consumer group leaves or returns.

    A restart or an unload with ``outage_s`` leaves the topics unavailable that long (the broker
    starting again, or the topics being looked up and loaded): producers hold what they send and
    consumers stay disconnected until the topics are back.
    """

    at_s: Seconds
    kind: Literal["restart", "unload", "disconnect", "reconnect"]
    group: str | None = None
    outage_s: Seconds = 0.0
    broker: Annotated[int, Field(ge=0)] = 0
    topic: Annotated[str, Field(min_length=1)] | None = None
    to_broker: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _group_for_consumer_events(self) -> EventSpec:
        if self.kind != "unload" and (self.topic is not None or self.to_broker is not None):
            key = "topic" if self.topic is not None else "to_broker"
            raise ValueError(
                f"a {self.kind} event takes no {key}: only an unload moves a topic's bundle"
            )
        if self.kind == "unload" and self.topic is None and self.to_broker is not None:
            raise ValueError(
                "to_broker needs topic: an unload without topic unloads every topic of broker, "
                "which go to the least loaded brokers when its outage ends"
            )
        if self.topic is not None and "broker" in self.model_fields_set:
            raise ValueError(
                "an unload of a topic unloads its bundle from the broker that owns it at at_s: "
                "no broker (to_broker names where it goes)"
            )
        if self.kind in ("restart", "unload"):
            if self.group is not None:
                raise ValueError(f"a {self.kind} event applies to the whole broker: no group")
        elif not self.group:
            raise ValueError(f"a {self.kind} event needs the consumer group it applies to")
        elif self.outage_s:
            raise ValueError(f"a {self.kind} event has no outage: only restart and unload do")
        elif self.broker:
            raise ValueError(
                f"a {self.kind} event applies to a consumer group wherever its topics are: "
                "no broker"
            )
        return self

    @model_serializer(mode="wrap")
    def _only_its_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A dump validates again (a scaled workload, a matrix cell's workload on the executor):
        # an unload of a topic without broker, which it refuses. Without topic, the dump is what
        # it was before topic existed, so workload hashes and matrix cell ids stay as they were.
        data: dict[str, Any] = handler(self)
        if self.topic is not None:
            del data["broker"]
        else:
            del data["topic"]
        if self.to_broker is None:
            del data["to_broker"]
        return data


def _run_times(info: ValidationInfo) -> tuple[float, float] | None:
    """``duration_s`` and the end of the run (``duration_s + drain_s``), once both are valid."""
    duration, drain = info.data.get("duration_s"), info.data.get("drain_s")
    if duration is None or drain is None:
        return None  # already reported
    return duration, duration + drain


def _topic_within_the_run(topic: TopicSpec, info: ValidationInfo) -> TopicSpec:
    # Checked per table, so an error points at it; anything later would silently never happen.
    times = _run_times(info)
    if times is None:
        return topic
    duration, end = times
    until = topic.publish_until_s
    if until is not None and until > duration:
        raise ValueError(
            f"publish_until_s ({until:g}) is after duration_s ({duration:g}); producers stop at "
            "duration_s at the latest"
        )
    for sub in topic.subscriptions:
        for consumer in sub.consumers:
            if consumer.connect_at_s >= end:
                raise ValueError(
                    f"connect_at_s ({consumer.connect_at_s:g}) of a consumer of subscription "
                    f"{sub.name} is not before the end of the run ({end:g} s = duration_s + "
                    "drain_s): it would never connect"
                )
    return topic


def _event_within_the_run(event: EventSpec, info: ValidationInfo) -> EventSpec:
    times = _run_times(info)
    if times is not None and event.at_s > times[1]:
        raise ValueError(
            f"at_s ({event.at_s:g}) is after the end of the run "
            f"({times[1]:g} s = duration_s + drain_s): the event would never happen"
        )
    return event


class WorkloadSpec(WorkloadDocument):
    """A whole Pulsar workload; ``drain_s`` more seconds run after ``duration_s``, producers
    stopped."""

    simulator: Literal["pulsar"] = "pulsar"
    drain_s: Seconds = 0.0
    storage: StorageSpec = StorageSpec()
    cluster: ClusterSpec = ClusterSpec()
    topics: tuple[Annotated[TopicSpec, AfterValidator(_topic_within_the_run)], ...] = Field(
        min_length=1
    )
    events: tuple[Annotated[EventSpec, AfterValidator(_event_within_the_run)], ...] = ()

    @model_validator(mode="after")
    def _topic_names_unique(self) -> WorkloadSpec:
        _check_unique([t.names for t in self.topics], "topic", "[[topics]]")
        return self

    @model_validator(mode="after")
    def _topics_bounded(self) -> WorkloadSpec:
        total = sum(t.topic_count for t in self.topics)
        if total > MAX_TOPICS:
            raise ValueError(
                f"the [[topics]] tables make {total:,} topics (count x partitions); "
                f"{_TOPICS_WHY.why}"
            )
        return self

    @model_validator(mode="after")
    def _outages_apart(self) -> WorkloadSpec:
        """A restart or an unload during another one's outage would close topics already closed.

        With one broker every restart and unload is the broker's; in a cluster a broker's topics
        are handed over when its outage ends, so no two outages may overlap at all (a simple rule
        that keeps every hand-over between live brokers)."""
        brokers = self.cluster.brokers
        for event in self.events:
            for key, index in (("broker", event.broker), ("to_broker", event.to_broker)):
                if index is not None and index >= brokers:
                    raise ValueError(
                        f"the {event.kind} event at {event.at_s:g} s names {key} {index}, but "
                        f"the cluster has {brokers} broker{'s' if brokers > 1 else ''} "
                        f"(0 to {brokers - 1})"
                    )
        outages = sorted(
            (e.at_s, e.outage_s, e.topic is not None)
            for e in self.events
            if e.kind in ("restart", "unload")
        )
        for (at, outage, one), (next_at, _, next_one) in pairwise(outages):
            if next_at < at + outage:
                raise ValueError(
                    f"the event at {next_at:g} s falls in the outage of the one at {at:g} s "
                    f"(outage_s {outage:g}, until {at + outage:g} s): the topics are unavailable "
                    "then; move it after the outage"
                )
            # The bundle a topic's unload names may be on a broker that is down, or being
            # handed over, at that very instant: a topic's unload comes strictly after.
            if (one or next_one) and next_at == at + outage:
                raise ValueError(
                    f"the events at {at:g} s (outage_s {outage:g}) and at {next_at:g} s meet at "
                    f"{next_at:g} s: an unload of a topic must come after every other restart or "
                    "unload has ended, and end before the next one starts"
                )
        return self

    @model_validator(mode="after")
    def _unloaded_topics_exist(self) -> WorkloadSpec:
        named = [event for event in self.events if event.topic is not None]
        if not named:
            return self
        for event in named:
            if not any(event.topic in t.names for t in self.topics):
                every = (name for t in self.topics for name in t.names)
                total = sum(t.topic_count for t in self.topics)
                known = ", ".join(islice(every, 5)) + (
                    f", ... ({total} topics)" if total > 5 else ""
                )
                raise ValueError(
                    f"the unload event at {event.at_s:g} s names topic {event.topic!r}, which is "
                    f"no topic of the workload (a [[topics]] name, name-<i> with count, "
                    f"<name>-partition-<k> with partitions); its topics: {known}"
                )
        return self

    @model_validator(mode="after")
    def _event_groups_exist(self) -> WorkloadSpec:
        groups = {
            c.group
            for t in self.topics
            for s in t.subscriptions
            for c in s.consumers
            if c.group is not None
        }
        for event in self.events:
            if event.group is not None and event.group not in groups:
                known = ", ".join(sorted(groups)) or "(no consumer has a group)"
                raise ValueError(
                    f"event group {event.group!r} is not a consumer group; known: {known}"
                )
        return self
