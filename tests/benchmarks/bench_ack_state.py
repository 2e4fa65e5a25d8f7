"""Ack-state persisters: bytes and time per write against the number of acked ranges.

A plain script (``python tests/benchmarks/bench_ack_state.py``). The state has N ranges (one hole
between every two acked entries) over 10 user ledgers; each write follows one more ack in the
newest ledger, as on a tailing subscription. Pulsar's default limits apply (range cap 10,000,
MessageRange form; PIP-299 budget 5 MiB; PIP-81 cap 3 MiB), so the table shows both what each
persister writes and what it leaves out.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from brokerlab.profiles.model import BrokerSettings
from brokerlab.protocols import AckStatePersister, BatchAck, PluginContext, Position
from brokerlab_plugins.ack_state.pip81 import new_pip81_persister
from brokerlab_plugins.ack_state.pip299 import new_pip299_persister
from brokerlab_plugins.ack_state.range_count import new_range_count_persister

LEDGERS = 10
FIRST_LEDGER = 3_000_000
WRITES = 5
PERSISTERS = {
    "range-count": new_range_count_persister,
    "pip299": new_pip299_persister,
    "pip81": new_pip81_persister,
}


class _Clock:
    def now_ns(self) -> int:
        return 0

    def now_ms(self) -> int:
        return 1_700_000_000_000

    def call_at(self, when_ns: int, callback: object) -> object:
        raise AssertionError("a persister must not schedule callbacks")


@dataclass
class _State:
    """A cursor's ack state given by its ranges (what the persisters read)."""

    ranges: list[tuple[Position, Position]]
    md: Position = (FIRST_LEDGER, 0)
    batches: dict[Position, BatchAck] = field(default_factory=dict)

    @property
    def mark_delete(self) -> Position:
        return self.md

    def acked_ranges(self) -> list[tuple[Position, Position]]:
        return self.ranges

    def range_count(self) -> int:
        return len(self.ranges)

    def batch_acks(self) -> Mapping[Position, BatchAck]:
        return self.batches

    def subscription_properties(self) -> Mapping[str, str]:
        return {}

    def mark_delete_properties(self) -> Mapping[str, int]:
        return {}


def state(n: int) -> _State:
    per = n // LEDGERS
    return _State(
        [
            ((FIRST_LEDGER + lid, 2 * i), (FIRST_LEDGER + lid, 2 * i + 1))
            for lid in range(LEDGERS)
            for i in range(per)
        ]
    )


def context() -> PluginContext:
    settings = BrokerSettings(
        managed_ledger_default_mark_delete_rate_limit=0.0,
        managed_ledger_persist_individual_ack_as_long_array=False,
    )
    clock = _Clock()
    return PluginContext(settings, clock, clock, np.random.default_rng(0))


def measure(persister: AckStatePersister, s: _State) -> tuple[float, float, int]:
    """Mean bytes and seconds per write, and the ranges left out of the last write."""
    persister.created(s)
    last = FIRST_LEDGER + LEDGERS - 1
    total_bytes = 0
    dropped = 0
    start = time.perf_counter()
    for _ in range(WRITES):
        upper = s.ranges[-1][1][1]
        s.ranges.append(((last, upper + 1), (last, upper + 2)))  # one more hole-separated ack
        out = persister.acked(s, [last])
        assert out is not None
        total_bytes += out.bytes_written
        dropped = out.ranges_dropped
    return total_bytes / WRITES, (time.perf_counter() - start) / WRITES, dropped


def main() -> None:
    print(f"{'ranges':>8} {'persister':<12} {'bytes/write':>12} {'ms/write':>9} {'dropped':>8}")
    for n in (1_000, 10_000, 100_000):
        rows = {}
        for name, factory in PERSISTERS.items():
            rows[name] = measure(factory(context(), "bench/sub"), state(n))
            b, t, d = rows[name]
            print(f"{n:>8} {name:<12} {b:>12,.0f} {t * 1e3:>9.2f} {d:>8}")
        base_b, base_t, _ = rows["range-count"]
        for name in ("pip299", "pip81"):
            b, t, _ = rows[name]
            print(f"{'':>8} {name} / range-count: bytes x{b / base_b:.3f}, time x{t / base_t:.2f}")


if __name__ == "__main__":
    main()
