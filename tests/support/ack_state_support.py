"""Shared helpers for the ack-state tests: a settable clock, state fakes, persister builders.

Imported by the unit and conformance tests (``tests/support`` is on pytest's ``pythonpath``); it
holds no tests itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlab.profiles.model import BrokerSettings
from brokerlab.protocols import (
    AckState,
    AckStatePersister,
    BatchAck,
    PluginContext,
    Position,
    RecoveredAckState,
)
from brokerlab.testing.ack_state import ack_cursor
from brokerlab.testing.ack_state import ledger_layout as ledger_layout
from brokerlab_plugins.ack_state.settings import NAMESPACE, AckStateSettings

NS = 1_000_000_000
Range = tuple[Position, Position]


class FakeClock:
    """A clock the test moves by hand (also a do-nothing scheduler)."""

    def __init__(self) -> None:
        self.ns = 0

    def now_ns(self) -> int:
        return self.ns

    def now_ms(self) -> int:
        return 1_700_000_000_000 + self.ns // 1_000_000

    def call_at(self, when_ns: int, callback: Any) -> Any:
        raise AssertionError("a persister must not schedule callbacks")

    def advance(self, seconds: float) -> None:
        self.ns += round(seconds * NS)


@dataclass
class FakeState:
    """An AckState given directly by its parts (for byte-exact and large-state cases)."""

    md: Position
    ranges: list[Range] = field(default_factory=list)
    batches: dict[Position, BatchAck] = field(default_factory=dict)
    props: dict[str, int] = field(default_factory=dict)
    sub_props: dict[str, str] = field(default_factory=dict)

    @property
    def mark_delete(self) -> Position:
        return self.md

    def acked_ranges(self) -> list[Range]:
        return self.ranges

    def range_count(self) -> int:
        return len(self.ranges)

    def batch_acks(self) -> Mapping[Position, BatchAck]:
        return self.batches

    def subscription_properties(self) -> Mapping[str, str]:
        return self.sub_props

    def mark_delete_properties(self) -> Mapping[str, int]:
        return self.props


def settings(**values: Any) -> BrokerSettings:
    """Broker settings for the spec's common setup (no rate limit, MessageRange form)."""
    base: dict[str, Any] = {
        "managed_ledger_default_mark_delete_rate_limit": 0.0,
        "managed_ledger_persist_individual_ack_as_long_array": False,
    }
    base.update(values)
    return BrokerSettings(**base)


def context(clock: FakeClock | None = None, release: str = "4.x", **values: Any) -> PluginContext:
    clock = clock or FakeClock()
    return PluginContext(
        settings=settings(**values),
        clock=clock,
        scheduler=clock,
        rng=np.random.default_rng(0),
        plugin_settings={NAMESPACE: AckStateSettings(pulsarRelease=release)},  # type: ignore[arg-type]
    )


cursor = ack_cursor
"""A real broker cursor on a managed ledger of ``entries`` entries (the contract kit's)."""


def layout_positions(layout: Mapping[int, int]) -> list[Position]:
    return [(lid, e) for lid in sorted(layout) for e in range(layout[lid])]


def acked_set(md: Position, ranges: Iterable[Range], layout: Mapping[int, int]) -> set[Position]:
    """Every acked position of a state on a ledger ``layout`` (ledger id -> entry count)."""
    out = {p for p in layout_positions(layout) if p <= md}
    for (lid, lo), (_, hi) in ranges:
        out.update((lid, e) for e in range(lo + 1, hi + 1))
    return out


def redelivered(
    truth_md: Position,
    truth_ranges: Iterable[Range],
    got: RecoveredAckState,
    layout: Mapping[int, int],
) -> int:
    """Acked positions the recovered state does not hold (they are delivered again)."""
    truth = acked_set(truth_md, truth_ranges, layout)
    return len(truth - acked_set(got.mark_delete, got.acked_ranges, layout))


def opened(persister: AckStatePersister, state: AckState) -> None:
    """Create the cursor and make its first write, which creates its cursor ledger.

    Pulsar creates a cursor's ledger lazily, on the first mark-delete (PR #16389; apache/pulsar
    ``ManagedCursorTest.testLazyCursorLedgerCreation``); until then the metadata-store node holds
    the state. Scenarios that measure a write to the ledger start from here.
    """
    persister.created(state)
    persister.acked(state, [])
