"""The multi-consumer dispatchers against Pulsar's, on small hand-checked workloads.

Each case names the Pulsar code it follows; the cache is disabled, so ``storage_entries_read``
counts every entry read, the first read and each re-read from the replay queue.
"""

from __future__ import annotations

import textwrap

import pytest

from brokerlab import load_profile, simulate
from brokerlab.host import PluginHost
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


def run(host: PluginHost, toml: str, seed: int = 0) -> Result:
    spec = parse_workload(textwrap.dedent(toml), "test.toml")
    return simulate(load_profile(None, BASELINE, host=host), spec, seed, host=host)


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
