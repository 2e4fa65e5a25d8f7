"""Spec ack-state.md §10, scenarios 1-37: persister (a), Pulsar as merged.

Common setup (§10): one ledger ``1``, cursor created before the writes (md 1:-1), MessageRange mode,
no rate limit, batch-index acks on, "restart" = crash and reopen through the ledger path.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from ack_state_support import (
    FakeClock,
    FakeState,
    context,
    cursor,
    ledger_layout,
    opened,
    redelivered,
)

from brokerlab import load_profile, simulate
from brokerlab.broker.cursor import Cursor
from brokerlab.errors import ProfileError
from brokerlab.protocols import BatchAck
from brokerlab.workloads import parse_workload
from brokerlab_plugins.ack_state.pause import PauseSwitch
from brokerlab_plugins.ack_state.range_count import RangeCountEncoder, new_range_count_persister
from brokerlab_plugins.ack_state.shapes import Snapshot, ledger_words
from brokerlab_plugins.ack_state.truncation import to_ranges
from brokerlab_plugins.ack_state.whole_state import WholeStatePersister
from brokerlab_plugins.ack_state.wire_size import (
    FRAME_PADDING,
    long_list_map_bytes,
    message_range_bytes,
)

HOLES = """
    name = "holes-{kind}"
    duration_s = 4
    drain_s = 1

    [[topics]]
    rate = 300

    [[topics.subscriptions]]
    name = "s"
    type = "{kind}"
    initial_position = "earliest"

    [[topics.subscriptions.consumers]]
    count = {count}
    rate = 400
    ack_hole_probability = 0.2
