"""A cluster: several brokers built from one profile, sharing one clock and one storage.

Topics are placed as Pulsar places them: a topic belongs to the namespace bundle its name hashes
into (CRC-32 over ``defaultNumberOfNamespaceBundles`` equal hash ranges, as Pulsar's
``NamespaceBundles`` does), and a bundle to one broker. At the start bundle ``b`` goes to broker
``b mod N``, the spread a load manager reaches over brokers that are all empty. When a broker
goes down its bundles go, in bundle order, each to the live broker that then owns the fewest
(the lowest index on a tie): a deterministic stand-in for the load manager's choice of the
least loaded broker. A broker that comes back starts empty; bundles return to it only when
another broker goes down.

An unload of one topic (an event with ``topic``, as ``pulsar-admin namespaces unload --bundle
... --destinationBroker ...``) unloads its whole bundle: every topic of the bundle closes
gracefully on its owner and, after the event's outage, opens on ``to_broker`` or, without one, on
the live broker other than the owner that owns the fewest bundles (the same rule as above); with
no other broker, or ``to_broker`` the owner, the topics open again where they were.

Each broker has its own entry cache, cursor containers, delayed-delivery trackers and ack-state
persisters, made by the plugins from the same profile: plugins see one broker, as in Pulsar. A
topic handed over keeps its managed ledger and its cursors' persisted state (both live in the
shared storage) and loses everything in memory. Each broker records the end-to-end latencies of
what it delivers in a histogram of its own; the cluster's percentiles come from their sum
(:func:`merged_histogram`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Final

from brokerlab.broker.broker import Broker, Topic
from brokerlab.broker.reads import Storage
from brokerlab.broker.recovery import load_topics, unload_topics
from brokerlab.workloads.model import EventSpec, WorkloadSpec

__all__ = ["Cluster", "bundle_of", "combined_metrics", "merged_histogram"]

NS: Final = 1_000_000_000
HASH_RANGE: Final = 1 << 32
# Counters that are peaks: the cluster's is the largest broker's, not a sum.
PEAK_COUNTERS: Final = frozenset(
    {
        "ack_max_ranges",
        "delayed_max_earliness_ms",
        "storage_reads_in_flight_peak",
        "reads_in_flight_peak_bytes",
    }
)


def bundle_of(topic: str, bundles: int) -> int:
    """The namespace bundle ``topic`` hashes into: CRC-32 of its name over the bundles' ranges.

    As ``NamespaceBundleFactory.getBundles``: each bundle spans ``2^32 // bundles`` hashes and
    the last one also takes the remainder.
    """
    return min(zlib.crc32(topic.encode()) // (HASH_RANGE // bundles), bundles - 1)


class Cluster:
    """``brokers`` (built, not yet given topics) serving one workload together."""

    def __init__(self, brokers: list[Broker], bundles: int) -> None:
        self.brokers = brokers
        self.bundles = bundles
        self.loop = brokers[0].loop
        # Bundle -> index of the broker that owns it.
        self.owner_of_bundle = [b % len(brokers) for b in range(bundles)]
        for broker in brokers[1:]:
            broker.share_ledger_ids(brokers[0])

    def owner(self, topic: str) -> Broker:
        return self.brokers[self.owner_of_bundle[bundle_of(topic, self.bundles)]]

    def build(self, workload: WorkloadSpec) -> None:
        storage = Storage(workload.storage, self.brokers[0].seed)
        for broker in self.brokers:
            broker.prepare(workload, storage)
        self.brokers[0].add_topics(workload, self.owner)
        for event in workload.events:
            self._schedule(event)
        for broker in self.brokers:
            broker.start_periodic_tasks()

    def schedule_topic_unloads(self, workload: WorkloadSpec) -> None:
        """Schedule only the workload's unloads of a topic: a one-broker run, whose other events
        its broker schedules itself (``Broker.build``), has them too."""
        for event in workload.events:
            if event.topic is not None:
                self._schedule(event)

    def _schedule(self, event: EventSpec) -> None:
        at = round(event.at_s * NS)
        if event.topic is not None:
            outage = round(event.outage_s * NS)
            self.loop.at(at, partial(self._unload_bundle, event.topic, event.to_broker, outage))
        elif event.kind in ("restart", "unload"):
            broker = self.brokers[event.broker]
            self.loop.at(at, partial(broker.go_down, event.kind == "unload"))
            self.loop.at(at + round(event.outage_s * NS), partial(self._hand_over, event.broker))
        else:
            connect = event.kind == "reconnect"
            for broker in self.brokers:
                self.loop.at(at, partial(broker.set_group, event.group, connect))

    def _hand_over(self, index: int) -> None:
        """The outage of broker ``index`` ends: its bundles go to the other brokers, each to the
        one that owns the fewest, and their topics open there; the broker rejoins empty."""
        owned = [0] * len(self.brokers)
        for owner in self.owner_of_bundle:
            owned[owner] += 1
        for bundle, owner in enumerate(self.owner_of_bundle):
            if owner == index:
                owned[index] -= 1
                others = [i for i in range(len(self.brokers)) if i != index]
                new = _fewest(owned, others)
                self.owner_of_bundle[bundle] = new
                owned[new] += 1
        broker = self.brokers[index]
        moves: list[tuple[Topic, Broker]] = [(t, self.owner(t.name)) for t in broker.topics]
        broker.hand_over(moves)

    def _unload_bundle(self, topic: str, to_broker: int | None, outage_ns: int) -> None:
        """Unload the bundle of ``topic`` from its owner now; its topics open on the new owner
        (``to_broker``, or the least loaded other live broker, or the owner itself when there is
        none) once ``outage_ns`` has passed."""
        bundle = bundle_of(topic, self.bundles)
        index = self.owner_of_bundle[bundle]
        new = self._destination(index) if to_broker is None else to_broker
        self.owner_of_bundle[bundle] = new
        old = self.brokers[index]
        topics = [t for t in old.topics if bundle_of(t.name, self.bundles) == bundle]
        back = self.loop.now_ns() + outage_ns
        unload_topics(old, topics, back)
        load = partial(load_topics, old, topics, self.brokers[new])
        if outage_ns:
            self.loop.at(back, load)
        else:
            load()

    def _destination(self, index: int) -> int:
        """Where a bundle unloaded from broker ``index`` goes without a destination: the live
        broker other than ``index`` that owns the fewest bundles, or ``index`` if there is none."""
        owned = [0] * len(self.brokers)
        for owner in self.owner_of_bundle:
            owned[owner] += 1
        live = [i for i, b in enumerate(self.brokers) if i != index and b.down_since < 0]
        return _fewest(owned, live) if live else index


def _fewest(owned: list[int], candidates: list[int]) -> int:
    """The candidate that owns the fewest bundles, the lowest index on a tie: a deterministic
    stand-in for the load manager's choice of the least loaded broker."""
    return min(candidates, key=lambda i: (owned[i], i))


def combined_metrics(
    per_broker: Sequence[Mapping[str, float]], kinds: Mapping[str, str]
) -> dict[str, float]:
    """The brokers' metrics as the cluster's: counters add up; gauges, peaks and ratios take the
    largest broker's (the caller recomputes the ratios it can from the sums, and the latency
    percentiles from :func:`merged_histogram`)."""
    out: dict[str, float] = {}
    # A conditional metric may come only from the brokers whose plugins reported it.
    for name in dict.fromkeys(name for m in per_broker for name in m):
        values = [m[name] for m in per_broker if name in m]
        summed = kinds.get(name) == "counter" and name not in PEAK_COUNTERS
        out[name] = sum(values) if summed else max(values)
    return out


def merged_histogram(brokers: list[Broker]) -> dict[int, int]:
    """The brokers' end-to-end latency histograms (ms -> messages) added up: the cluster's."""
    merged: dict[int, int] = {}
    for broker in brokers:
        for key, count in broker.latency_ms.items():
            merged[key] = merged.get(key, 0) + count
    return merged
