"""What the simulated broker calls: one typed protocol per extension point.

A plugin implements one of these protocols and hands the broker a factory through a record
(`brokerlab.records`). The broker model never reaches into a plugin, and a plugin never reaches
into the broker: everything crosses this line as plain values (positions are ``(ledger_id,
entry_id)`` tuples, times are integers on the simulation clock) or as the small read-only views
defined here.

Conventions shared by every protocol:

* **Time** comes from [`Clock`][brokerlab.protocols.Clock], never from the wall clock, so a
  simulation stays a pure function of `(profile, workload, seed)`.
* **Randomness** comes from [`PluginContext.rng`][brokerlab.protocols.PluginContext.rng], a
  generator seeded from the simulation seed.
* **Metrics**: every long-lived plugin object has `stats()`, a mapping of metric name to number.
  Names must be registered in `brokerlab.metrics`; counters are cumulative, gauges are
  current values.
* **Optional protocols** ([`RankedCursorContainer`][brokerlab.protocols.RankedCursorContainer],
  [`SilentPredicate`][brokerlab.protocols.SilentPredicate],
  [`AttributedPredicate`][brokerlab.protocols.AttributedPredicate],
  [`RulePredicate`][brokerlab.protocols.RulePredicate],
  [`SingleEntryCache`][brokerlab.protocols.SingleEntryCache]) add a capability to a plugin object.
  A caller finds them by what the object has (`isinstance` against the protocol, which checks
  members, never classes), so a third-party plugin that implements one takes exactly the path a
  built-in takes. What each one saves is in `docs/performance.md`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from brokerlab.metrics import MetricRegistry, current

if TYPE_CHECKING:
    import numpy as np
    from pydantic import BaseModel

    from brokerlab.host import PluginChoices
    from brokerlab.profiles import Profile

__all__ = [
    "AckState",
    "AckStatePersister",
    "AttributedPredicate",
    "BatchAck",
    "CachedEntryView",
    "Clock",
    "CursorContainer",
    "DelayedDeliveryTracker",
    "DelayedDeliveryTrackerFactory",
    "EntryCache",
    "EvictionDecision",
    "EvictionPass",
    "EvictionPredicate",
    "PersistOutcome",
    "PluginContext",
    "Position",
    "RankedCursorContainer",
    "RecoveredAckState",
    "RequeueRule",
    "RulePredicate",
    "Scheduler",
    "SilentPredicate",
    "SimulationOutput",
    "SimulationRequest",
    "SingleEntryCache",
    "TimerHandle",
]

Position = tuple[int, int]
"""`(ledger_id, entry_id)`; tuples order lexicographically, exactly as Pulsar positions do."""


# --------------------------------------------------------------------------------------------
# Time and scheduling
# --------------------------------------------------------------------------------------------


class Clock(Protocol):
    """The simulation's clocks. Both only move forward, and only when the event loop moves them."""

    def now_ns(self) -> int:
        """Monotonic time in nanoseconds (TTL thresholds, prune throttles, queue timestamps)."""

    def now_ms(self) -> int:
        """Epoch time in milliseconds (message publish and deliver-at times, timers)."""


