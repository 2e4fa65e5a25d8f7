"""Which selected plugins read a key (brokerlab.profiles.readers): what sweeps and --set ask."""

from __future__ import annotations

import pytest

from brokerlab import load_profile
from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.profiles.readers import key_applies, readers_of, unread_keys

HOST = PluginHost()
PULSAR = frozenset({"pulsar"})


def profile(*settings: str) -> Profile:
    return load_profile(None, list(settings), host=HOST)


@pytest.mark.parametrize(
    ("settings", "key", "families", "readers"),
    [
        ((), "managedLedgerMaxAckStateInBytesToPersist", None, set()),
        (
            ("sim.ackStatePersister=pip299",),
            "managedLedgerMaxAckStateInBytesToPersist",
            None,
            {"the ack-state persister 'pip299'"},
        ),
        ((), "managedLedgerCacheSizeMB", PULSAR, {"the pulsar simulator"}),
        ((), "remote.log.index.file.cache.ttl.ms", PULSAR, set()),
        ((), "remote.log.index.file.cache.ttl.ms", None, {"the kafka-tiered-storage simulator"}),
        ((), "sim.pip448.draftSemantics", None, set()),
        (
            ("delayedDeliveryTrackerFactoryClassName=topic-level",),
            "sim.pip448.draftSemantics",
            None,
            {"the delayed-delivery tracker factory 'topic-level'"},
        ),
        (("delayedDeliveryEnabled=false",), "sim.legacyDelayed.timerWheel", None, set()),
        ((), "sim.entryCache", PULSAR, {"the pulsar simulator"}),
    ],
)
def test_readers_of_a_key(
    settings: tuple[str, ...], key: str, families: frozenset[str] | None, readers: set[str]
) -> None:
    chosen = profile(*settings)
    assert readers_of(key, chosen, HOST, families) == readers
    assert key_applies(key, chosen, HOST, families) == bool(readers)


def test_unread_keys_skip_values_at_their_default() -> None:
    found = unread_keys(
        profile(
            "dispatcherPauseOnAckPersistentStateEnabled=true",
            "maxIndividualAckCacheBytesPerCursor=7",
        ),
        HOST,
    )
    assert [u.key for u in found] == ["maxIndividualAckCacheBytesPerCursor"]
    assert found[0].problem() == (
        "is read only by the ack-state persister 'pip81', and this profile selects the "
        "ack-state persister 'range-count'"
    )
