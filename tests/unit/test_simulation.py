"""The broker model end to end on small workloads: determinism, invariants, hand-computed cases."""

from __future__ import annotations

import textwrap

import pytest

from brokerlab import load_profile, simulate
from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.simulation import Result
from brokerlab.workloads import parse_workload

BASELINE = [
    "sim.entryCache=disabled",
    "delayedDeliveryEnabled=false",
    "sim.ackStatePersister=unlimited",
]


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


def profile(host: PluginHost, *extra: str) -> Profile:
    return load_profile(None, [*BASELINE, *extra], host=host)


def run(host: PluginHost, toml: str, seed: int = 0, *extra: str) -> Result:
    spec = parse_workload(textwrap.dedent(toml), "test.toml")
    return simulate(profile(host, *extra), spec, seed, host=host)


SHARED_WITH_HOLES = """
    name = "small-shared"
    duration_s = 5
    drain_s = 5

    [[topics]]
    rate = 400
    message_size = { kind = "uniform", min = 100, max = 2000 }

    [[topics.subscriptions]]
    name = "s"
    type = "Shared"

    [[topics.subscriptions.consumers]]
    count = 3
    rate = 200
    ack_hole_probability = 0.02
    nack_probability = 0.02
    nack_redelivery_delay_ms = 500
"""


def test_same_seed_gives_byte_identical_json(host: PluginHost) -> None:
    first = run(host, SHARED_WITH_HOLES, 7)
    second = run(host, SHARED_WITH_HOLES, 7)
    assert first.to_json() == second.to_json()


def test_another_seed_changes_the_stochastic_metrics(host: PluginHost) -> None:
    a, b = run(host, SHARED_WITH_HOLES, 1), run(host, SHARED_WITH_HOLES, 2)
    assert a.metrics["published"] != b.metrics["published"]
    assert a.metrics["redelivered"] != b.metrics["redelivered"]


def test_message_accounting_and_invariants(host: PluginHost) -> None:
    m = run(host, SHARED_WITH_HOLES, 3).metrics
    assert m["lost"] == m["delivered_after_ack"] == m["delayed_early_deliveries"] == 0
    # Every published message is acked or still unacked (an ack hole) at the end.
    assert m["acked"] + m["unacked_at_end"] == m["published"]
    assert m["unacked_at_end"] > 0
    # Deliveries are first deliveries plus redeliveries (negative acks).
    assert m["delivered"] == m["acked"] + m["unacked_at_end"] + m["redelivered"]
    assert m["redelivered"] > 0
    # The disabled cache serves nothing: every entry read comes from storage.
    assert m["cache_hits"] == 0 and m["storage_entries_read"] >= m["published_entries"]


def test_every_subscription_gets_every_message(host: PluginHost) -> None:
    toml = """
        name = "fanout"
        duration_s = 3
        drain_s = 10
        [[topics]]
        rate = 300
        backlog = 500
        [[topics.subscriptions]]
        name = "a"
        count = 4
        initial_position = "earliest"
        consumers = [{ rate = 500, ack = "cumulative" }]
    """
    m = run(host, toml, 0).metrics
    assert m["delivered"] == m["acked"] == 4 * m["published"]
    assert m["unacked_at_end"] == 0
    assert m["published"] >= 500


RESTART_CASE = """
    name = "restart-by-hand"
    duration_s = 3
    drain_s = 2

    [[topics]]
    rate = 10
    arrival = "constant"

    [[topics.subscriptions]]
    name = "s"
    type = "Exclusive"
    consumers = [{ rate = 0 }]

    [[events]]
    at_s = 2.55
    kind = "restart"
"""


