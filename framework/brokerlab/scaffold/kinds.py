"""The kinds of plugin ``brokerlab new-plugin`` writes: one per extension point a plugin fills."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "Kind"]


@dataclass(frozen=True)
class Kind:
    """One kind: its ``--kind`` value, the host's extension point, words for the README (which
    may name the plugin as ``${name}``), and the settings key it owns, if any (a cursor
    container's and a workload's factories get no context, so no settings could reach them)."""

    name: str
    point: str
    title: str
    implements: str
    selected_by: str
    settings_key: str | None
    try_it: str

    @property
    def template_folder(self) -> str:
        """The folder below ``templates/`` that holds this kind's own files."""
        return self.name


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "entry-cache",
            "entry_cache",
            "entry cache",
            "the `EntryCache` protocol: a byte-bounded FIFO with a time to live",
            "sim.entryCache=${name}",
            "maxEntryBytes",
            "brokerlab run --profile pulsar-4.2 --set sim.entryCache=${name} --workload tailing",
        ),
        Kind(
            "eviction-predicate",
            "eviction_predicate",
            "eviction predicate",
            "the `EvictionPredicate` protocol: a second chance for entries read since queued",
            "sim.evictionPredicates=${name}",
            "maxRequeues",
            "brokerlab run --profile pulsar-4.2 --set sim.evictionPredicates=${name} "
            "--set managedLedgerCacheSizeMB=64 --workload catch-up-fanout",
        ),
        Kind(
            "cursor-container",
            "cursor_container",
            "cursor container",
            "the `RankedCursorContainer` protocol: active cursors in a dict, every query a scan",
            "sim.cursorContainer=${name}",
            None,
            "brokerlab run --profile pulsar-4.2 --set sim.cursorContainer=${name} "
            "--workload catch-up-fanout",
        ),
        Kind(
            "delayed-delivery-tracker-factory",
            "delayed_delivery",
            "delayed-delivery tracker factory",
            "the `DelayedDeliveryTrackerFactory` protocol: one heap of held positions per "
            "subscription and a timer for its head",
            "delayedDeliveryEnabled=true and delayedDeliveryTrackerFactoryClassName=${name}",
            "bytesPerPosition",
            "brokerlab run --profile pulsar-4.2 --set delayedDeliveryEnabled=true "
            "--set delayedDeliveryTrackerFactoryClassName=${name} --workload delayed-mixed",
        ),
        Kind(
            "ack-state-persister",
            "ack_state_persister",
            "ack-state persister",
            "the `AckStatePersister` protocol: the mark-delete position only, rate-limited",
            "sim.ackStatePersister=${name}",
            "writeIntervalMs",
            "brokerlab run --profile pulsar-4.2 --set sim.ackStatePersister=${name} "
            "--workload ack-holes-restart",
        ),
        Kind(
            "workload",
            "workload",
            "workload",
            "a `WorkloadRecord`: a TOML workload document shipped in the package",
            "brokerlab run --workload ${name}",
            None,
            "brokerlab run --profile pulsar-4.2 --workload ${name}",
        ),
    )
}
