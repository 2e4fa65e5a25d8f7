"""Ack-state persisters under 1,000,000 acknowledgements with 1% holes (a plain script).

    python tests/benchmarks/bench_ack_holes.py [ACKS]

One cursor acknowledges ACKS entries in order, leaving 1% of them unacknowledged for good, in
ack groups of 100 every 10 ms (10,000 msg/s). Every persister sees the
same sequence on the same virtual clock, with Pulsar's defaults (mark-delete rate limit 1/s,
60 s flush). Printed per persister, in one run: bytes written per ack, write amplification,
ranges dropped, time spent persisting and recovering (as ratios to the fastest), what recovery
brings back, and for PIP-81 the resident ack-state memory with and without its cap.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from brokerlab import load_profile
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.host import PluginHost
from brokerlab.protocols import AckStatePersister, PluginContext

GROUP = 100
GROUP_NS = 10_000_000
FLUSH_NS = 60_000_000_000


@dataclass
class Outcome:
    name: str
    written: int = 0
    writes: int = 0
    dropped: int = 0
    changed: float = 0.0
    persist_s: float = 0.0
    recover_s: float = 0.0
    recovered: int = 0
    resident_peak: float = 0.0


def build(acks: int) -> tuple[ManagedLedger, list[tuple[int, int]], np.ndarray]:
    ml = ManagedLedger("t", LedgerIds(), 50_000)
    positions = [ml.append(100, i) for i in range(acks)]
    holes = np.random.default_rng(7).random(acks) < 0.01
    return ml, positions, holes


def run(
    name: str,
    make: Callable[[PluginContext], AckStatePersister],
    context: PluginContext,
    loop: EventLoop,
    data: tuple[ManagedLedger, list[tuple[int, int]], np.ndarray],
) -> Outcome:
    ml, positions, holes = data
    cursor = Cursor("c", ml, ml.first_position)
    persister = make(context)
    out = Outcome(name)

    def account(result: object) -> None:
        if result is not None:
            out.writes += 1
            out.written += result.bytes_written  # type: ignore[attr-defined]
            out.dropped += result.ranges_dropped  # type: ignore[attr-defined]

    account(persister.created(cursor))
    next_flush = FLUSH_NS
    now = 0
    truth = 0
    for start in range(0, len(positions), GROUP):
        changed: set[int] = set()
        for index in range(start, min(start + GROUP, len(positions))):
            if not holes[index]:
                ledger_id, entry_id = positions[index]
                cursor.ack(ledger_id, entry_id)
                changed.add(ledger_id)
                truth += 1
        now += GROUP_NS
        loop.run_until(now)
        began = time.perf_counter()
        account(persister.acked(cursor, sorted(changed)))
        if now >= next_flush:
            account(persister.flush(cursor))
            next_flush += FLUSH_NS
        out.persist_s += time.perf_counter() - began
        lru = getattr(persister, "lru", None)
        if lru is not None:
            out.resident_peak = max(out.resident_peak, lru.resident_bytes)
    out.changed = float(persister.stats().get("ack_changed_bytes", 0))
    persister.crash()
    began = time.perf_counter()
    recovered = persister.recover()
    out.recover_s = time.perf_counter() - began
    counted = ml.index_of(recovered.mark_delete) + 1
    counted += sum(upper[1] - lower[1] for lower, upper in recovered.acked_ranges)
    out.recovered = counted
    return out


def _per_cursor(
    factory: Callable[[PluginContext, str], AckStatePersister], context: PluginContext
) -> AckStatePersister:
    return factory(context, "c")


def main(acks: int) -> None:
    host = PluginHost()
    records = {reg.record.name: reg.record for reg in host.records("ack_state_persister")}
    data = build(acks)
    acked = int((~data[2]).sum())
    print(f"{acks:,} entries, {acked:,} acknowledged (1% holes), ack groups of {GROUP}")
    rows: list[Outcome] = []
    variants = [
        ("unlimited", "unlimited", []),
        ("range-count", "range-count", []),
        ("pip299", "pip299", []),
        ("pip81 (3 MiB cap)", "pip81", []),
        ("pip81 (64 KiB cap)", "pip81", ["maxIndividualAckCacheBytesPerCursor=65536"]),
        ("pip81 (no cap)", "pip81", ["enableLruCacheMaxUnackedRanges=false"]),
    ]
    for label, record, overrides in variants:
        loop = EventLoop()
        profile = load_profile(None, ["sim.entryCache=disabled", *overrides], host=host)
        context = PluginContext(
            settings=profile.settings,
            clock=loop,
            scheduler=loop,
            rng=np.random.default_rng(0),
            plugin_settings=profile.plugin_settings,
        )
        factory = records[record].factory
        rows.append(run(label, partial(_per_cursor, factory), context, loop, data))
    fastest = min(r.persist_s for r in rows) or 1e-9
    print(
        f"{'persister':<20}{'writes':>7}{'bytes/ack':>11}{'write amp':>11}{'dropped':>9}"
        f"{'persist x':>11}{'recover ms':>12}{'recovered':>11}{'resident peak':>15}"
    )
    for r in rows:
        amplification = r.written / r.changed if r.changed else float("nan")
        resident = f"{r.resident_peak:,.0f} B" if r.resident_peak else "-"
        print(
            f"{r.name:<20}{r.writes:>7}{r.written / acked:>11.2f}{amplification:>11.2f}"
            f"{r.dropped:>9}{r.persist_s / fastest:>11.1f}{r.recover_s * 1e3:>12.1f}"
            f"{r.recovered / acked:>10.1%}{resident:>15}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
