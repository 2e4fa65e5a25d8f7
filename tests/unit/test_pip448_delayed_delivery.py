"""The PIP-448 topic-level tracker plugin: the draft divergences D1-D5, lifecycle details, and a
differential test against the reference model R_S of delayed-delivery.md §0.2.

Spec scenarios 17-41 (upstream ``InMemoryTopicDeliveryTrackerTest`` and its factory test) live in
``tests/conformance``, run under both the promised and the draft semantics."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from delayed_support import FakeTime, Wakes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_legacy_delayed_delivery import config

from brokerlab import load_profile
from brokerlab.protocols import PluginContext, Position
from brokerlab.testing.delayed_delivery import DeliveryLog
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyTracker
from brokerlab_plugins.pip448_delayed_delivery.draft import DraftManager
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import (
    PruneRules,
    TopicManager,
    TrackerProxy,
)


def factory(
    time: FakeTime,
    tick: int,
    strict: bool,
    lookahead: int = 0,
    *,
    draft: bool = False,
    idle_ms: int = 0,
) -> TopicFactory:
    return TopicFactory(
        config(time, tick, strict, lookahead), PruneRules(tick, 0, 0.5), idle_ms, draft
    )


def subs(f: TopicFactory, *names: str, topic: str = "t") -> list[TrackerProxy]:
    return [f.new_tracker(topic, name, Wakes()) for name in names]  # type: ignore[misc]


def manager(f: TopicFactory, topic: str = "t") -> TopicManager:
    m = f.managers[topic]
    assert isinstance(m, TopicManager)
    return m


def draft_manager(f: TopicFactory, topic: str = "t") -> DraftManager:
    m = f.managers[topic]
    assert isinstance(m, DraftManager)
    return m


def positions(f: TopicFactory, topic: str = "t") -> int:
    return int(f.managers[topic].figures()["delayed_index_positions"])


@pytest.mark.parametrize("draft", [False, True])
def test_a_subscription_created_after_a_tick_reset_takes_the_managers_tick_in_the_draft(
    draft: bool,
) -> None:
    """In the draft of PR #24927 (commit 06ea0be7) a subscription created after another
    subscription's ``resetTickTime`` takes the manager's current tick, the one that reset set;
    PIP-448 as promised gives every subscription the configured tick."""
    time = FakeTime(ms=1000)
    f = factory(time, 256, True, draft=draft)
    (s1,) = subs(f, "s1")
    s1.reset_tick_time(32)
    (s2,) = subs(f, "s2")
    if draft:
        assert draft_manager(f).subs["s2"].tick_ms == 32
    else:
        assert s2.view.tick_ms == 256


def test_idle_manager_is_reused_within_the_window_then_removed() -> None:
    time = FakeTime(ms=0)
    f = factory(time, 1, True, idle_ms=1000)
    (s,) = subs(f, "s")
    first = f.managers["t"]
    s.close()
    time.advance(500)
    (again,) = subs(f, "s")
    assert f.managers["t"] is first
    again.close()
    time.advance(2000)
    assert f.managers == {}


def test_adds_at_or_before_the_mark_delete_in_several_buckets_come_back_as_in_r_s() -> None:
    """R_S discards positions <= md only when md moves; later adds at or before it stay and come
    back. Three such adds in three buckets are all due at once: one read drains them all."""
    time = FakeTime(ms=0)
    f = factory(time, 1, True)
    (s,) = subs(f, "s")
    reference = LegacyTracker(config(time, 1, True), Wakes())
    s.mark_delete_moved((5, 5))
    for entry in range(3):
        for t in (s, reference):
            assert t.add_message(1, entry, 10 + entry)
    time.set(100)
    expected = reference.get_scheduled_messages(10)
    assert expected == [(1, 0), (1, 1), (1, 2)]
    assert s.get_scheduled_messages(10) == expected
    assert s.number_of_delayed_messages() == 0


# ---- the draft divergences show up; the default never shows them -------------------------------


def _returns(draft: bool, strict: bool) -> tuple[int, int]:
    """(early returns, duplicate returns) of a crafted two-subscription run."""
    time = FakeTime(ms=1000)
    tick = 100
    f = factory(time, tick, strict, draft=draft)
    a, b = subs(f, "a", "b")
    deliver_at = {(1, e): 1350 + e for e in range(5)}
    accepted: Counter[tuple[str, Position]] = Counter()
    returned: Counter[tuple[str, Position]] = Counter()
    early = 0
    for pos, at in deliver_at.items():
        if a.add_message(*pos, at):
            accepted["a", pos] += 1
    for now in range(1200, 1600, 25):
        time.set(now)
        for name, s in (("a", a), ("b", b)):
            for pos in s.get_scheduled_messages(100):
                returned[name, pos] += 1
                allowance = 0 if strict else tick
                early += deliver_at[pos] - allowance > now
    duplicates = sum(max(0, n - accepted[key]) for key, n in returned.items())
    return early, duplicates


@pytest.mark.parametrize("strict", [True, False])
def test_draft_semantics_deliver_early_and_twice_default_never(strict: bool) -> None:
    assert _returns(draft=False, strict=strict) == (0, 0)
    early, duplicates = _returns(draft=True, strict=strict)
    assert early > 0  # D1
    assert duplicates > 0  # D2 (a again and again) and D5 (b never added them)


# ---- differential test against R_S ------------------------------------------------------------


def _discard(reference: LegacyTracker, md: Position) -> None:
    """R_S's extra operation: drop held positions <= md (count adjusts; flags, timer untouched)."""
    reference.index.remove_at_or_before(md)