def test_restart_redelivers_exactly_the_unpersisted_acks(host: PluginHost) -> None:
    """Hand-computed: messages at 0.1 s, 0.2 s, ...; each is acked the instant it arrives.

    The mark-delete rate limiter (1 permit per second, bursty, created with the cursor at 0 s)
    has stored 0.1 permit by the first ack at 0.1 s: that ack passes and costs the remaining 0.9 s,
    so the next free permit is at 1.0 s, then 2.0 s. Acks in between only mark the cursor dirty and
    the 60 s flush never comes. At the restart (2.55 s) the durable state is the ack at 2.0 s, so
    the acks at 2.1, 2.2, 2.3, 2.4 and 2.5 s are lost and those 5 messages are delivered again.
    """
    m = run(host, RESTART_CASE).metrics
    assert m["broker_restarts"] == 1
    assert m["ack_persists"] == 1 + 3  # the cursor's creation, then 0.1 s, 1.0 s and 2.0 s
    assert m["redelivered_after_restart"] == 5
    assert m["delivered"] == m["published"] + 5
    assert m["lost"] == 0 and m["unacked_at_end"] == 0


def test_restart_without_rate_limit_redelivers_nothing(host: PluginHost) -> None:
    m = run(host, RESTART_CASE, 0, "managedLedgerDefaultMarkDeleteRateLimit=0").metrics
    assert m["redelivered_after_restart"] == 0
    assert m["delivered"] == m["published"]


PARTIAL_BATCHES_CASE = """
    name = "partial-batches"
    duration_s = 3
    drain_s = 2

    [[topics]]
    rate = 100
    batch_size = 10
    arrival = "constant"

    [[topics.subscriptions]]
    name = "s"
    type = "Exclusive"
    consumers = [{ rate = 0, ack_hole_probability = 1.0 }]

    [[events]]
    at_s = 2.55
    kind = "restart"
"""


def test_acked_batch_indexes_a_restart_forgot_count_as_redelivered_after_it(
    host: PluginHost,
) -> None:
    """ack-state.md §6.2: a batch entry without a recovered bitset comes back whole, the indexes
    acknowledged before the crash included (§0.4 counts them as redelivered after a restart).

    Entries of 10 messages arrive every 0.1 s; each is acked at once but for one index, so the
    range set stays empty and nothing is persisted (§3.1): every bitset is lost at 2.55 s. The 25
    entries published by then come back whole: 25 x 9 acked messages, 25 x 1 hole.
    """
    m = run(host, PARTIAL_BATCHES_CASE, 0, "managedLedgerDefaultMarkDeleteRateLimit=0").metrics
    assert m["published_entries"] == 29
    assert m["redelivered_after_restart"] == 25 * 9
    assert m["redelivered"] == 25
    assert m["delivered"] == m["published"] + m["redelivered"] + m["redelivered_after_restart"]


def test_a_partly_acknowledged_batch_leaves_only_its_holes_unacked(host: PluginHost) -> None:
    """``unacked_at_end`` counts messages: each of the 29 entries of 10 messages is acked but
    for one index (a partial batch ack), so 29 x 9 messages are acked and 29 left, not 290."""
    m = run(host, PARTIAL_BATCHES_CASE.split("[[events]]")[0]).metrics
    assert m["published_entries"] == 29
    assert m["acked"] == 29 * 9
    assert m["unacked_at_end"] == 29
    assert m["acked"] + m["unacked_at_end"] == m["published"]


@pytest.mark.parametrize("seed", range(2))
def test_acked_batch_indexes_a_restart_kept_are_not_delivered_again(
    host: PluginHost, seed: int
) -> None:
    """ack-state.md §6.2, the other side: a batch entry recovered with its bitset goes out again
    with its ackSet, and the client skips the indexes acked before the crash. They are neither
    delivered nor acknowledged a second time, so every message is acked once, or once more only
    when the restart forgot its ack."""
    half = PARTIAL_BATCHES_CASE.replace("ack_hole_probability = 1.0", "ack_hole_probability = 0.5")
    extra = ["managedLedgerDefaultMarkDeleteRateLimit=0", "sim.ackStatePersister=range-count"]
    m = run(host, half, seed, *extra).metrics
    assert m["acked"] + m["unacked_at_end"] == (m["published"] + m["redelivered_after_restart"])
    assert m["delivered"] == m["published"] + m["redelivered"] + m["redelivered_after_restart"]


