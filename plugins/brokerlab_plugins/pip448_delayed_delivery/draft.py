"""The draft of PR #24927 (commit 06ea0be7), for ``sim.pip448.draftSemantics=true`` (§4, §0.3).

It reproduces the draft's rules, including the ones that break PIP-448's promises, so that the
dispatcher's metrics show them: tick-multiple buckets compared with the plain cutoff (D1), nothing
removed on read (D2), availability blind to the mark-delete position (D3), a manager-wide tick
(D4) and results filtered only by the mark-delete position (D5).
"""

from __future__ import annotations

from collections.abc import Callable

from brokerlab.protocols import Position, TimerHandle
from brokerlab_plugins.legacy_delayed_delivery.buckets import add_cutoff
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.timer import NS_PER_MS
from brokerlab_plugins.legacy_delayed_delivery.tracker import TrackerConfig
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules
from brokerlab_plugins.pip448_delayed_delivery.proxy import ClosableProxy

__all__ = ["DraftManager"]


class _Context:
    """The draft's ``SubContext``: a dispatcher, its tick and its mark-delete position."""

    __slots__ = ("lookahead", "mark_delete", "name", "strict", "tick_ms", "wake")

    def __init__(self, name: str, wake: Callable[[], None], config: TrackerConfig) -> None:
        self.name = name
        self.wake = wake
        self.tick_ms = config.tick_ms
        self.strict = config.strict
        self.lookahead = config.lookahead
        self.mark_delete: Position | None = None


