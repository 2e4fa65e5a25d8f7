"""The deduplication cursor ``pulsar.dedup``: ack-state.md §7, §6.3 cause 6 and scenario 37.

Scenario 37: 12,000 producers; a snapshot holds ``brokerDeduplicationMaxNumberOfProducers``
(10,000) LongProperty entries (about 23 B each, about 230 KB); after a restart, the 2,000 left out
lose their sequence ids, unless they published after the snapshot position (recovery replays the
entries after the cursor's mark-delete).
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_unload import BASE, HOST, PERSISTERS, plugin_context

from brokerlab import load_profile, simulate
from brokerlab.broker.broker import BrokerTuning
from brokerlab.broker.dedup import Deduplication
from brokerlab.broker.events import EPOCH_MS, EventLoop
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.protocols import PersistOutcome
from brokerlab.workloads import parse_workload
from brokerlab_plugins.ack_state.storage import FIRST_CURSOR_LEDGER
from brokerlab_plugins.ack_state.wire_size import header_bytes, managed_cursor_info_bytes

NAMES = [f"standalone-0-{n}" for n in range(12_000)]


def varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def dedup(
    producers: int,
    interval: int,
    cap: int = 10_000,
    *,
    persister: str = "range-count",
    rate_limit: float = 0,
    batch: int = 1,
    per_ledger: int = 50_000,
) -> Deduplication:
    choices, context = plugin_context(
        [
            f"sim.ackStatePersister={persister}",
            f"managedLedgerDefaultMarkDeleteRateLimit={rate_limit}",
        ],
        EventLoop(),
    )
    record = choices.ack_state_persister.record
    ml = ManagedLedger("t", LedgerIds(), per_ledger)
    d = Deduplication(
        ml, NAMES[:producers], batch, record.factory(context, "t/pulsar.dedup"), interval, cap
    )
    d.created()
    return d


def publish(d: Deduplication, entries: int) -> list[PersistOutcome]:
    """Persist ``entries`` entries; returns the snapshot writes they caused."""
    out = []
    for _ in range(entries):
        pos = d.ledger.append(100, 0, batch=d.batch_size)
        written = d.persisted(pos)
        if written is not None:
            out.append(written)
    return out


# ---- the cap -----------------------------------------------------------------------------------


def test_scenario_37_dedup_cap_a_snapshot_holds_10000_of_12000_producers() -> None:
    d = dedup(12_000, 12_000, batch=20_000)  # 3-byte sequence ids (19,999)
    initial = d.cursor.md
    (write,) = publish(d, 12_000)
    snapshot = d.cursor.mark_delete_properties()
    assert list(snapshot) == NAMES[:10_000]  # the first 10,000 to publish
    assert set(snapshot.values()) == {19_999}
    assert d.cursor.mark_delete == d.ledger.last_position
    header = 2 + varint(d.cursor.md[0]) + varint(d.cursor.md[1])
    properties = sum(4 + varint(len(n)) + len(n) + varint(19_999) for n in NAMES[:10_000])
    # The first snapshot also creates the cursor ledger (Pulsar creates it lazily): its
    # creation entry holds the cursor's last mark-delete entry (the initial position, no
    # properties), and the node is pointed at it.
    creation = header_bytes(initial)  # entry -1: a ten-byte varint
    pointer = managed_cursor_info_bytes(FIRST_CURSOR_LEDGER, initial, last_active_ms=EPOCH_MS)
    assert write.bytes_written == creation + pointer + header + properties  # all 10,000
    assert 230_000 <= properties <= 260_000  # 23-26 B each for 14-17 character names


def test_scenario_37_no_snapshot_before_the_entry_interval() -> None:
    d = dedup(5, 1000)
    assert publish(d, 999) == []
    assert d.cursor.mark_delete_properties() == {}
    assert len(publish(d, 1)) == 1
    assert len(d.cursor.mark_delete_properties()) == 5


@pytest.mark.parametrize("interval", [1, 0, -5])
def test_an_entry_interval_of_one_or_less_snapshots_after_every_entry(interval: int) -> None:
    """``brokerDeduplicationEntriesInterval`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and apache/pulsar
    ``MessageDeduplication.java`` at bea207bbbed3e56172bc53c71c667abf51b35edb snapshots when
    ``++snapshotCounter >= snapshotInterval`` (``recordMessagePersisted``): at 1 or less, after
    every entry."""
    profile = load_profile(None, [f"brokerDeduplicationEntriesInterval={interval}"], host=HOST)
    tuning = BrokerTuning.from_settings(profile.settings)
    d = dedup(5, tuning.dedup_interval)
    assert len(publish(d, 3)) == 3


@pytest.mark.parametrize("cap", [0, -1, -(2**31)])
def test_a_producer_cap_of_zero_or_less_snapshots_no_producer(cap: int) -> None:
    """``brokerDeduplicationMaxNumberOfProducers`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and
    ``takeSnapshot`` in apache/pulsar ``MessageDeduplication.java`` at
    bea207bbbed3e56172bc53c71c667abf51b35edb adds a producer only while the snapshot holds fewer
    than ``maxNumberOfProducers``: none at 0 or less, though the snapshot is still written."""
    profile = load_profile(None, [f"brokerDeduplicationMaxNumberOfProducers={cap}"], host=HOST)
    tuning = BrokerTuning.from_settings(profile.settings)
    d = dedup(5, 2, tuning.dedup_max_producers)
    assert len(publish(d, 2)) == 1
    assert d.cursor.mark_delete_properties() == {}
    assert d.cursor.mark_delete == d.ledger.last_position


# ---- the restart half --------------------------------------------------------------------------


@pytest.mark.parametrize("graceful", [False, True])
def test_scenario_37_restart_the_2000_left_out_lose_their_ids(graceful: bool) -> None:
    d = dedup(12_000, 12_000)
    publish(d, 12_000)
    d.reload(graceful)
    assert d.lost == 2_000
    assert set(d.highest) == set(NAMES[:10_000])


def test_scenario_37_unless_they_published_after_the_snapshot_position() -> None:
    """Producers take turns: after the snapshot at entry 12,000, the next 10,500 entries come from
    producers 0..9,999 (all in the snapshot) and 10,000..10,499 (left out, but replayed)."""
    d = dedup(12_000, 12_000, per_ledger=5_000)  # the replay spans ledgers
    publish(d, 12_000)
    publish(d, 10_500)
    truth = dict(d.highest)
    d.reload(graceful=False)
    assert d.lost == 1_500
    assert set(truth) - set(d.highest) == set(NAMES[10_500:12_000])
    assert all(d.highest[n] == truth[n] for n in d.highest)  # replayed ids are the latest


def test_scenario_37_a_close_persists_the_newer_snapshot_and_replays_less() -> None:
    """With the rate limiter on (the clock does not move), the second snapshot only marks the
    cursor dirty: a crash recovers the first and replays the 30 entries after it, every producer
    comes back. An unload's close persists the second, after which nothing is replayed, so the
    10 producers over the cap of 20 lose their ids."""
    for graceful, lost in ((False, 0), (True, 10)):
        d = dedup(30, 30, cap=20, rate_limit=1.0)
        assert len(publish(d, 30)) == 1  # the first snapshot passes the limiter
        assert publish(d, 30) == []  # the second is throttled: dirty
        closing = d.reload(graceful)
        assert (closing is not None) == graceful
        assert d.lost == lost


@settings(max_examples=60, deadline=None)
@given(
    persister=st.sampled_from(PERSISTERS),
    producers=st.integers(1, 40),
    cap=st.integers(1, 40),
    interval=st.integers(1, 30),
    entries=st.integers(0, 120),
    graceful=st.booleans(),
)
def test_scenario_37_lost_producers_match_a_reference_model(
    persister: str, producers: int, cap: int, interval: int, entries: int, graceful: bool
) -> None:
    """No rate limit, so the last snapshot is durable (by its write, or by the close). Lost =
    producers that published, minus the ones the last snapshot kept (the first ``cap`` to
    publish), minus the ones with an entry after it; every other id comes back exactly."""
    d = dedup(producers, interval, cap, persister=persister, per_ledger=25)
    publish(d, entries)
    truth = dict(d.highest)
    d.reload(graceful)
    published = {i % producers for i in range(entries)}
    snapshots = entries // interval
    last = snapshots * interval - 1  # index of the last snapshot's entry; -1: none
    kept = set(range(min(cap, producers, last + 1))) if snapshots else set()
    after = {i % producers for i in range(last + 1, entries)}
    expected = published - kept - after
    assert d.lost == len(expected)
    assert set(truth) - set(d.highest) == {NAMES[i] for i in expected}
    assert all(d.highest[n] == truth[n] for n in d.highest)


# ---- in a simulation ---------------------------------------------------------------------------

MANY_PRODUCERS = """
    name = "dedup"
    duration_s = 10
    drain_s = 2

    [[topics]]
    rate = 200
    arrival = "constant"
    producers = 1000

    [[topics.subscriptions]]
    name = "s"
    type = "Shared"

    [[topics.subscriptions.consumers]]
    count = 2

    [[events]]
    at_s = 6
    kind = "{kind}"