OPS = st.one_of(
    st.tuples(
        st.just("add"),
        st.integers(0, 3),
        st.integers(1, 3),
        st.integers(0, 12),
        st.integers(-5, 400),
    ),
    st.tuples(st.just("read"), st.integers(0, 3), st.integers(1, 6)),
    st.tuples(st.just("md"), st.integers(0, 3), st.integers(0, 2), st.integers(0, 6)),
    st.tuples(st.just("advance"), st.integers(0, 120)),
    st.tuples(st.just("avail"), st.integers(0, 3)),
    st.tuples(st.just("pause"), st.integers(0, 3)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_subs=st.integers(2, 4),
    tick=st.sampled_from([1, 10, 64, 100]),
    strict=st.booleans(),
    lookahead=st.sampled_from([0, 3]),
    ops=st.lists(OPS, max_size=80),
)
def test_differential_against_reference_model(
    n_subs: int, tick: int, strict: bool, lookahead: int, ops: list[tuple[int | str, ...]]
) -> None:
    time, ref_time = FakeTime(ms=1000), FakeTime(ms=1000)
    f = factory(time, tick, strict, lookahead)
    names = [f"s{i}" for i in range(n_subs)]
    wakes = {n: Wakes() for n in names}
    ref_wakes = {n: Wakes() for n in names}
    plugin = {n: f.new_tracker("t", n, wakes[n]) for n in names}
    cfg = config(ref_time, tick, strict, lookahead)
    ref = {n: LegacyTracker(cfg, ref_wakes[n]) for n in names}
    marks: dict[str, Position] = {}
    log = DeliveryLog(tick, strict)  # the contract kit's checks: once per add, never early
    for op in ops:
        kind = op[0]
        if kind == "advance":
            target = time.ms + int(op[1])
            time.advance(target)
            ref_time.advance(target)
            continue
        name = names[int(op[1]) % n_subs]
        p, r = plugin[name], ref[name]
        if kind == "add":
            pos = (int(op[2]), int(op[3]))
            at = time.ms + int(op[4])
            got = p.add_message(*pos, at)
            assert got == r.add_message(*pos, at)
            log.added(("t", name), pos, at, time.ms, got)
        elif kind == "read":
            got_list = p.get_scheduled_messages(int(op[2]))
            assert got_list == r.get_scheduled_messages(int(op[2]))
            log.handed_back(("t", name), got_list, time.ms)
        elif kind == "md":
            md = (int(op[2]), int(op[3]))
            if name not in marks or md > marks[name]:
                marks[name] = md
                p.mark_delete_moved(md)
                _discard(r, md)
        elif kind == "avail":
            assert p.has_message_available() == r.has_message_available()
        else:
            assert p.should_pause_all_deliveries() == r.should_pause_all_deliveries()
        assert p.number_of_delayed_messages() == r.number_of_delayed_messages()
    for n in names:
        assert plugin[n].number_of_delayed_messages() == ref[n].number_of_delayed_messages()
        assert wakes[n].count == ref_wakes[n].count  # the same timer wake-ups as R_S


def from_profile(*keys: str) -> TopicFactory:
    """The factory the plugin builds from a profile setting ``keys`` (tick 1000 ms)."""
    time = FakeTime(ms=0)
    settings = load_profile(None, list(keys)).settings
    context = PluginContext(
        settings=settings, clock=time, scheduler=time, rng=np.random.default_rng(0)
    )
    return TopicFactory.from_context(context)


@pytest.mark.parametrize("interval", ["0", "-1", "-9223372036854775808"])
def test_a_prune_interval_of_zero_or_less_is_adaptive(interval: str) -> None:
    """``delayedDeliveryPruneMinIntervalMillis`` is a long with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6, whose doc says "0 or
    a negative value" selects the adaptive interval), and the manager uses it only when positive,
    else the tick clamped to [5, 50] ms (apache/pulsar
    ``InMemoryTopicDelayedDeliveryTrackerManager.java`` at the same commit, constructor)."""
    f = from_profile(f"delayedDeliveryPruneMinIntervalMillis={interval}")
    assert f.prune.interval_ns == 50 * 1_000_000


@pytest.mark.parametrize(
    ("ratio", "effective"),
    [("NaN", 0.5), ("7", 1.0), ("Infinity", 1.0), ("-0.25", 0.0), ("-Infinity", 0.0)],
)
def test_any_prune_ratio_is_clamped_as_the_draft_clamps_it(ratio: str, effective: float) -> None:
    """``delayedDeliveryPruneEligibleRatio`` is a double with no bound (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6); the manager maps
    NaN to 0.5 and clamps into [0, 1] (apache/pulsar
    ``InMemoryTopicDelayedDeliveryTrackerManager.java`` at the same commit, constructor)."""
    f = from_profile(f"delayedDeliveryPruneEligibleRatio={ratio}")
    assert f.prune.ratio == effective


@pytest.mark.parametrize("idle", ["-1", "-9223372036854775808"])
def test_an_idle_time_below_zero_removes_the_manager_at_once(idle: str) -> None:
    """``delayedDeliveryTopicManagerIdleMillis`` is a long with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and the factory
    removes an unused manager at once when it is ``<= 0`` (apache/pulsar
    ``InMemoryTopicDelayedDeliveryTrackerFactory.java`` at
    32f21700bf0bdc1ab2a4c7724f56b0ef00a86634, ``newTracker0``)."""
    f = from_profile(f"delayedDeliveryTopicManagerIdleMillis={idle}")
    (s,) = subs(f, "s")
    s.close()
    assert f.managers == {}