class DraftManager:
    """``InMemoryTopicDelayedDeliveryTrackerManager`` as the draft writes it."""

    def __init__(
        self,
        topic: str,
        config: TrackerConfig,
        prune: PruneRules,
        on_empty: Callable[[DraftManager], None],
    ) -> None:
        self.topic = topic
        self.config = config
        self.prune_rules = prune
        self.tick_ms = config.tick_ms
        self.index = BucketIndex()
        self.subs: dict[str, _Context] = {}
        self.highest = 0
        self.fixed = True  # topic-wide and never reset in the draft
        self.prunes = 0
        self.wakeup_count = 0
        self.foreign_tick_changes = 0
        self._handle: TimerHandle | None = None
        self._target = -1
        self._last_tick_run = 0
        self._last_prune_ns: int | None = None
        self._on_empty = on_empty

    # ---- lifecycle ----------------------------------------------------------------------------

    def create_or_get(self, subscription: str, wake: Callable[[], None]) -> DraftTracker:
        ctx = self.subs.get(subscription)
        if ctx is None:  # a reused context keeps its old dispatcher and mark-delete (draft)
            ctx = self.subs[subscription] = _Context(subscription, wake, self.config)
            # D4 again: a new context takes the manager's tick, which the last resetTickTime of
            # any subscription set, not the configured one.
            ctx.tick_ms = self.tick_ms
        return DraftTracker(self, ctx)

    def unregister(self, ctx: _Context) -> None:
        if self.subs.pop(ctx.name, None) is not None and not self.subs:
            self.close()
            self._on_empty(self)

    def close(self) -> None:
        self._cancel()
        self._target = -1
        self.index.clear()

    def has_views(self) -> bool:
        return bool(self.subs)

    def figures(self) -> dict[str, float]:
        return {
            "delayed_index_bytes": self.index.heap_bytes,
            "delayed_subscription_state_bytes": 0,
            "delayed_index_positions": self.index.count,
            "delayed_pulsar_memory_bytes": self.index.pulsar_bytes,
            "delayed_prunes": self.prunes,
            "delayed_timer_wakeups": self.wakeup_count,
        }

    # ---- rules --------------------------------------------------------------------------------

    def bucket(self, deliver_at: int) -> int:
        tick = self.tick_ms  # the current tick, each time (D4 makes old buckets stale)
        return deliver_at - deliver_at % tick if tick > 0 else deliver_at

    def cutoff(self, ctx: _Context) -> int:
        return add_cutoff(self.config.clock.now_ms(), ctx.tick_ms, ctx.strict)

    def add(self, ctx: _Context, ledger_id: int, entry_id: int, deliver_at: int) -> bool:
        if deliver_at < 0 or deliver_at <= self.cutoff(ctx):
            return False  # the draft leaves the fixed-delay flag alone here
        self.index.add(self.bucket(deliver_at), ledger_id, entry_id)
        self._update_timer()
        if deliver_at < self.highest - self.tick_ms:
            self.fixed = False
        self.highest = max(self.highest, deliver_at)
        return True

    def available(self, ctx: _Context) -> bool:
        first = self.index.first_key()
        return first is not None and first <= self.cutoff(ctx)  # D3: md ignored

    def visible(self, ctx: _Context) -> bool:
        """A due bucket holds a position after ``ctx``'s mark-delete (the timer's eligibility)."""
        md = ctx.mark_delete
        for key in self.index.buckets.irange(maximum=self.cutoff(ctx)):
            for ledger_id, bitmap in self.index.buckets[key].items():
                if md is None or ledger_id > md[0] or (ledger_id == md[0] and bitmap.max() > md[1]):
                    return True
        return False

    def scheduled(self, ctx: _Context, max_messages: int) -> list[Position]:
        md = ctx.mark_delete
        out: list[Position] = []
        remaining = max_messages
        buckets = self.index.buckets
        for key in list(buckets.irange(maximum=self.cutoff(ctx))):
            for ledger_id in sorted(buckets[key]):
                if md is not None and ledger_id < md[0]:
                    continue
                bitmap = buckets[key][ledger_id]
                entries = (
                    bitmap.iter_equal_or_larger(md[1] + 1)
                    if md is not None and ledger_id == md[0]
                    else iter(bitmap)
                )
                for entry_id in entries:  # D2/D5: nothing removed, no per-subscription filter
                    out.append((ledger_id, entry_id))
                    remaining -= 1
                    if remaining == 0:
                        break
                if remaining == 0:
                    break
            if remaining == 0:
                break
        self.maybe_prune()
        return sorted(set(out))

    def pause(self, ctx: _Context) -> bool:
        return (
            ctx.lookahead > 0
            and self.fixed
            and self.index.count >= ctx.lookahead
            and not self.available(ctx)
        )

    def reset_tick(self, ctx: _Context, tick_ms: int) -> None:
        if tick_ms == self.tick_ms:
            return
        self.tick_ms = tick_ms
        for other in self.subs.values():  # D4: every subscription's tick changes
            if other is not ctx and other.tick_ms != tick_ms:
                self.foreign_tick_changes += 1
            other.tick_ms = tick_ms
        self._update_timer()

    def maybe_prune(self) -> None:
        now = self.config.clock.now_ns()
        last = self._last_prune_ns
        if last is not None and now - last < self.prune_rules.interval_ns:
            return
        self._last_prune_ns = now
        marks = [c.mark_delete for c in self.subs.values()]
        if not marks or any(m is None for m in marks):
            return
        if self.index.remove_at_or_before(min(m for m in marks if m is not None)):
            self.prunes += 1

    # ---- timer (manager-level, §4.5) ----------------------------------------------------------

    def _cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _update_timer(self) -> None:
        first = self.index.first_key()
        if first is None:
            self._cancel()
            self._target = -1
            return
        clock = self.config.clock
        now = clock.now_ms()
        if self._handle is not None and first == self._target and self._target >= now:
            return
        self._cancel()
        delay = max(0, first - now)  # past-due buckets fire at once
        wait = max(delay, self._last_tick_run + self.tick_ms - now)
        fire = now + wait
        if self.config.wheel is not None:
            fire = self.config.wheel.round_up(fire)
        self._target = first
        self._handle = self.config.scheduler.call_at(
            clock.now_ns() + (fire - now) * NS_PER_MS, self._run
        )

    def _run(self) -> None:
        self._handle = None
        self._target = -1
        self._last_tick_run = self.config.clock.now_ms()
        eligible: list[_Context] = []
        if self.index:
            eligible = [c for c in self.subs.values() if self.visible(c)]
            if len(eligible) >= self.prune_rules.threshold(len(self.subs)):
                self.maybe_prune()
        for ctx in eligible:
            self.wakeup_count += 1
            ctx.wake()


class DraftTracker(ClosableProxy["DraftManager", "_Context"]):
    """The draft's per-subscription proxy: every answer comes from the manager's topic state."""

    __slots__ = ()

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool:
        return self.manager.add(self._live(), ledger_id, entry_id, deliver_at_ms)

    def has_message_available(self) -> bool:
        return self.manager.available(self._live())

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        return self.manager.scheduled(self._live(), max_messages)

    @property
    def tick_ms(self) -> int:
        return self._live().tick_ms  # whatever the last resetTickTime of any subscription set (D4)

    def number_of_delayed_messages(self) -> int:
        self._live()
        return self.manager.index.count  # topic-wide

    def buffer_memory_usage(self) -> int:
        self._live()
        return self.manager.index.pulsar_bytes  # topic-wide

    def should_pause_all_deliveries(self) -> bool:
        return self.manager.pause(self._live())

    def reset_tick_time(self, tick_ms: int) -> None:
        self.manager.reset_tick(self._live(), tick_ms)

    def mark_delete_moved(self, position: Position) -> None:
        self._live().mark_delete = position  # stored only; pruning happens elsewhere

    def clear(self) -> None:
        self._live()  # a no-op in the draft