"""


@pytest.mark.parametrize("kind", ["restart", "unload"])
def test_scenario_37_in_a_simulation(kind: str) -> None:
    """1,000 producers taking turns at 200 entries/s, a cap of 900, a snapshot every 1,000
    entries: the snapshot at 5 s keeps producers 0..899, and the ~200 entries until 6 s come from
    producers 0..~199, so producers 900..999 lose their ids at the restart or unload. With
    deduplication off nothing is lost; with it on, the snapshots are cursor writes like any
    other."""
    spec = parse_workload(textwrap.dedent(MANY_PRODUCERS.format(kind=kind)), "w.toml")
    base = [
        *BASE,
        "sim.ackStatePersister=range-count",
        "brokerDeduplicationMaxNumberOfProducers=900",
    ]
    off = simulate(load_profile(None, base, host=HOST), spec, 0, host=HOST).metrics
    on_profile = load_profile(None, [*base, "brokerDeduplicationEnabled=true"], host=HOST)
    on = simulate(on_profile, spec, 0, host=HOST).metrics
    assert off["dedup_producers_lost"] == 0
    assert on["dedup_producers_lost"] == 100
    assert on["ack_persists"] > off["ack_persists"]
    assert on["ack_persisted_bytes"] - off["ack_persisted_bytes"] > 900 * 20