PARTIAL_BATCHES_RECONNECT = """
    name = "partial-batches-reconnect"
    duration_s = 3
    drain_s = 2

    [[topics]]
    rate = 1000
    batch_size = 10
    arrival = "constant"
    publish_until_s = 1

    [[topics.subscriptions]]
    name = "s"
    type = "Exclusive"
    consumers = [{ group = "g", rate = 0, ack_hole_probability = 1.0 }]

    [[events]]
    at_s = 2
    kind = "disconnect"
    group = "g"

    [[events]]
    at_s = 2.5
    kind = "reconnect"
    group = "g"
"""


@pytest.mark.parametrize("batch_index_acks", [True, False])
def test_a_reconnect_redelivers_what_the_broker_knows_is_unacked(
    host: PluginHost, batch_index_acks: bool
) -> None:
    """Every entry of 10 is acked but for one index, then the consumer leaves and comes back.
    With batch-index acks the broker knows the ackSet and redelivers one message per entry; with
    ``acknowledgmentAtBatchIndexLevelEnabled=false`` only the client knew, and every entry goes
    out whole again."""
    switch = f"acknowledgmentAtBatchIndexLevelEnabled={str(batch_index_acks).lower()}"
    m = run(host, PARTIAL_BATCHES_RECONNECT, 0, switch).metrics
    entries = m["published_entries"]
    assert entries >= 90
    assert m["redelivered"] == entries * (1 if batch_index_acks else 10)
    assert m["delivered"] == m["published"] + m["redelivered"]


def test_an_ack_hole_is_one_message_of_an_entry(host: PluginHost) -> None:
    """``ack_hole_probability`` is drawn per entry, and a hole in a batch of 10 is one message
    (workloads.md): with probability 0.2, 20% of entries and 2% of messages stay unacked."""
    toml = """
        name = "batch-holes"
        duration_s = 5
        drain_s = 1
        [[topics]]
        rate = 2000
        batch_size = 10
        [[topics.subscriptions]]
        consumers = [{ rate = 0, ack_hole_probability = 0.2 }]
    """
    m = run(host, toml, 1).metrics
    assert abs(m["acked"] / m["published"] - 0.98) < 0.004
    assert abs(m["unacked_at_end"] / m["published"] - 0.02) < 0.004
    assert m["acked"] + m["unacked_at_end"] == m["published"]


def test_unacked_at_end_counts_each_subscription(host: PluginHost) -> None:
    """Like ``delivered`` and ``acked``, ``unacked_at_end`` adds up over subscriptions: a message
    that two subscriptions never acknowledge counts twice (metrics.md)."""
    toml = """
        name = "two-holey-subscriptions"
        duration_s = 2
        [[topics]]
        rate = 50
        [[topics.subscriptions]]
        name = "s"
        count = 2
        consumers = [{ rate = 0, ack_hole_probability = 1.0 }]
    """
    m = run(host, toml).metrics
    assert m["acked"] == 0 and m["published"] > 0
    assert m["unacked_at_end"] == 2 * m["published"]


def test_a_backlog_is_whole_entries(host: PluginHost) -> None:
    """A backlog of 15 messages in batches of 10 is 2 entries, 20 messages (workloads.md)."""
    toml = """
        name = "batched-backlog"
        duration_s = 1
        [[topics]]
        rate = 0
        batch_size = 10
        backlog = 15
    """
    m = run(host, toml).metrics
    assert m["published_entries"] == 2 and m["published"] == 20


@pytest.mark.parametrize("seed", range(2))
def test_a_batch_bitset_the_cap_drops_is_redelivered_whole(host: PluginHost, seed: int) -> None:
    """§6.3 cause 3: bitsets over ``managedLedgerMaxBatchDeletedIndexToPersist`` are not
    recovered, so their acked indexes come back; within the cap the client skips them."""
    half = PARTIAL_BATCHES_CASE.replace("ack_hole_probability = 1.0", "ack_hole_probability = 0.5")
    extra = ["managedLedgerDefaultMarkDeleteRateLimit=0", "sim.ackStatePersister=range-count"]
    kept = run(host, half, seed, *extra).metrics
    cut = run(host, half, seed, *extra, "managedLedgerMaxBatchDeletedIndexToPersist=0").metrics
    assert kept["redelivered_after_restart"] < cut["redelivered_after_restart"]
    for m in (kept, cut):
        assert m["delivered"] == (
            m["published"] + m["redelivered"] + m["redelivered_after_restart"]
        )


