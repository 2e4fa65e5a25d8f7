"""The benchmarks' bulk load (``legacy_delayed_delivery.bulk``) leaves exactly what one-by-one
``add_message`` calls leave, for the legacy tracker and PIP-448's views.

Each test builds the same trackers twice on one clock, once with ``add_message`` per message and
once with ``load(DelayedBatch)``, and compares everything the trackers hold: every (bucket, ledger)
bitmap with its container layout, counts, Pulsar's estimate and the real-bytes estimate, the
PIP-448 membership maps and per-subscription views, fixed-delay flags, timer targets, and the
factory's stats (the figures the benchmark prints).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from delayed_support import FakeTime, Wakes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap
from test_legacy_delayed_delivery import config

from brokerlab.protocols import Position
from brokerlab_plugins.legacy_delayed_delivery.buckets import Bucketing
from brokerlab_plugins.legacy_delayed_delivery.bulk import DelayedBatch
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyFactory, LegacyTracker
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules, TopicManager, TrackerProxy
from brokerlab_plugins.pip448_delayed_delivery.view import SubscriptionView

NOW = 10_000
Message = tuple[int, int, int]  # ledger, entry, deliver-at


def layout(bitmap: BitMap) -> tuple[list[int], dict[str, Any]]:
    """Values and container layout (array / bitset / run containers and their bytes)."""
    stats = bitmap.get_statistics()
    return list(bitmap), {k: v for k, v in stats.items() if k.startswith("n_")}


def bitmaps(maps: dict[int, BitMap]) -> dict[int, Any]:
    return {ledger: layout(bm) for ledger, bm in maps.items()}


def index_state(index: BucketIndex) -> Any:
    return (
        index.count,
        index.pulsar_bytes,
        index.heap_bytes,
        [(key, bitmaps(ledgers)) for key, ledgers in index.buckets.items()],
    )


def legacy_state(t: LegacyTracker) -> Any:
    return (
        index_state(t.index),
        (t.flags.highest, t.flags.fixed),
        (t.timer.target, t.timer.armed),
        t.number_of_delayed_messages(),
        t.buffer_memory_usage(),
    )


def view_state(v: SubscriptionView) -> Any:
    return (
        bitmaps(v.pending),
        index_state(v.explicit),
        index_state(v.private),
        v.count,
        v.first,
        (v.flags.highest, v.flags.fixed),
        (v.timer.target, v.timer.armed),
        v.state_bytes(),
    )


def topic_state(f: TopicFactory) -> Any:
    m = f.managers["t"]
    assert isinstance(m, TopicManager)
    shared = m.shared
    return (
        index_state(shared.index),
        bitmaps(shared.present),
        bitmaps(shared.multi),
        [view_state(v) for v in m.views.values()],
        dict(f.stats()),
    )


def batch_of(messages: list[Message], bucketing: Bucketing) -> DelayedBatch:
    a = np.array(messages, dtype=np.int64)
    return DelayedBatch.of(a[:, 0], a[:, 1], a[:, 2], bucketing)


def accepted(batch: list[Message], tick: int, strict: bool) -> list[Message]:
    """The messages a tracker with this tick accepts at ``NOW`` (a batch holds no others)."""
    return [m for m in batch if m[2] > (NOW if strict else NOW + tick)]


def blocks_to_messages(blocks: list[tuple[int, int, int, int, int]]) -> list[Message]:
    """Strided runs ``(ledger, start, count, step, delay)``: enough values in one container to
    cross the 4,096-value array/bitset boundary."""
    return [
        (ledger, start + i * step, NOW + delay)
        for ledger, start, count, step, delay in blocks
        for i in range(count)
    ]


singles = st.lists(
    st.tuples(st.integers(1, 3), st.integers(0, 140_000), st.integers(1, 4000)).map(
        lambda m: (m[0], m[1], NOW + m[2])
    ),
    max_size=40,
)
blocks = st.lists(
    st.tuples(
        st.integers(1, 2),
        st.integers(0, 70_000),
        st.integers(1, 5000),
        st.integers(1, 3),
        st.integers(2000, 2200),
    ),
    max_size=2,
).map(blocks_to_messages)
messages = st.tuples(singles, blocks).map(lambda p: p[0] + p[1])
TICKS = st.sampled_from([1, 10, 100, 1000])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- the legacy tracker ----------------------------------------------------------------------


def legacy_pair(tick: int, strict: bool, **kw: bool) -> tuple[LegacyTracker, LegacyTracker]:
    time = FakeTime(ms=NOW)
    a = LegacyFactory(config(time, tick, strict, **kw)).new_tracker("t", "s", Wakes())
    b = LegacyFactory(config(time, tick, strict, **kw)).new_tracker("t", "s", Wakes())
    return a, b


@SLOW
@given(tick=TICKS, strict=st.booleans(), before=singles, batch=messages)
def test_legacy_load_equals_one_by_one(
    tick: int, strict: bool, before: list[Message], batch: list[Message]
) -> None:
    """Messages already tracked (slots to union into), then a batch, both ways."""
    one, bulk = legacy_pair(tick, strict)
    for tracker in (one, bulk):
        for m in before:
            tracker.add_message(*m)  # refusals included: they clear the fixed-delay flag
    batch = accepted(batch, tick, strict)
    if batch:
        for m in batch:
            assert one.add_message(*m)
        bulk.load(batch_of(batch, bulk.buckets))
    assert legacy_state(one) == legacy_state(bulk)


def test_legacy_load_crosses_the_bitset_boundary_like_single_adds() -> None:
    """3,000 entries added singly, then 3,000 more by each path: one container of 6,000 values,
    which must be a bitset both ways (a run container here would shrink both estimates)."""
    one, bulk = legacy_pair(1000, False)
    first = [(7, 2 * i, NOW + 5000) for i in range(3000)]
    second = [(7, 2 * i, NOW + 5000) for i in range(3000, 6000)]
    for tracker in (one, bulk):
        for m in first:
            tracker.add_message(*m)
    for m in second:
        one.add_message(*m)
    bulk.load(batch_of(second, bulk.buckets))
    assert legacy_state(one) == legacy_state(bulk)
    ((_, ledgers),) = bulk.index.buckets.items()
    assert layout(ledgers[7])[1]["n_bitset_containers"] == 1


def test_contiguous_entries_stay_in_a_bitset_not_a_run_container() -> None:
    """pyroaring's ``BitMap(values)`` run-optimises by default; the batch must not."""
    one, bulk = legacy_pair(1, True)
    run = [(3, e, NOW + 50) for e in range(10_000)]
    for m in run:
        one.add_message(*m)
    bulk.load(batch_of(run, bulk.buckets))
    assert legacy_state(one) == legacy_state(bulk)
    assert bulk.index.pulsar_bytes == 8 + 8 + 8192  # one bitset container, not a 6-byte run