"""


@pytest.fixture(scope="module")
def simulated() -> dict[str, Any]:
    """Small runs with holes above the range cap and the pause on, per subscription type."""
    profile = load_profile(
        None,
        [
            "sim.entryCache=disabled",
            "delayedDeliveryEnabled=false",
            "sim.ackStatePersister=range-count",
            "managedLedgerMaxUnackedRangesToPersist=20",
            "dispatcherPauseOnAckStatePersistentEnabled=true",
        ],
    )
    out = {}
    for kind in ("Shared", "Exclusive", "Failover"):
        count = 2 if kind == "Shared" else 1
        spec = parse_workload(textwrap.dedent(HOLES.format(kind=kind, count=count)), "t.toml")
        out[kind] = simulate(profile, spec, 1).metrics
    return out


def persister(
    clock: FakeClock | None = None, release: str = "4.x", **s: Any
) -> WholeStatePersister:
    return new_range_count_persister(context(clock, release, **s), "t/s")


def entry_bytes(p: WholeStatePersister, state: FakeState) -> int:
    """Size of the cursor-ledger entry ``p`` would write for ``state``."""
    return p.encoder.entry(Snapshot.of(state)).bytes


def ack_all(c: Cursor, positions: list[tuple[int, int]]) -> None:
    for pos in positions:
        c.ack(*pos)


def restart(p: WholeStatePersister, c: Cursor) -> int:
    """Crash, recover, and count the acked messages delivered again."""
    truth_md, truth_ranges = c.md, list(c.acked_ranges())
    p.crash()
    return redelivered(truth_md, truth_ranges, p.recover(), ledger_layout(c))


def test_scenario_01_contiguous_acks_advance_md() -> None:
    c = cursor(10)
    p = persister()
    p.created(c)
    ack_all(c, [(1, e) for e in range(5)])
    out = p.acked(c, [1])
    assert c.md == (1, 4) and c.range_count() == 0
    assert out is not None and out.ranges_persisted == 0


def test_scenario_02_hole_then_fill() -> None:
    c = cursor(10)
    ack_all(c, [(1, 1), (1, 2), (1, 3)])
    assert list(c.acked_ranges()) == [((1, 0), (1, 3))] and c.md == (1, -1)
    c.ack(1, 0)
    assert c.md == (1, 3) and c.range_count() == 0


def test_scenario_03_alternating() -> None:
    c = cursor(100)
    ack_all(c, [(1, e) for e in range(0, 100, 2)])
    assert c.md == (1, 0) and c.range_count() == 49


def test_scenario_04_message_range_truncation() -> None:
    c = cursor(100)
    p = persister(managed_ledger_max_unacked_ranges_to_persist=10)
    opened(p, c)
    ack_all(c, [(1, e) for e in range(1, 100, 2)])
    out = p.acked(c, [1])
    assert c.range_count() == 50
    assert out is not None and out.bytes_written == 13 + 10 * 14
    assert (out.ranges_persisted, out.ranges_dropped) == (10, 40)
    serialized_size = sum(message_range_bytes(*r) - 2 for r in c.acked_ranges()[:10])
    assert serialized_size == 120
    assert p.stats()["ack_truncations"] == 1
    p.acked(c, [1])
    assert p.stats()["ack_truncations"] == 2  # +1 per truncating persist
    assert restart(p, c) == 40  # 1:21, 1:23, ... 1:99


@pytest.mark.parametrize("release", ["4.x", "5.0"])
def test_scenario_05_long_array_single_ledger(release: str) -> None:
    c = cursor(100)
    p = persister(
        release=release,
        managed_ledger_max_unacked_ranges_to_persist=10,
        managed_ledger_persist_individual_ack_as_long_array=True,
    )
    opened(p, c)
    ack_all(c, [(1, e) for e in range(1, 100, 2)])
    out = p.acked(c, [1])
    assert out is not None
    if release == "4.x":  # the first ledger is always included
        assert out.bytes_written == 35
        assert p.stats()["ack_truncations"] == 0
        assert restart(p, c) == 0
    else:  # cardinality 50 > 10: empty map, MessageRange fallback = scenario 4
        assert out.bytes_written == 153
        assert restart(p, c) == 40


@pytest.mark.parametrize(("release", "lost_acks"), [("4.x", 10), ("5.0", 20)])
def test_scenario_06_long_array_multi_ledger_cap(release: str, lost_acks: int) -> None:
    c = cursor(60, per_ledger=20)
    p = persister(
        release=release,
        managed_ledger_max_unacked_ranges_to_persist=10,
        managed_ledger_persist_individual_ack_as_long_array=True,
    )
    p.created(c)
    ack_all(c, [(lid, e) for lid in (1, 2, 3) for e in range(1, 20, 2)])
    p.acked(c, [1, 2, 3])
    assert c.range_count() == 30
    assert p.encoder.over_limit(c)  # isCursorDataFullyPersistable() = false
    assert restart(p, c) == lost_acks


@pytest.mark.parametrize(("release", "lost_acks"), [("4.x", 118), ("5.0", 0)])
def test_scenario_07_count_cardinality_discrepancy(release: str, lost_acks: int) -> None:
    c = cursor(180, per_ledger=60)
    p = persister(
        release=release,
        managed_ledger_max_unacked_ranges_to_persist=10,
        managed_ledger_persist_individual_ack_as_long_array=True,
        dispatcher_pause_on_ack_state_persistent_enabled=True,
    )
    p.created(c)
    ack_all(c, [(lid, e) for lid in (1, 2, 3) for e in range(1, 60)])
    p.acked(c, [1, 2, 3])
    assert c.range_count() == 3
    assert not p.should_pause_dispatch(c)  # fully persistable: no pause
    assert p.stats()["ack_truncations"] == 0 and p.encoder.ranges_cut.warnings == 0
    assert restart(p, c) == lost_acks


def test_scenario_08_bytes_large_ledger_id() -> None:
    state = FakeState((3_000_000, 999), [((3_000_000, 1000), (3_000_000, 1005))])
    assert entry_bytes(persister(), state) == 30
    assert message_range_bytes(*state.ranges[0]) - 2 == 20  # serializedSize


def test_scenario_09_run_from_entry_zero() -> None:
    c = cursor(20, per_ledger=10, first_ledger=4)
    ack_all(c, [(4, e) for e in range(6)] + [(5, e) for e in range(10)])
    assert c.md == (4, 5)
    assert list(c.acked_ranges()) == [((5, -1), (5, 9))]
    assert message_range_bytes((5, -1), (5, 9)) == 23


def test_scenario_10_long_array_single_word() -> None:
    state = FakeState((7, 0), [((7, 0), (7, 63))])
    long_array = persister(managed_ledger_persist_individual_ack_as_long_array=True)
    message_range = persister()
    header = 2 + 1 + 1
    assert entry_bytes(long_array, state) == header + 15
    assert entry_bytes(message_range, state) == header + 14


def test_scenario_11_long_array_span_cost() -> None:
    state = FakeState((7, 0), [((7, 39_999), (7, 40_000))])
    header = 2 + 1 + 1
    p = persister(managed_ledger_persist_individual_ack_as_long_array=True)
    assert entry_bytes(p, state) == header + 1257
    assert entry_bytes(persister(), state) == header + 18


def test_scenario_12_batch_bitset_bytes_and_recovery() -> None:
    state = FakeState((1, 4), batches={(1, 5): BatchAck(10, 0b1111110111)})
    p = persister()
    assert entry_bytes(p, state) == 2 + 1 + 1 + 11
    opened(p, state)
    p.crash()
    got = p.recover()
    assert p.recovery_path == "ledger"
    assert got.batch_acks[(1, 5)].unacked.bit_count() == 9  # redelivered with its ackSet


def test_scenario_13_batch_cap() -> None:
    batches = {(1, e): BatchAck(10, 0b1111110111) for e in range(1, 6)}
    p = persister(managed_ledger_max_batch_deleted_index_to_persist=2)
    opened(p, FakeState((1, 0)))
    p.acked(FakeState((1, 0), batches=batches), [1])
    assert p.stats()["ack_batch_truncations"] == 1
    p.crash()
    assert set(p.recover().batch_acks) == {(1, 1), (1, 2)}  # 1:3..1:5 come back whole


@pytest.mark.parametrize("cap", [-1, -(2**31)])
def test_a_range_cap_below_zero_persists_no_range_and_always_pauses(cap: int) -> None:
    """``managedLedgerMaxUnackedRangesToPersist`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6). Below 0 the
    MessageRange list keeps nothing, as with 0 (``ManagedCursorImpl.
    buildIndividualDeletedMessageRanges`` stops once the list holds ``maxRanges``, spec
    ack-state.md §4.2), ``toRanges`` keeps no ledger (§4.3), a close goes to the metadata store
    (``shouldPersistUnackRangesToLedger`` wants the cap above 0), and
    ``isCursorDataFullyPersistable()`` (``size <= max``) is false even with no hole, so the pause
    holds."""
    state = FakeState((1, -1), ranges_of(3))
    p = persister(managed_ledger_max_unacked_ranges_to_persist=cap)
    out = p.created(state)
    assert out is not None and out.ranges_persisted == 0
    assert p.stats()["ack_truncations"] == 1
    empty = FakeState((1, 9))
    p.acked(empty, [1])
    assert p.stats()["ack_truncations"] == 1  # nothing to cut: no truncation counted
    assert p.encoder.over_limit(empty)
    closed = p.close(state)
    assert closed is not None and closed.to_metadata_store
    assert not to_ranges(Snapshot.of(state).ledgers, cap, "4.x")


@pytest.mark.parametrize("cap", [0, -1, -(2**31)])
def test_a_batch_cap_of_zero_or_less_persists_no_bitset(cap: int) -> None:
    """``managedLedgerMaxBatchDeletedIndexToPersist`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6);
    ``ManagedCursorImpl.buildBatchEntryDeletionIndexInfoList`` adds bitsets while it holds fewer
    than ``maxIndexes``, so 0 or less keeps none and counts a truncation only when there are
    bitsets (spec ack-state.md §4.2)."""
    batches = {(1, e): BatchAck(10, 0b1111110111) for e in range(1, 4)}
    p = persister(managed_ledger_max_batch_deleted_index_to_persist=cap)
    opened(p, FakeState((1, 0)))
    assert p.stats()["ack_batch_truncations"] == 0
    p.acked(FakeState((1, 0), batches=batches), [1])
    assert p.stats()["ack_batch_truncations"] == 1
    p.crash()
    assert not p.recover().batch_acks


def test_scenario_14_metadata_store_path_loses_batch_bitsets() -> None:
    state = FakeState(
        (1, -1),
        [((1, 0), (1, 1)), ((1, 2), (1, 3)), ((1, 6), (1, 7))],
        {(1, 5): BatchAck(10, 0b1111110111)},
    )
    p = persister()
    p.created(state)
    out = p.close(state)
    assert out is not None and out.to_metadata_store and p.storage.node_holds_state
    got = p.recover()
    assert len(got.acked_ranges) == 3 and not got.batch_acks
    assert p.recovery_path == "store"


def test_scenario_15_properties_round_trip() -> None:
    bare = FakeState((1, 9))
    with_props = FakeState((1, 9), props={"p1": 100, "p2": 200})
    assert entry_bytes(persister(), with_props) - entry_bytes(persister(), bare) == 17
    p = persister()
    p.created(with_props)
    p.crash()
    assert p.recover().mark_delete_properties == {"p1": 100, "p2": 200}


def test_scenario_16_properties_are_never_truncated() -> None:
    ranges = [((1, 2 * i), (1, 2 * i + 1)) for i in range(5)]
    state = FakeState((1, -1), ranges, props={"p": 7})
    p = persister(managed_ledger_max_unacked_ranges_to_persist=0)
    out = p.created(state)
    assert out is not None and out.ranges_persisted == 0
    assert entry_bytes(p, state) == 13 + 2 + (2 + 1 + 1 + 1)  # header + LongProperty {p:7}
    p.crash()
    back = p.recover()
    assert redelivered((1, -1), ranges, back, {1: 10}) == 5
    assert back.mark_delete_properties == {"p": 7}


def test_scenario_17_cursor_properties_are_metadata_store_only() -> None:
    plain = FakeState((1, 2), [((1, 3), (1, 4))])
    with_sub = FakeState((1, 2), [((1, 3), (1, 4))], sub_props={"a": "b"})
    a, b = persister(), persister()
    opened(a, plain)
    opened(b, with_sub)
    assert a.acked(plain, [1]).bytes_written == b.acked(with_sub, [1]).bytes_written
    b.crash()
    assert b.recover().subscription_properties == {"a": "b"}
    a.crash()
    assert a.recover().subscription_properties == {}


def ranges_of(n: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    return [((1, 2 * i), (1, 2 * i + 1)) for i in range(n)]


def test_scenario_18_close_to_metadata_store() -> None:
    state = FakeState((1, -1), ranges_of(500))
    p = persister()
    p.created(state)
    out = p.close(state)
    assert out is not None and out.to_metadata_store and p.storage.node_holds_state
    assert len(p.recover().acked_ranges) == 500


def test_scenario_19_close_to_ledger() -> None:
    state = FakeState((1, -1), ranges_of(1500))
    p = persister()
    opened(p, state)
    out = p.close(state)
    assert out is not None and not out.to_metadata_store and not p.storage.node_holds_state
    assert len(p.recover().acked_ranges) == 1500 and p.recovery_path == "ledger"


@pytest.mark.parametrize(
    ("threshold", "to_store"), [(-1, False), (-2, False), (-(2**31), False), (0, True)]
)
def test_a_metadata_store_threshold_of_minus_one_sends_every_close_to_the_ledger(
    threshold: int, to_store: bool
) -> None:
    """``managedLedgerMaxUnackedRangesToPersistInMetadataStore=-1`` is valid: Pulsar's
    ``ManagedCursorImpl`` closes to the ledger when the range count is above it, so even a state
    with no range goes to the ledger (apache/pulsar ``ManagedCursorTest`` sets
    ``setMaxUnackedRangesToPersistInMetadataStore(-1)`` to force that path); at 0 an empty state
    goes to the metadata store. The key is a plain ``int`` with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6,
    ``managedLedgerMaxUnackedRangesToPersistInMetadataStore``), so -2 and below behave as -1."""
    state = FakeState((1, 4))
    p = persister(managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=threshold)
    opened(p, state)
    out = p.close(state)
    assert out is not None and out.to_metadata_store is to_store
    assert p.storage.node_holds_state is to_store
    assert p.recover().mark_delete == (1, 4)


def test_the_metadata_store_threshold_takes_any_java_int() -> None:
    key = "managedLedgerMaxUnackedRangesToPersistInMetadataStore"
    assert load_profile(None, [f"{key}=-2"]).get(key) == -2
    with pytest.raises(ProfileError, match=key):
        load_profile(None, [f"{key}=-2147483649"])


def test_scenario_20_close_with_max_zero() -> None:
    state = FakeState((1, -1), ranges_of(20))
    p = persister(managed_ledger_max_unacked_ranges_to_persist=0)
    p.created(state)
    out = p.close(state)
    assert out is not None and out.to_metadata_store and out.ranges_persisted == 0
    got = p.recover()
    assert not got.acked_ranges
    assert redelivered((1, -1), state.ranges, got, {1: 40}) == 20


def test_scenario_21_rate_limit_window() -> None:
    for crash in (True, False):
        clock = FakeClock()
        c = cursor(20)
        p = persister(clock, managed_ledger_default_mark_delete_rate_limit=1.0)
        p.created(c)
        for i in range(5):
            clock.ns = i * 100_000_000
            c.ack(1, 2 * i + 1)  # a separate hole each time
            p.acked(c, [1])
        clock.ns = 500_000_000
        if not crash:
            p.flush(c)  # the dirty-cursor flush persists everything
        assert restart(p, c) == (4 if crash else 0)


def test_an_infinite_mark_delete_rate_lets_every_persist_through() -> None:
    """``managedLedgerDefaultMarkDeleteRateLimit`` is a double that apache/pulsar
    ``ManagedLedgerConfig.java`` at 003201f505c8d13ac508a0deb29e77ee61f59471 checks only for
    ``>= 0.0`` (``setThrottleMarkDelete``), so +Infinity passes; ``ManagedCursorImpl`` then builds
    a Guava ``RateLimiter.create(Infinity)``, which grants every permit at once (google/guava
    ``RateLimiterTest.testInfinity_Bursty`` at f2944006454cca4fac082347ca60dc11c2590724). NaN and
    negative rates fail that check, as they fail the model."""
    key = "managedLedgerDefaultMarkDeleteRateLimit"
    assert load_profile(None, [f"{key}=Infinity"]).get(key) == float("inf")
    for bad in ("NaN", "-Infinity", "-1"):
        with pytest.raises(ProfileError, match=key):
            load_profile(None, [f"{key}={bad}"])
    clock = FakeClock()
    c = cursor(20)
    p = persister(clock, managed_ledger_default_mark_delete_rate_limit=float("inf"))
    p.created(c)
    for i in range(5):
        c.ack(1, 2 * i + 1)
        assert p.acked(c, [1]) is not None  # persisted now, never left dirty


def test_scenario_22_warn_once_per_crossing() -> None:
    enc = RangeCountEncoder(10, 10_000, long_array=False)
    seen = []
    for n in (12, 12, 8, 15):
        enc.entry(Snapshot.of(FakeState((1, -1), ranges_of(n))))
        seen.append((enc.ranges_cut.count, enc.ranges_cut.warnings))
    assert seen == [(1, 1), (2, 1), (2, 1), (3, 2)]


def paused_persister(max_ranges: int = 50) -> WholeStatePersister:
    return persister(
        managed_ledger_max_unacked_ranges_to_persist=max_ranges,
        dispatcher_pause_on_ack_state_persistent_enabled=True,
    )


def test_scenario_23_pause_threshold() -> None:
    p = paused_persister()
    assert p.should_pause_dispatch(FakeState((1, -1), ranges_of(100)))
    assert not p.should_pause_dispatch(FakeState((1, -1), ranges_of(50)))  # strictly more


def test_scenario_24_resume_on_ack() -> None:
    c = cursor(200)
    p = paused_persister()
    ack_all(c, [(1, e) for e in range(1, 200, 2)])
    assert p.should_pause_dispatch(c)
    ack_all(c, [(1, e) for e in range(0, 200, 2)])
    assert c.range_count() == 0 and not p.should_pause_dispatch(c)


# Scenario 25 (replay is not paused) is the dispatcher's behaviour: it is tested end to end in
# tests/unit/test_simulation.py::test_ack_state_scenario_25_replay_is_not_paused.


def test_scenario_26_single_consumer_types_never_pause(simulated: dict[str, Any]) -> None:
    assert simulated["Shared"]["dispatch_paused_ms"] > 0
    assert simulated["Exclusive"]["dispatch_paused_ms"] == 0
    assert simulated["Failover"]["dispatch_paused_ms"] == 0


# Scenario 27 (resume by skip, clear, seek or reset) has no counterpart: the simulated broker
# has no admin operations on cursors.


def test_scenario_28_dynamic_disable() -> None:
    p = paused_persister()
    state = FakeState((1, -1), ranges_of(100))
    assert p.should_pause_dispatch(state)
    p.pause.broker = False  # dynamic config change: resumes without any ack
    assert not p.should_pause_dispatch(state)


def test_scenario_29_policy_precedence() -> None:
    assert not PauseSwitch(broker=True, namespace=False).enabled
    assert not PauseSwitch(broker=True, namespace=True, topic=False).enabled
    assert PauseSwitch(broker=False, namespace=False, topic=True).enabled


# Scenario 30 (splitting a range that spans ledgers on recovery) has no counterpart: AckState
# and RecoveredAckState ranges never span ledgers.


def test_scenario_31_md_jumps_across_ledgers() -> None:
    c = cursor(20, per_ledger=10)
    ack_all(c, [(1, e) for e in range(5)] + [(1, e) for e in range(6, 10)])
    ack_all(c, [(2, e) for e in range(5)])
    assert c.md == (1, 4) and c.range_count() == 2
    c.ack(1, 5)
    assert c.md == (2, 4) and c.range_count() == 0


# Scenario 32 (persistentUnackedRangesWithMultipleEntriesEnabled) has no counterpart: the flag
# only tracks dirty ledgers inside Pulsar's range set and never changes what is persisted.


def test_scenario_33_oversize_entry_falls_back_to_metadata_store() -> None:
    lid = 3_000_000
    state = FakeState(
        (lid, 16_383), [((lid, 16_384 + 2 * i), (lid, 16_385 + 2 * i)) for i in range(300_000)]
    )
    p = persister(managed_ledger_max_unacked_ranges_to_persist=1_000_000)
    p.created(FakeState((lid, 16_383)))
    out = p.acked(state, [lid])
    assert out is not None and out.to_metadata_store
    assert out.ranges_persisted == 300_000
    assert p.stats()["ack_oversize_entries"] == 1 and not p.storage.ledger_writable
    got = p.recover()
    assert p.recovery_path == "store" and len(got.acked_ranges) == 300_000


def test_scenario_34_rollback_when_the_cursor_ledger_is_gone() -> None:
    c = cursor(20)
    p = persister()
    ack_all(c, [(1, 0), (1, 1)])
    p.created(c)  # the ledger switch: the node records md 1:1
    ack_all(c, [(1, 2), (1, 5)])
    p.acked(c, [1])
    p.storage.lose_ledger()
    got = p.recover()
    assert p.recovery_path == "rollback"
    assert got.mark_delete == (1, 1) and not got.acked_ranges and not got.batch_acks


def dense_ledgers(count: int) -> FakeState:
    """``count`` ledgers of 50,000 entries with a hole at every multiple of 64."""
    ranges = [
        ((lid, w * 64), (lid, min(w * 64 + 63, 49_999)))
        for lid in range(1, count + 1)
        for w in range(782)
    ]
    return FakeState((1, -1), ranges)


def test_scenario_35_dense_ceiling() -> None:
    frame = 5_242_880 + FRAME_PADDING
    enc = RangeCountEncoder(2**31 - 1, 10_000, long_array=True)
    big = Snapshot.of(dense_ledgers(611))
    full = enc.entry(big).bytes
    last = long_list_map_bytes(611, ledger_words(big.ledgers[611].ranges))
    assert last == 8601  # 781 negative words, a 15-bit tail word, 2-byte ledger id
    assert full - last <= frame < full  # 610 ledgers fit; the 611th takes the §3.6 path
    # With the default cap the 4.x rule keeps only the first ledger here: each ledger holds
    # 49,218 acked entries, so ledger 2 starts above 10,000 (the spec's "1 and 2" does not hold).
    assert to_ranges(big.ledgers, 10_000, "4.x") == [1]


def _rollovers(clock: FakeClock, gaps_ms: list[int], **keys: Any) -> int:
    """Cursor-ledger rollovers over one write per gap, each ``gap`` ms after the previous one."""
    c = cursor(20)
    p = persister(clock, **keys)
    p.created(c)
    for i, gap in enumerate(gaps_ms):
        clock.ns += gap * 1_000_000
        c.ack(1, 2 * i + 1)
        p.acked(c, [1])
    return int(p.stats()["ack_cursor_ledger_rollovers"])


@pytest.mark.parametrize("cap", [0, -1, -(2**31)])
def test_a_cursor_ledger_cap_of_zero_or_less_rolls_after_every_append(cap: int) -> None:
    """``managedLedgerCursorMaxEntriesPerLedger`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and
    ``ManagedCursorImpl.shouldCloseLedger`` (apache/pulsar ``ManagedCursorImpl.java`` at
    001516271d9699e48f540a22384bdc6537902399) rolls once ``lh.getLastAddConfirmed() >=
    getMetadataMaxEntriesPerLedger()``: at 0 or less, after every append."""
    assert _rollovers(FakeClock(), [1, 1, 1], managed_ledger_cursor_max_entries_per_ledger=cap) == 3


@pytest.mark.parametrize(
    ("seconds", "gaps_ms", "rolls"),
    [
        (0, [0, 1, 0, 5], 2),  # a later millisecond rolls, the same one does not
        (-1, [0, 0, 0], 3),  # the deadline lies in the future: every append rolls
        (1, [1000, 1001, 500], 1),  # strictly more than 1000 ms after the switch
        (2_147_483, [60_000], 0),  # 2147483000 ms still fits a Java int
        (2_147_484, [0, 0], 2),  # 2147484000 wraps to a negative int: every append rolls
    ],
)
def test_the_cursor_ledger_age_is_compared_as_pulsar_compares_it(
    seconds: int, gaps_ms: list[int], rolls: int
) -> None:
    """``managedLedgerCursorRolloverTimeInSeconds`` is a plain int with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and
    ``ManagedCursorImpl.shouldCloseLedger`` (apache/pulsar ``ManagedCursorImpl.java`` at
    001516271d9699e48f540a22384bdc6537902399) rolls when ``lastLedgerSwitchTimestamp < now -
    getLedgerRolloverTimeout() * 1000``: whole milliseconds, strictly, with the product an int
    (``ManagedLedgerConfig.getLedgerRolloverTimeout()`` returns an ``int``)."""
    clock = FakeClock()
    keys = {"managed_ledger_cursor_rollover_time_in_seconds": seconds}
    assert _rollovers(clock, gaps_ms, **keys) == rolls


def test_scenario_36_cursor_ledger_rollover() -> None:
    c = cursor(20)
    p = persister(managed_ledger_cursor_max_entries_per_ledger=5)
    p.created(c)  # no cursor ledger yet: the first write creates it
    first = p.storage.next_cursor_ledger_id()
    for i in range(5):
        c.ack(1, 2 * i + 1)
        out = p.acked(c, [1])
        if i == 0:  # the creation entry (entry 0), then this write (entry 1)
            assert p.storage.cursor_ledger_id == first and p.storage.ledger_entries == 2
    # Entries 2-5 fill the ledger (lastAddConfirmed 5 >= 5): the fifth write rolls it over.
    assert p.storage.cursor_ledger_id == first + 1 and p.stats()["ack_cursor_ledger_rollovers"] == 1
    assert out is not None and out.to_metadata_store  # node updated (no ranges)
    # After a restart the first write creates a ledger: a creation entry, then the write.
    p.crash()
    p.recover()
    before = p.storage.ledger_entries
    c.ack(1, 15)
    p.acked(c, [1])
    assert p.storage.ledger_entries - before == 2


def test_scenario_37_dedup_properties_cost() -> None:
    producers = {f"p{i:014d}": 1_000_000 for i in range(10_000)}  # 15-char names, 3-byte ids
    bare = entry_bytes(persister(), FakeState((1, 0)))
    full = entry_bytes(persister(), FakeState((1, 0), props=producers))
    assert full - bare == 230_000  # never truncated


def test_rollback_empties_the_mark_delete_properties_but_not_the_subscription_ones() -> None:
    """§6.1 rollback: the cursor restarts from the node's mark-delete with empty properties;
    subscription properties live in the metadata store and survive."""
    state = FakeState((1, 4), [((1, 5), (1, 6))], props={"p": 1}, sub_props={"a": "b"})
    p = persister()
    p.created(state)
    p.acked(state, [1])
    p.storage.lose_ledger()
    got = p.recover()
    assert p.recovery_path == "rollback"
    assert got.mark_delete_properties == {}
    assert got.subscription_properties == {"a": "b"}


@pytest.mark.parametrize(("release", "restored"), [("4.x", False), ("5.0", True)])
def test_metadata_store_recovery_restores_batch_acks_on_the_master_line(
    release: str, restored: bool
) -> None:
    """A close with few ranges goes to the metadata store with the batch bitsets (field 7).
    Pulsar's master line reads them back (PR #26474; apache/pulsar
    ``ManagedCursorBatchAckRecoveryTest.testMetadataStoreRecoveryPreservesAllCursorState``, and
    ``testPartialBatchAckPersistenceRetainsConfiguredCount`` with the metadata store: at most
    ``managedLedgerMaxBatchDeletedIndexToPersist`` of them); the 4.x line drops them (§6.1)."""
    batches = {(1, e): BatchAck(64, 0b1111_0110) for e in (4, 5, 6)}
    state = FakeState((1, 0), ranges=[((1, 1), (1, 2))], batches=batches)
    p = persister(release=release, managed_ledger_max_batch_deleted_index_to_persist=2)
    p.created(state)
    out = p.close(state)
    assert out is not None and out.to_metadata_store
    got = p.recover()
    assert p.recovery_path == "store"
    assert got.mark_delete == (1, 0) and list(got.acked_ranges) == [((1, 1), (1, 2))]
    assert got.batch_acks == ({pos: batches[pos] for pos in [(1, 4), (1, 5)]} if restored else {})