NACKS_ACROSS_A_RESTART = """
    name = "nack-restart"
    duration_s = 4
    drain_s = 3
    [[topics]]
    rate = 200
    [[topics.subscriptions]]
    type = "Shared"
    [[topics.subscriptions.consumers]]
    count = 2
    rate = 150
    nack_probability = 0.05
    nack_redelivery_delay_ms = 1000
    [[events]]
    at_s = 2
    kind = "restart"
"""


@pytest.mark.parametrize("seed", range(3))
def test_a_nack_made_before_a_restart_does_not_deliver_twice(host: PluginHost, seed: int) -> None:
    """About 10 nacks fall in the second before the restart; their redelivery comes after it.

    The restart handed every unacknowledged position back, and the subscription reads them
    again from the recovered mark-delete, slowly (300 msg/s of consumers for 200 msg/s): the
    old nack must not send them a second time.
    """
    m = run(host, NACKS_ACROSS_A_RESTART, seed).metrics
    assert m["broker_restarts"] == 1 and m["redelivered"] > 0
    assert m["delivered_after_ack"] == 0
    assert m["unacked_at_end"] == 0 and m["lost"] == 0


HOLES_ACROSS_RESTARTS = """
    name = "holes-restarts"
    duration_s = 4
    drain_s = 3
    [[topics]]
    rate = 200
    [[topics.subscriptions]]
    name = "shared"
    type = "Shared"
    [[topics.subscriptions.consumers]]
    count = 2
    rate = 150
    ack_hole_probability = 0.05
    nack_probability = 0.05
    nack_redelivery_delay_ms = 500
    [[topics.subscriptions]]
    name = "failover"
    type = "Failover"
    consumers = [{ rate = 300, ack_hole_probability = 0.02 }]
    [[events]]
    at_s = 1.5
    kind = "restart"
    [[events]]
    at_s = 3
    kind = "unload"
"""


@pytest.mark.parametrize("seed", range(3))
def test_every_delivery_after_the_first_is_counted_as_a_redelivery(
    host: PluginHost, seed: int
) -> None:
    """Each subscription gets every message once, and every further delivery is counted: a nack,
    a hole or an unacknowledged message held when the broker restarted or unloaded
    (``redelivered``), or an acknowledgement the restart forgot (``redelivered_after_restart``)."""
    m = run(host, HOLES_ACROSS_RESTARTS, seed).metrics
    assert m["broker_restarts"] == 1 and m["unacked_at_end"] > 0  # the holes stay
    assert m["delivered"] == (
        2 * m["published"] + m["redelivered"] + m["redelivered_after_restart"]
    )


def test_disconnected_group_gets_its_messages_redelivered(host: PluginHost) -> None:
    toml = """
        name = "leave"
        duration_s = 4
        drain_s = 6
        [[topics]]
        rate = 200
        [[topics.subscriptions]]
        type = "Shared"
        [[topics.subscriptions.consumers]]
        name = "stays"
        rate = 150
        [[topics.subscriptions.consumers]]
        name = "leaves"
        rate = 20
        receiver_queue_size = 100
        group = "flaky"
        [[events]]
        at_s = 2
        kind = "disconnect"
        group = "flaky"
    """
    m = run(host, toml, 5).metrics
    assert m["redelivered"] > 0
    assert m["acked"] == m["published"] and m["unacked_at_end"] == 0


