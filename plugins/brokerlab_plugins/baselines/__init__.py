"""Baselines that reproduce Pulsar with a feature switched off.

* ``disabled`` entry cache: what ``managedLedgerCacheSizeMB=0`` gives (``EntryCacheDisabled``):
  nothing is cached, every read goes to storage.
* ``disabled`` delayed delivery: what ``delayedDeliveryEnabled=false`` gives: a deliver-at time is
  ignored and the message is dispatched at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import DelayedDeliveryTrackerFactoryRecord, EntryCacheRecord, hookimpl
from brokerlab_plugins.baselines.disabled_cache import DisabledEntryCache
from brokerlab_plugins.baselines.no_delayed_delivery import NoDelayedDeliveryFactory


@hookimpl
def brokerlab_entry_caches() -> Iterator[EntryCacheRecord]:
    yield EntryCacheRecord(
        name="disabled",
        description="Caches nothing, as Pulsar does with managedLedgerCacheSizeMB=0",
        factory=lambda context: DisabledEntryCache(),
    )


@hookimpl
def brokerlab_delayed_delivery_tracker_factories() -> Iterator[DelayedDeliveryTrackerFactoryRecord]:
    yield DelayedDeliveryTrackerFactoryRecord(
        name="disabled",
        description="Delivers delayed messages at once, as with delayedDeliveryEnabled=false",
        factory=lambda context: NoDelayedDeliveryFactory(),
    )
