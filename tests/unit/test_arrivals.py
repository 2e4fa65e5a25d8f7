"""A topic group's arrivals (``broker/arrivals.py``) and the publisher that hands them out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pytest

from brokerlab import load_profile
from brokerlab.broker.arrivals import BLOCK_ENTRIES, WINDOW_ENTRIES, GroupArrivals
from brokerlab.broker.broker import Topic
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import NO_KEY
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.protocols import AckState, AckStatePersister, PersistOutcome
from brokerlab.workloads.loader import parse_workload
from brokerlab.workloads.model import TopicSpec

NS = 1_000_000_000


def spec(**fields: Any) -> TopicSpec:
    return TopicSpec.model_validate(fields)


def drain(arrivals: GroupArrivals) -> dict[str, list[int]]:
    """Every block concatenated, column by column."""
    out: dict[str, list[int]] = {c: [] for c in ("times_ns", "topics", "sizes", "keys", "delays")}
    blocks = 0
    while (block := arrivals.next_block()) is not None:
        blocks += 1
        out["times_ns"] += block.times_ns
        out["topics"] += block.topics
        out["sizes"] += block.sizes
        out["keys"] += block.keys
        out["delays"] += block.delays_ms
    out["blocks"] = [blocks]
    return out


def test_constant_arrivals_match_per_topic_schedules_merged_in_time_then_topic_order() -> None:
    # 3 topics x 20,000 entries/s x 2 s: several windows.
    count, rate, end = 3, 20_000, 2 * NS
    got = drain(GroupArrivals(spec(count=count, rate=rate, arrival="constant"), rng(0), end))
    interval = NS // rate
    reference = sorted((k * interval, t) for t in range(count) for k in range(1, end // interval))
    assert list(zip(got["times_ns"], got["topics"], strict=True)) == reference
    assert got["blocks"][0] > 1


def test_poisson_arrivals_are_in_order_within_the_run_and_per_topic_poisson() -> None:
    count, rate, seconds = 200, 5.0, 100
    end = seconds * NS
    got = drain(GroupArrivals(spec(count=count, rate=rate), rng(1), end))
    times, topics = np.array(got["times_ns"]), np.array(got["topics"])
    assert got["blocks"][0] > 1  # the windows join up
    assert times.min() >= 1 and times.max() < end
    assert np.all(np.diff(times) >= 0)
    same = np.diff(times) == 0
    assert np.all(np.diff(topics)[same] > 0)  # ties in topic order
    counts = np.bincount(topics, minlength=count)
    expected = rate * seconds
    assert abs(counts.mean() / expected - 1) < 0.01
    assert 0.8 < counts.var() / counts.mean() < 1.2  # Poisson: variance = mean
    # Per topic, gaps are exponential: P(gap < mean gap) = 1 - 1/e.
    gaps = np.concatenate([np.diff(times[topics == t]) for t in range(count)])
    assert abs(gaps.mean() / (NS / rate) - 1) < 0.02
    assert abs((gaps < NS / rate).mean() - (1 - np.exp(-1))) < 0.01


def test_a_quiet_group_still_gets_its_few_entries() -> None:
    # 0.01 entries/s per topic over 100 s: about one entry each, in windows mostly empty.
    got = drain(GroupArrivals(spec(count=1000, rate=0.01), rng(2), 100 * NS))
    assert 800 < len(got["times_ns"]) < 1200


def test_no_block_is_empty_even_when_rounding_drops_the_last_entries() -> None:
    # Runs of a few nanoseconds at about one entry per nanosecond: entries rounded up to the
    # end are dropped, and a window left empty must not come back as an empty block.
    for end in range(1, 60):
        arrivals = GroupArrivals(spec(count=2, rate=5e8), rng(end), end)
        while (block := arrivals.next_block()) is not None:
            assert block.times_ns
            assert block.times_ns[0] >= 1 and block.times_ns[-1] < end


def test_same_seed_same_entries_another_seed_others() -> None:
    s = spec(count=5, rate=300, keys={"count": 10, "skew": 1.0})
    first = drain(GroupArrivals(s, rng(3), 10 * NS))
    assert drain(GroupArrivals(s, rng(3), 10 * NS)) == first
    assert drain(GroupArrivals(s, rng(4), 10 * NS))["times_ns"] != first["times_ns"]


def test_entry_contents_follow_the_spec() -> None:
    s = spec(
        count=4,
        rate=1000,
        batch_size=10,
        message_size={"kind": "uniform", "min": 100, "max": 200},
        keys={"count": 7, "skew": 0.5},
        delays=[{"fraction": 0.25, "min_ms": 1000, "max_ms": 2000}],
    )
    got = drain(GroupArrivals(s, rng(5), 5 * NS))
    sizes, keys, delays = (np.array(got[c]) for c in ("sizes", "keys", "delays"))
    # An entry is a batch of 10 messages: its size is the sum of 10 draws.
    assert sizes.min() >= 1000 and sizes.max() <= 2000
    assert abs(sizes.mean() - 1500) < 10
    assert set(keys.tolist()) == set(range(7))
    delayed = delays > 0
    assert abs(delayed.mean() - 0.25) < 0.02
    assert delays[delayed].min() >= 1000 and delays.max() <= 2000
    # 100 entries/s per topic (1,000 messages in batches of 10).
    assert abs(len(sizes) / (4 * 100 * 5) - 1) < 0.05


def test_no_keys_and_fixed_sizes() -> None:
    s = spec(count=2, rate=50, message_size={"kind": "fixed", "value": 321})
    got = drain(GroupArrivals(s, rng(6), NS))
    assert set(got["sizes"]) == {321} and set(got["keys"]) == {NO_KEY}
    assert set(got["delays"]) == {0}


def test_backlog_gives_each_topic_its_entries() -> None:
    s = spec(count=3, rate=10, batch_size=2, message_size={"kind": "fixed", "value": 5})
    backlog = GroupArrivals(s, rng(7), NS).backlog(4)
    assert backlog.sizes == [[10] * 4] * 3
    assert len(backlog.keys) == 3 and all(len(k) == 4 for k in backlog.keys)
    assert backlog.step_ns == NS // 5  # 10 msg/s in batches of 2: an entry every 0.2 s
    assert GroupArrivals(spec(rate=0), rng(7), NS).backlog(2).step_ns == 1


def test_rate_zero_or_no_time_publishes_nothing() -> None:
    assert GroupArrivals(spec(rate=0), rng(8), NS).next_block() is None
    assert GroupArrivals(spec(rate=100), rng(8), 0).next_block() is None


def test_every_entry_of_an_instant_is_published_before_any_consumer_acks() -> None:
    # Three topics publish in lock-step every millisecond; each consumer acks at once. An ack at
    # an instant must find all three topics' entries of that instant already published.
    workload = parse_workload(
        'name = "w"\nduration_s = 0.005\n[[topics]]\nname = "t"\ncount = 3\nrate = 1000\n'
        'arrival = "constant"\n[[topics.subscriptions]]\nname = "s"\n'
        'consumers = [{ name = "c", rate = 0 }]\n',
        "w.toml",
    )
    host = PluginHost()
    profile = load_profile(None, ["sim.entryCache=disabled"], host=host)
    loop = EventLoop()
    seen: list[tuple[int, list[int]]] = []  # (instant, entries per topic) at each ack
    topics: list[Topic] = []

    class Watcher:
        def __init__(self, inner: AckStatePersister) -> None:
            self.inner = inner

        def acked(self, state: AckState, changed: Sequence[int]) -> PersistOutcome | None:
            seen.append((loop.now_ns(), [t.ledger.entry_count() for t in topics]))
            return self.inner.acked(state, changed)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    def watch(inner: AckStatePersister) -> AckStatePersister:
        return cast(AckStatePersister, Watcher(inner))

    broker = wire_broker(profile, host.resolve(profile), loop, 0, watch)
    broker.build(workload)
    topics += broker.topics
    loop.run_until(broker.end_ns)
    ms = NS // 1000
    assert seen == [(k * ms, [k, k, k]) for k in range(1, 5) for _ in range(3)]


def test_window_and_block_sizes_are_what_the_module_promises() -> None:
    # One window holds about WINDOW_ENTRIES entries, handed out in blocks of BLOCK_ENTRIES (the
    # last block of a window holds the rest), so a run's lists stay small.
    arrivals = GroupArrivals(spec(count=10, rate=100_000), rng(10), 10 * NS)
    lengths = []
    while (block := arrivals.next_block()) is not None and len(lengths) < 200:
        lengths.append(len(block.times_ns))
    # The first short block ends the first window (a window is rarely a multiple of a block).
    end = next(i for i, n in enumerate(lengths) if n < BLOCK_ENTRIES)
    assert 0 < lengths[end] < BLOCK_ENTRIES
    assert 0.9 < sum(lengths[: end + 1]) / WINDOW_ENTRIES < 1.1


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True)
def _numpy_errors_raise() -> Any:
    with np.errstate(all="raise"):
        yield