def test_key_shared_slow_consumer_blocks_its_keys_and_rereads(host: PluginHost) -> None:
    toml = """
        name = "ks"
        duration_s = 4
        drain_s = 30
        [[topics]]
        rate = 400
        keys = { count = 50, skew = 0.8 }
        [[topics.subscriptions]]
        type = "Key_Shared"
        [[topics.subscriptions.consumers]]
        name = "fast"
        count = 2
        rate = 1000
        [[topics.subscriptions.consumers]]
        name = "slow"
        rate = 40
        receiver_queue_size = 20
    """
    m = run(host, toml, 0).metrics
    assert m["acked"] == m["published"]
    # Entries of blocked keys wait in the replay queue and are read again when their consumer has
    # permits: more storage reads than entries, yet nothing was dispatched twice.
    assert m["storage_entries_read"] > m["published_entries"]
    assert m["redelivered"] == 0
    assert m["delivered"] == m["published"]


def test_delayed_messages_go_out_at_once_when_delivery_is_disabled(host: PluginHost) -> None:
    toml = """
        name = "delays"
        duration_s = 2
        drain_s = 1
        [[topics]]
        rate = 100
        delays = [{ fraction = 1.0, min_ms = 60000, max_ms = 60000 }]
        [[topics.subscriptions]]
        type = "Shared"
        consumers = [{ rate = 0 }]
    """
    m = run(host, toml).metrics
    assert m["delivered"] == m["published"] and m["delayed_messages"] == 0
    assert m["latency_p99_ms"] < 1000


@pytest.mark.parametrize("factory", ["in-memory", "topic-level"])
def test_only_shared_subscriptions_delay_messages(host: PluginHost, factory: str) -> None:
    """Pulsar's single-active-consumer dispatcher (Exclusive, Failover) has no delayed-delivery
    tracker: it dispatches a message with a deliver-at time at once. Shared holds it."""
    toml = """
        name = "delays"
        duration_s = 2
        drain_s = 1
        [[topics]]
        rate = 100
        delays = [{ fraction = 1.0, min_ms = 60000, max_ms = 60000 }]
        [[topics.subscriptions]]
        name = "exclusive"
        type = "Exclusive"
        consumers = [{ rate = 0 }]
        [[topics.subscriptions]]
        name = "failover"
        type = "Failover"
        consumers = [{ rate = 0 }]
        [[topics.subscriptions]]
        name = "shared"
        type = "Shared"
        consumers = [{ rate = 0 }]
    """
    m = run(
        host,
        toml,
        0,
        "delayedDeliveryEnabled=true",
        f"delayedDeliveryTrackerFactoryClassName={factory}",
    ).metrics
    assert m["published"] > 0
    # Every message once to each of the two single-active-consumer subscriptions, none to Shared.
    assert m["delivered"] == 2 * m["published"]
    assert m["delayed_messages"] == m["published"]
    assert m["latency_p99_ms"] < 1000
    assert m["delayed_early_deliveries"] == 0


def test_builtin_workload_by_name_with_progress(host: PluginHost) -> None:
    seen: list[float] = []
    spec_profile = profile(host)
    result = simulate(spec_profile, "tailing", 0, host=host, progress=seen.append)
    assert result.workload == "tailing"
    assert seen and seen == sorted(seen) and 0 < seen[-1] <= 1.0
    assert result.metrics["delivered"] > 0


PAUSE_THEN_REPLAY = """
    name = "pause-replay"
    duration_s = 2
    drain_s = 6

    [[topics]]
    rate = 200
    arrival = "constant"

    [[topics.subscriptions]]
    type = "Shared"

    [[topics.subscriptions.consumers]]
    name = "leaves"
    rate = 0
    ack_hole_probability = 0.5
    disconnect_at_s = 3

    [[topics.subscriptions.consumers]]
    name = "arrives"
    rate = 0
    connect_at_s = 3.5
"""

PAUSE_LIMIT_50 = [
    "sim.ackStatePersister=range-count",
    "dispatcherPauseOnAckStatePersistentEnabled=true",
    "managedLedgerMaxUnackedRangesToPersist=50",
    "managedLedgerPersistIndividualAckAsLongArray=false",
]