class TimerHandle(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None:
        """Drop the callback if it has not run yet; calling it again does nothing."""


class Scheduler(Protocol):
    """Runs callbacks at a later simulated instant, in (time, scheduling order) order."""

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> TimerHandle:
        """Run `callback` when the monotonic clock reaches `when_ns` (now, if it is past)."""


@dataclass(frozen=True)
class PluginContext:
    """Everything a plugin factory may use, handed over once when the simulation is built.

    `settings` is the validated broker settings model of the profile (Pulsar keys as snake_case
    attributes); `plugin_settings` maps a settings namespace (`sim.<namespace>.`) to its
    validated model. `eviction_predicates` is the chain a removal queue consults, in order;
    `new_cursor_container` builds the active-cursor container the profile selected.

    `storage_write_ns` describes the storage the brokers share (the workload's
    `storage.write_latency_ms`): given the name of a writer (a durable cursor), it returns a
    function that draws how long each of that writer's writes takes to become durable, in
    nanoseconds. A persister that models its writes in flight uses it; storage completes one
    writer's writes in the order they were made. `None` when writes are durable at once.
    """

    settings: Any
    clock: Clock
    scheduler: Scheduler
    rng: np.random.Generator
    plugin_settings: Mapping[str, BaseModel] = field(default_factory=dict)
    eviction_predicates: tuple[EvictionPredicate, ...] = ()
    new_cursor_container: Callable[[], CursorContainer] | None = None
    storage_write_ns: Callable[[str], Callable[[], int]] | None = None

    def plugin(self, namespace: str) -> BaseModel:
        """The validated settings a plugin owns under `sim.<namespace>.`."""
        return self.plugin_settings[namespace]

    def with_(self, **changes: Any) -> PluginContext:
        """A copy with some fields replaced (used while the simulation wires its plugins)."""
        return replace(self, **changes)


# --------------------------------------------------------------------------------------------
# Cursor containers
# --------------------------------------------------------------------------------------------


class CursorContainer(Protocol):
    """The active cursors of one managed ledger, ordered by the position the cache tracks.

    The tracked position is a cursor's read position (or its mark-delete position when the legacy
    `cacheEvictionByMarkDeletedPosition` is set). A cursor added with position `None` is known
    but untracked: it counts in `len()` and never in position queries.
    """

    def add(self, cursor: str, position: Position | None) -> None:
        """Start tracking `cursor`; adding a known cursor moves it instead."""

    def remove(self, cursor: str) -> None:
        """Stop tracking `cursor`; removing an unknown cursor does nothing."""

    def update(self, cursor: str, position: Position | None) -> None:
        """Move `cursor` to `position` (`None` untracks it but keeps it known).

        Moving an unknown cursor does nothing: the broker moves inactive cursors too, and a move
        must never make a cursor active.
        """

    def tracked_count(self) -> int:
        """Number of cursors with a position (what expected read counts on a tail write use)."""

    def slowest_position(self) -> Position | None:
        """The smallest tracked position, or `None` when nothing is tracked."""

    def __len__(self) -> int:
        """Number of known cursors, tracked or not."""

    def __contains__(self, cursor: object) -> bool: ...


@runtime_checkable
class RankedCursorContainer(CursorContainer, Protocol):
    """A container that also answers PIP-430's rank query, the one expected read counts need."""

    def count_at_or_before(self, cursor: str) -> int:
        """|{tracked cursors d : pos(d) <= pos(cursor)}|, counting `cursor` itself.

        Zero when `cursor` is unknown or untracked.
        """


# --------------------------------------------------------------------------------------------
# Entry caches and eviction predicates
# --------------------------------------------------------------------------------------------


class EvictionDecision(enum.Enum):
    """What a removal-queue pass does with the entry at its head."""

    REMOVE = "remove"
    """Evict the entry and go on with the next one."""
    REQUEUE = "requeue"
    """Move the entry to the tail (its timestamp restarts) and go on."""
    STOP = "stop"
    """End this pass; the head stays where it is."""
    MISSING = "missing"
    """The entry already left its ledger cache (range removal); drop the queue slot and go on."""


class EvictionPass(enum.Enum):
    """Why a removal-queue pass runs: expiry (TTL) or to free space."""

    TIME = "time"
    SIZE = "size"


class CachedEntryView(Protocol):
    """Read-only view of one cached entry, as an eviction predicate sees it."""

    @property
    def position(self) -> Position: ...

    @property
    def size(self) -> int:
        """Bytes counted for this entry."""

    @property
    def timestamp_ns(self) -> int:
        """Monotonic time of insertion, reset on every requeue."""

    @property
    def requeue_count(self) -> int: ...

    @property
    def accessed(self) -> bool:
        """Whether a lookup hit this entry since it was (re)queued."""

    @property
    def expected_reads(self) -> int | None:
        """Reads still expected (may be zero or negative), or `None` when nothing is tracked."""


class EvictionPredicate(Protocol):
    """One link of the chain a removal queue consults for each head entry.

    The queue asks the predicates in order; the first one that returns a decision wins, and when
    every predicate abstains (returns `None`) the queue applies its own rule (REMOVE an expired
    entry in a time pass, STOP at a live one; REMOVE in a size pass). The `on_*` notifications
    let a predicate keep its own state (frequency bits, ghost entries); they must be cheap.
    """

    @property
    def name(self) -> str:
        """The predicate's name, which its requeues are attributed to; a class attribute
        satisfies it.

        A predicate named after one of PIP-430's requeue reasons (`recently-accessed`,
        `expected-reads`) counts its requeues in that reason's metric (`cache_requeues_accessed`,
        `cache_requeues_expected_reads`), whoever wrote it; another predicate names its counter
        through [`AttributedPredicate`][brokerlab.protocols.AttributedPredicate].
        """

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        """Decide for `entry` in a pass of `kind`; older than `threshold_ns` = expired."""

    def on_insert(self, entry: CachedEntryView) -> None:
        """An entry entered the cache."""

    def on_access(self, entry: CachedEntryView) -> None:
        """A lookup hit an entry."""

    def on_remove(self, entry: CachedEntryView) -> None:
        """An entry left the cache, for any reason."""


@runtime_checkable
class SilentPredicate(EvictionPredicate, Protocol):
    """Optional: a predicate that may do without the `on_*` notifications.

    When `needs_notifications` is false (read once, when the queue is built), the queue never
    calls `on_insert`, `on_access` or `on_remove`, which keeps inserts and hits cheap. A predicate
    without this member is notified of everything.
    """

    @property
    def needs_notifications(self) -> bool:
        """Whether the queue must call the `on_*` notifications; a class attribute satisfies it."""


@runtime_checkable
class AttributedPredicate(EvictionPredicate, Protocol):
    """Optional: a predicate that names the counter its requeues count in.

    Every REQUEUE this predicate decides adds one to the metric `requeue_metric` (a registered
    counter, such as `cache_requeues_accessed` for a variant of the recently-accessed rule).
    Without this member the queue attributes by
    [`name`][brokerlab.protocols.EvictionPredicate.name].
    """

    @property
    def requeue_metric(self) -> str:
        """The registered counter metric this predicate's requeues add to."""


@dataclass(frozen=True)
class RequeueRule:
    """An eviction predicate's decision written as data, for a queue to apply without a call.

    The rule REQUEUEs an entry the pass would otherwise remove (an expired entry in a time pass,
    any entry in a size pass) when every condition holds, and abstains otherwise, as on a live
    entry in a time pass. PIP-430's two reasons are rules: recently accessed is
    `RequeueRule(when_accessed=True)`; expected reads is
    `RequeueRule(min_expected_reads=1, below_requeues=N)`.
    """

    when_accessed: bool = False
    """Only an entry read since it was (re)queued (`CachedEntryView.accessed`)."""
    min_expected_reads: int = 0
    """Only an entry with at least this many expected reads (0 when none are tracked)."""
    below_requeues: int | None = None
    """Only an entry requeued fewer times than this (`requeue_count`); `None`: no cap."""

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        """What the rule decides for ``entry``: REQUEUE or ``None`` (abstain)."""
        if self.when_accessed and not entry.accessed:
            return None
        if self.min_expected_reads > 0 and (entry.expected_reads or 0) < self.min_expected_reads:
            return None
        if self.below_requeues is not None and entry.requeue_count >= self.below_requeues:
            return None
        if kind is EvictionPass.TIME and entry.timestamp_ns >= threshold_ns:
            return None  # live: the queue's own rule stops there
        return EvictionDecision.REQUEUE


@runtime_checkable
class RulePredicate(EvictionPredicate, Protocol):
    """Optional: a predicate whose `decide` is a [`RequeueRule`][brokerlab.protocols.RequeueRule].

    A queue that knows rules applies `requeue_rule` itself, on its own entries, instead of calling
    `decide` for every entry it looks at; the decisions must be those `decide` gives (the contract
    kit checks it on random entries). `None` means "call `decide`" (a subclass that overrides
    `decide` returns it). Read once, when the queue is built.
    """

    @property
    def requeue_rule(self) -> RequeueRule | None:
        """The rule `decide` follows, or `None`."""


class EntryCache(Protocol):
    """The broker-wide entry-cache manager and its per-ledger caches.

    One instance serves the whole broker, because the size limit (`managedLedgerCacheSizeMB`) is
    global. The broker opens one managed ledger per topic and tells the cache about every event that
    Pulsar's cache sees: adds, reads, dispatch releases, replays, cursor moves, ledger deletion.
    """

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        """A managed ledger was loaded. `cursors` is its live active-cursor container."""

    def close_ledger(self, topic: str) -> None:
        """The managed ledger was closed or unloaded: everything it cached goes."""

    def insert(self, topic: str, position: Position, size: int) -> bool:
        """A producer's entry was persisted (the add path). Returns whether it is now cached."""

    def read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> list[int]:
        """A cursor reads entries `first..last` (inclusive) of one ledger.

        Returns the entry ids that the cache cannot serve, in order: the broker reads exactly those
        from storage and then calls
        [`storage_read`][brokerlab.protocols.EntryCache.storage_read]. An empty list is a full
        hit.
        """

    def storage_read(
        self,
        topic: str,
        ledger_id: int,
        entry_ids: Sequence[int],
        sizes: Sequence[int],
        reader: str,
    ) -> None:
        """Entries were read from storage for `reader`; the cache may insert them."""

    def released(self, topic: str, position: Position) -> None:
        """A reader's copy of `position` was dispatched and released (one read consumed)."""

    def replayed(self, topic: str, position: Position) -> None:
        """`position` entered a dispatcher's replay queue: one more read is expected."""

    def cursors_changed(self, topic: str) -> None:
        """The topic's active-cursor container changed (add, remove or move)."""

    def ledger_deleted(self, topic: str, ledger_id: int) -> None:
        """A ledger was trimmed or deleted; its cached entries go."""

    def evict_expired(self) -> None:
        """The periodic eviction task (every `managedLedgerCacheEvictionIntervalMs`)."""

    def size_bytes(self) -> int:
        """Bytes currently counted by the cache (may exceed the limit while eviction is pending)."""

    def stats(self) -> Mapping[str, float]:
        """Cumulative counters and current gauges, by registered metric name."""


@runtime_checkable
class SingleEntryCache(EntryCache, Protocol):
    """Optional: an entry cache with one-entry forms of its read, storage-read and release calls.

    A caller that makes one-entry requests (the trace replay) uses these instead of
    [`read`][brokerlab.protocols.EntryCache.read] with `first == last`,
    [`storage_read`][brokerlab.protocols.EntryCache.storage_read] with one-element sequences and
    [`released`][brokerlab.protocols.EntryCache.released] with a position tuple. Each must do
    exactly what its general form does, counters included.
    """

    def read_entry(self, topic: str, ledger_id: int, entry_id: int, reader: str) -> bool:
        """`read(topic, ledger_id, entry_id, entry_id, reader)`; True on a hit."""

    def storage_read_entry(
        self, topic: str, ledger_id: int, entry_id: int, size: int, reader: str
    ) -> None:
        """`storage_read(topic, ledger_id, (entry_id,), (size,), reader)`."""

    def release_entry(self, topic: str, ledger_id: int, entry_id: int) -> None:
        """`released(topic, (ledger_id, entry_id))`."""


# --------------------------------------------------------------------------------------------
# Delayed delivery
# --------------------------------------------------------------------------------------------


class DelayedDeliveryTracker(Protocol):
    """One subscription's view of delayed messages (Pulsar's `DelayedDeliveryTracker`).

    All times are epoch milliseconds from [`Clock.now_ms`][brokerlab.protocols.Clock.now_ms].
    `add_message` returning `False` means "not delayed: dispatch it now"; `True` means the tracker
    owns the position until `get_scheduled_messages` hands it back. As in Pulsar, once a message
    with a deliver-at time reached the tracker, the dispatcher offers it every new message: one
    without a deliver-at time comes with `-1`, and ones already due come too.
    """

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool: ...

    def has_message_available(self) -> bool:
        """Whether `get_scheduled_messages` would return something now."""

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        """Up to `max_messages` due positions, in (bucket time, ledger, entry) order; removed."""

    def number_of_delayed_messages(self) -> int:
        """Positions held now. Pulsar's admin statistic; the broker model does not ask (the
        contract kit does), so report memory and counts through the factory's `stats()`."""

    def buffer_memory_usage(self) -> int:
        """Pulsar's own memory estimate for this tracker, in bytes. The broker model does not
        ask: `delayed_pulsar_memory_bytes` comes from the factory's `stats()`."""

    def should_pause_all_deliveries(self) -> bool:
        """The fixed-delay lookahead rule: pause normal reads until delayed messages are due."""

    def reset_tick_time(self, tick_ms: int) -> None:
        """This subscription's tick is now `tick_ms` (Pulsar's dispatcher passes the topic's)."""

    @property
    def tick_ms(self) -> int:
        """The tick this subscription's cutoff, timer spacing and fixed-delay tolerance use now.

        Only this subscription's own `reset_tick_time` may change it; the broker reads it to
        count `delayed_foreign_tick_changes`. A tracker without a tick (delivery switched off)
        answers a constant.
        """

    def mark_delete_moved(self, position: Position) -> None:
        """The subscription's mark-delete position advanced to `position`."""

    def clear(self) -> None: ...

    def close(self) -> None: ...


class DelayedDeliveryTrackerFactory(Protocol):
    """Creates one tracker per subscription; may share state between a topic's trackers."""

    def new_tracker(
        self, topic: str, subscription: str, wake: Callable[[], None]
    ) -> DelayedDeliveryTracker:
        """A tracker for one subscription. `wake` asks that dispatcher to read more entries."""

    def stats(self) -> Mapping[str, float]:
        """Memory and activity across all trackers (index bytes, positions, prunes, wake-ups)."""

    def close(self) -> None: ...


# --------------------------------------------------------------------------------------------
# Ack-state persistence
# --------------------------------------------------------------------------------------------


class BatchAck(NamedTuple):
    """A partially acknowledged batch entry: bit `i` of `unacked` set = index `i` unacked."""

    batch_size: int
    unacked: int


class AckState(Protocol):
    """A durable cursor's live acknowledgement state, read-only. The broker owns the truth."""

    @property
    def mark_delete(self) -> Position:
        """Every position at or before this one is acknowledged."""

    def acked_ranges(self) -> Sequence[tuple[Position, Position]]:
        """Individually acked ranges after the mark-delete, half-open `(lower, upper]`, in order.

        A range never spans two ledgers; a run starting at entry 0 has lower bound `(L, -1)`.
        """

    def range_count(self) -> int:
        """`len(acked_ranges())`, without building the list."""

    def batch_acks(self) -> Mapping[Position, BatchAck]:
        """Partially acknowledged batch entries after the mark-delete."""

    def subscription_properties(self) -> Mapping[str, str]: ...

    def mark_delete_properties(self) -> Mapping[str, int]:
        """E.g. the producers' last sequence ids of the deduplication cursor."""


@dataclass(frozen=True)
class RecoveredAckState:
    """What a cursor reads back after a restart."""

    mark_delete: Position
    acked_ranges: tuple[tuple[Position, Position], ...] = ()
    batch_acks: Mapping[Position, BatchAck] = field(default_factory=dict)
    mark_delete_properties: Mapping[str, int] = field(default_factory=dict)
    subscription_properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PersistOutcome:
    """One cursor-storage write, for metrics: bytes written and what had to be left out."""

    bytes_written: int
    ranges_persisted: int
    ranges_dropped: int = 0
    to_metadata_store: bool = False


class AckStatePersister(Protocol):
    """How one durable cursor writes its ack state and reads it back after a crash.

    The broker calls `acked` after every acknowledgement; the persister decides (rate limits,
    dirtiness, flush cadence) whether that turns into a write. `flush` is the broker's periodic
    cursor-flush task; `close` a graceful unload; `crash` drops everything not yet durable.
    """

    def created(self, state: AckState) -> PersistOutcome | None:
        """The cursor was created at `state.mark_delete`; that position is durable from now on."""

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        """The state changed in `changed_ledgers`; return the write made now, if any."""

    def flush(self, state: AckState) -> PersistOutcome | None: ...

    def close(self, state: AckState) -> PersistOutcome | None: ...

    def crash(self) -> None:
        """The broker died: in-flight and unflushed state is lost."""

    def recover(self) -> RecoveredAckState:
        """The state a restarted broker reads back. Must claim nothing that was not acked."""

    def should_pause_dispatch(self, state: AckState) -> bool:
        """Whether a multi-consumer dispatcher must stop reading new entries now."""

    def stats(self) -> Mapping[str, float]:
        """This cursor's own counters; the simulation adds them up over all cursors.

        Writes, bytes and dropped ranges are not repeated here: the broker counts them from each
        [`PersistOutcome`][brokerlab.protocols.PersistOutcome].
        """


# --------------------------------------------------------------------------------------------
# Simulators (broker models)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulationRequest:
    """One simulation to run: a validated profile, its resolved plugin choices, a workload
    document of the simulator's own model, the seed, an optional progress callback that takes
    the fraction of simulated time done (0..1), and the metric registry of the run's plugin host
    (by default the one in effect, `brokerlab.metrics.current()`): the names plugins may report
    and how they combine."""

    profile: Profile
    choices: PluginChoices
    workload: Any
    seed: int
    progress: Callable[[float], None] | None = None
    metrics: MetricRegistry = field(default_factory=current)


@dataclass(frozen=True)
class SimulationOutput:
    """What a simulator returns.

    `metrics` maps declared metric names (`brokerlab_metrics`) to numbers, leaving out what was
    not measured (the run reports it as null); `plugins`
    names what the run used, by role (extension point or the simulator's own components);
    `timeline` holds optional samples over simulated time, each a mapping with a `t_s` key.
    `per_broker` holds, for a run of more than one broker, each broker's own metrics in broker
    order (`metrics` then holds the cluster's); empty otherwise, so one-broker results stay as
    they were.
    """

    metrics: Mapping[str, float]
    plugins: Mapping[str, str]
    events: int = 0
    timeline: tuple[Mapping[str, float], ...] = ()
    per_broker: tuple[Mapping[str, float], ...] = ()
