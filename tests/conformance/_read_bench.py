"""One broker reading a topic's backlog through its entry cache, for the conformance modules whose
upstream tests read a range of entries (``EntryCache.asyncReadEntry``) with part of it cached.

The topic holds ``entries`` entries of ``size`` bytes in its first ledger, behind one Exclusive
subscription that starts at the earliest entry and has one consumer; its producer is all but
silent (one message in 1000 s). The test puts entries into the cache before the broker runs; the
dispatcher's first read then asks for the whole backlog in one range, as the upstream tests do,
and what it finds missing goes to storage.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from _conformance import ROOT

from brokerlab import load_profile
from brokerlab.broker.broker import Broker, Counters
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab_plugins.legacy_cache import LegacyEntryCache
from brokerlab_plugins.pip430_cache import Pip430EntryCache

MS = 1_000_000
HOST = PluginHost()


def _workload(entries: int, size: int, read_latency_ms: int) -> WorkloadSpec:
    document = textwrap.dedent(
        f"""
        name = "read-through-the-cache"
        duration_s = 5
        [storage]
        read_latency_ms = {read_latency_ms}
        [[topics]]
        name = "t"
        rate = 0.001
        arrival = "constant"
        backlog = {entries}
        message_size = {{ kind = "fixed", value = {size} }}
        [[topics.subscriptions]]
        name = "s"
        type = "Exclusive"
        initial_position = "earliest"
        [[topics.subscriptions.consumers]]
        """
    )
    spec = parse_workload(document, "read-through-the-cache.toml")
    assert isinstance(spec, WorkloadSpec)
    return spec


@dataclass
class ReadBench:
    """A built broker, its clock and the one topic's first ledger."""

    broker: Broker
    loop: EventLoop
    topic: str
    ledger_id: int
    size: int

    def cache(self, *entry_ids: int) -> list[bool]:
        """Put entries of the topic's first ledger into the cache (no expected reads); whether
        each put was accepted."""
        cache = self.broker.cache
        accepted = []
        for entry_id in entry_ids:
            position = (self.ledger_id, entry_id)
            if isinstance(cache, Pip430EntryCache):
                accepted.append(cache.put(self.topic, position, self.size, None))
            else:
                assert isinstance(cache, LegacyEntryCache)
                accepted.append(cache.put(self.topic, position, self.size))
        return accepted

    def cached(self) -> list[int]:
        """The entry ids of the topic's first ledger that the cache holds."""
        cache = self.broker.cache
        assert isinstance(cache, Pip430EntryCache | LegacyEntryCache)
        return sorted(e for (ledger, e) in cache.cached(self.topic) if ledger == self.ledger_id)

    def run(self) -> Counters:
        """Let the broker read and dispatch the backlog (one second of virtual time)."""
        self.loop.run_until(1000 * MS)
        return self.broker.counters


def read_bench(profile: str, *, entries: int, size: int, read_latency_ms: int = 0) -> ReadBench:
    """A broker under the ready profile named ``profile``, storage reads taking
    ``read_latency_ms``, and the topic built but not yet read."""
    loaded = load_profile(ROOT / "profiles" / f"{profile}.conf", mode="strict", host=HOST)
    loop = EventLoop()
    broker = wire_broker(loaded, HOST.resolve(loaded), loop, 0)
    broker.build(_workload(entries, size, read_latency_ms))
    topic = broker.topics[0]
    ledger = topic.ledger.current
    assert len(ledger) == entries
    return ReadBench(broker, loop, topic.name, ledger.boxed_id, size)