def test_ack_state_scenario_25_replay_is_not_paused(host: PluginHost) -> None:
    """ack-state.md §10 scenario 25, end to end: a consumer leaves holes until the subscription
    pauses (more than 50 ranges); when it leaves, its unacked messages are replayed to the next
    consumer although normal reads are paused, and once they are acked the pause lifts."""
    m = run(host, PAUSE_THEN_REPLAY, 0, *PAUSE_LIMIT_50).metrics
    assert m["dispatch_paused_ms"] > 0
    assert m["redelivered"] > 0  # the holes, replayed to the second consumer during the pause
    assert m["acked"] == m["published"] and m["unacked_at_end"] == 0
    assert m["lost"] == m["delivered_after_ack"] == 0


def test_the_same_holes_without_the_pause_never_pause(host: PluginHost) -> None:
    m = run(host, PAUSE_THEN_REPLAY, 0, *PAUSE_LIMIT_50[:1], *PAUSE_LIMIT_50[2:]).metrics
    assert m["dispatch_paused_ms"] == 0
    assert m["acked"] == m["published"]


ACK_HOLES_AT_THE_TAIL = """
    name = "holes-at-the-tail"
    duration_s = 65
    drain_s = 0

    [[topics]]
    rate = 20
    arrival = "constant"

    [[topics.subscriptions]]
    name = "s"
    type = "Shared"
    consumers = [{ rate = 0, ack_hole_probability = 0.5 }]
"""


def test_legacy_active_cursor_check_counts_unread_entries_not_ack_holes(
    host: PluginHost,
) -> None:
    """Spec §3.4: the periodic check (at 60 s) compares Pulsar's ``getNumberOfEntries()``, the
    entries from the read position on, with ``managedLedgerCursorBackloggedThreshold``. A tail
    reader leaving hundreds of ack holes behind has nothing unread, so it stays active and every
    entry it reads was cached when it was added."""
    m = run(
        host,
        ACK_HOLES_AT_THE_TAIL,
        0,
        "sim.entryCache=legacy",
        "cacheEvictionByExpectedReadCount=false",
        "managedLedgerCursorBackloggedThreshold=100",
    ).metrics
    assert m["unacked_at_end"] > 100  # the backlog from the mark-delete is far past 100
    assert m["storage_entries_read"] == 0
    assert m["cache_hits"] == m["published_entries"]


# ---- the multi-consumer and single-active-consumer dispatchers against Pulsar's ---------------
# Each case names the Pulsar code it follows; the cache is disabled, so storage_entries_read
# counts every entry read, the first read and each re-read from the replay queue.


BATCHES_LARGER_THAN_THE_QUEUE = """
    name = "big-batches"
    duration_s = 2
    drain_s = 5
    [[topics]]
    rate = 200
    batch_size = 10               # 10-message entries...
    arrival = "constant"
    keys = {{ count = 10 }}
    [[topics.subscriptions]]
    type = "{kind}"
    [[topics.subscriptions.consumers]]
    count = 2
    rate = 150
    receiver_queue_size = 5       # ...for consumers that never hold more than 5 permits
"""


@pytest.mark.parametrize("kind", ["Shared", "Key_Shared"])
def test_a_consumer_with_any_permit_takes_a_whole_batch(host: PluginHost, kind: str) -> None:
    """Pulsar's multi-consumer dispatchers hand an entry to a consumer with at least one permit
    (``isConsumerAvailable``: permits > 0; Key_Shared counts entries against the permits) and let
    the permits go negative, so a batch larger than the receiver queue still goes out. Shared
    reads each entry once; Key_Shared may re-read an entry whose key's consumer was busy."""
    m = run(host, BATCHES_LARGER_THAN_THE_QUEUE.format(kind=kind)).metrics
    assert m["published_entries"] == 39
    assert m["delivered"] == m["acked"] == m["published"]
    assert m["unacked_at_end"] == 0
    if kind == "Shared":
        assert m["storage_entries_read"] == m["published_entries"]


SLOW_KEY_OWNER = """
    name = "slow-key-owner"
    duration_s = 1
    drain_s = 10
    [[topics]]
    rate = 100
    arrival = "constant"
    keys = { count = 1 }          # every message has key 0: the first consumer's
    [[topics.subscriptions]]
    type = "Key_Shared"
    [[topics.subscriptions.consumers]]
    name = "slow"
    rate = 20
    receiver_queue_size = 20
    [[topics.subscriptions.consumers]]
    name = "idle"                 # owns no key; its 1,000 permits count in the read budget
    rate = 0
"""