def test_out_of_order_batch_clears_the_fixed_delay_flag() -> None:
    one, bulk = legacy_pair(10, True)
    batch = [(1, 1, NOW + 500), (1, 2, NOW + 100)]  # second is 400 ms behind: beyond one tick
    for m in batch:
        one.add_message(*m)
    bulk.load(batch_of(batch, bulk.buckets))
    assert not bulk.flags.fixed
    assert legacy_state(one) == legacy_state(bulk)


@pytest.mark.parametrize("due", [NOW - 5, NOW, NOW + 100])
def test_a_batch_with_a_message_the_tracker_would_refuse_is_rejected(due: int) -> None:
    _, bulk = legacy_pair(100, False)  # non-strict: cutoff now + tick = NOW + 100
    with pytest.raises(ValueError, match="refused"):
        bulk.load(batch_of([(1, 1, NOW + 5000), (1, 2, due)], bulk.buckets))
    assert bulk.number_of_delayed_messages() == 0


def test_a_batch_bucketed_for_another_tracker_is_rejected() -> None:
    _, bulk = legacy_pair(100, True)
    with pytest.raises(ValueError, match="bucketed"):
        bulk.load(batch_of([(1, 1, NOW + 5000)], Bucketing.for_tick(1000, True)))


# ---- PIP-448 ---------------------------------------------------------------------------------


def topic_pair(tick: int, strict: bool) -> tuple[TopicFactory, TopicFactory]:
    time = FakeTime(ms=NOW)
    return tuple(  # type: ignore[return-value]
        TopicFactory(config(time, tick, strict), PruneRules(tick, 0, 0.5), 0) for _ in range(2)
    )


def proxies(f: TopicFactory, n: int) -> list[TrackerProxy]:
    out = []
    for i in range(n):
        proxy = f.new_tracker("t", f"s{i}", Wakes())
        assert isinstance(proxy, TrackerProxy)
        out.append(proxy)
    return out


marks = st.none() | st.tuples(st.integers(0, 3), st.integers(-1, 140_000))


@SLOW
@given(
    tick=TICKS,
    strict=st.booleans(),
    before=singles,
    batches=st.lists(messages, min_size=1, max_size=3),
    mds=st.lists(marks, min_size=3, max_size=3),
)
def test_pip448_load_equals_one_by_one(
    tick: int,
    strict: bool,
    before: list[Message],
    batches: list[list[Message]],
    mds: list[Position | None],
) -> None:
    """Up to three subscriptions, each with its own mark-delete (adds at or before it are kept
    privately) and its own batch, after the first has added some messages singly. Re-adds with
    another deliver-at put a position in two buckets, the case the views pin explicitly."""
    one, bulk = topic_pair(tick, strict)
    subs_one, subs_bulk = proxies(one, len(batches)), proxies(bulk, len(batches))
    for subs in (subs_one, subs_bulk):
        for sub, md in zip(subs, mds, strict=False):
            if md is not None:
                sub.mark_delete_moved(md)
        for m in before:
            subs[0].add_message(*m)
    for sub_one, sub_bulk, messages_ in zip(subs_one, subs_bulk, batches, strict=True):
        batch = accepted(messages_, tick, strict)
        if not batch:
            continue
        for m in batch:
            assert sub_one.add_message(*m)
        sub_bulk.load(batch_of(batch, sub_bulk.view.buckets))
    assert topic_state(one) == topic_state(bulk)
    for a, b in zip(subs_one, subs_bulk, strict=True):
        assert a.number_of_delayed_messages() == b.number_of_delayed_messages()
        assert a.buffer_memory_usage() == b.buffer_memory_usage()


def test_pip448_same_batch_for_many_subscriptions_is_stored_once() -> None:
    """The benchmark's shape: every subscription loads the same batch."""
    one, bulk = topic_pair(1000, False)
    rng = np.random.default_rng(1)
    batch = [
        (3 + i // 5000, i % 5000, NOW + int(rng.integers(2000, 60_000)))
        for i in range(0, 20_000, 2)
    ]
    for sub in proxies(one, 4):
        for m in batch:
            assert sub.add_message(*m)
    subs = proxies(bulk, 4)
    loaded = batch_of(batch, subs[0].view.buckets)
    for sub in subs:
        sub.load(loaded)
    assert topic_state(one) == topic_state(bulk)
    assert bulk.stats()["delayed_index_positions"] == len(batch)