def test_key_shared_replays_no_more_entries_than_their_consumer_has_permits(
    host: PluginHost,
) -> None:
    """PIP-379's ``ReplayPositionFilter``: a replay read takes a position only while its consumer
    still has permits (one per entry), so what the slow consumer cannot take stays in the replay
    queue unread. Each entry is read at most twice: when it is first read and deferred, and when
    it is replayed to its consumer."""
    m = run(host, SLOW_KEY_OWNER).metrics
    assert m["delivered"] == m["acked"] == m["published"] == m["published_entries"] == 99
    assert m["redelivered"] == 0
    assert m["storage_entries_read"] <= 2 * m["published_entries"]


FAILOVER_PRIMARY_RETURNS = """
    name = "failover-return"
    duration_s = 4
    drain_s = 2
    [[topics]]
    rate = 50
    arrival = "constant"
    [[topics.subscriptions]]
    type = "Failover"
    [[topics.subscriptions.consumers]]
    name = "primary"
    group = "primary"
    rate = 0
    [[topics.subscriptions.consumers]]
    name = "standby"
    rate = 10
    receiver_queue_size = 10
    [[events]]
    at_s = 1
    kind = "disconnect"
    group = "primary"
    [[events]]
    at_s = 1.5
    kind = "reconnect"
    group = "primary"
"""


def test_failover_picks_its_active_consumer_from_the_connected_set(host: PluginHost) -> None:
    """``AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer`` picks the active
    consumer of a non-partitioned topic from the set connected now (a hash ring over consumer
    names), not by connection order: the same set gives the same consumer. The model's pick is
    the first in the workload's order, so the primary that comes back at 1.5 s is active again
    and, unlimited, acks all 199 messages; the standby (10 msg/s) had half a second alone."""
    m = run(host, FAILOVER_PRIMARY_RETURNS).metrics
    assert m["published"] == 199
    assert m["acked"] == 199 and m["unacked_at_end"] == 0


def test_two_restarts_in_a_row_still_count_the_forgotten_acks(host: PluginHost) -> None:
    """RESTART_CASE's first restart forgets the acks of 2.1..2.5 s; a second one at the same
    instant, before anything went out again, must not forget that they are owed: the 5 messages
    are delivered once more and counted as redelivered after a restart, as with one restart."""
    twice = RESTART_CASE + '\n[[events]]\nat_s = 2.55\nkind = "restart"\n'
    m = run(host, twice).metrics
    assert m["broker_restarts"] == 2
    assert m["delivered"] == m["published"] + 5
    assert m["redelivered_after_restart"] == 5
    assert m["delivered"] == m["published"] + m["redelivered"] + m["redelivered_after_restart"]


PAUSED_THEN_RESTART = """
    name = "paused-then-restart"
    duration_s = 4
    drain_s = 0

    [[topics]]
    rate = 200
    arrival = "constant"

    [[topics.subscriptions]]
    name = "s"
    type = "Shared"
    consumers = [{ rate = 0, ack_hole_probability = 0.5 }]
"""


@pytest.mark.parametrize("kind", ["restart", "unload"])
def test_a_restart_during_a_pause_keeps_the_time_paused_before_it(
    host: PluginHost, kind: str
) -> None:
    """Holes pass 50 ranges at about 1 s and the subscription stays paused to the end (4 s). A
    restart or unload at 3.9 s recovers at most 50 ranges, so dispatch resumes, and pauses again
    on the next acks: the 2.9 s paused before it still count, so the total matches the run
    without it."""
    plain = run(host, PAUSED_THEN_RESTART, 0, *PAUSE_LIMIT_50).metrics
    assert plain["dispatch_paused_ms"] > 2_900
    event = f'\n[[events]]\nat_s = 3.9\nkind = "{kind}"\n'
    m = run(host, PAUSED_THEN_RESTART + event, 0, *PAUSE_LIMIT_50).metrics
    assert m["dispatch_paused_ms"] == plain["dispatch_paused_ms"]
