"""Spec ack-state.md §10, scenarios B1-B6: persister (b), the PIP-299 byte budget (§0.2)."""

from __future__ import annotations

from typing import Any

import pytest
from ack_state_support import FakeClock, FakeState, context, opened, redelivered
from pydantic import ValidationError

from brokerlab.profiles.model import BrokerSettings
from brokerlab_plugins.ack_state.pip299 import ByteLimitEncoder, new_pip299_persister
from brokerlab_plugins.ack_state.whole_state import WholeStatePersister
from brokerlab_plugins.ack_state.wire_size import string_property_bytes


def persister(clock: FakeClock | None = None, **s: Any) -> WholeStatePersister:
    s.setdefault("managed_ledger_max_ack_state_in_bytes_to_persist", 1024)
    return new_pip299_persister(context(clock, **s), "t/s")


def odd_acks(entries: int) -> FakeState:
    return FakeState((1, -1), [((1, e - 1), (1, e)) for e in range(1, entries, 2)])


def encoder(p: WholeStatePersister) -> ByteLimitEncoder:
    assert isinstance(p.encoder, ByteLimitEncoder)
    return p.encoder


def test_scenario_b1_budget_fits() -> None:
    p = persister()
    state = odd_acks(100)
    opened(p, FakeState((1, -1)))
    out = p.acked(state, [1])
    assert out is not None and out.bytes_written == 713 and out.ranges_dropped == 0
    assert encoder(p).cached_size == 713


def test_scenario_b2_budget_cut() -> None:
    p = persister(dispatcher_pause_on_ack_persistent_state_enabled=True)
    state = odd_acks(400)
    opened(p, FakeState((1, -1)))
    out = p.acked(state, [1])
    assert out is not None and out.bytes_written == 1021
    assert (out.ranges_persisted, out.ranges_dropped) == (71, 129)
    p.crash()
    assert redelivered(state.md, state.ranges, p.recover(), {1: 400}) == 129
    assert encoder(p).cached_size == 3085
    assert p.should_pause_dispatch(state)
    assert p.stats()["ack_bytes_dropped"] == 3085 - 13 - 1008


def test_scenario_b3_properties_first() -> None:
    props = {"k": "v" * 1090}
    assert string_property_bytes("k", "v" * 1090) > 1024 - 13
    state = odd_acks(100)
    state.sub_props = props
    p = persister()
    opened(p, FakeState((1, -1), sub_props=props))
    out = p.acked(state, [1])
    assert out is not None and out.ranges_persisted == 0 and out.bytes_written == 13
    p.crash()
    assert redelivered(state.md, state.ranges, p.recover(), {1: 100}) == 50
    assert encoder(p).cached_size == 13 + string_property_bytes("k", "v" * 1090) + 700
    assert p.should_pause_dispatch(state)


def test_scenario_b4_range_count_limit_ignored() -> None:
    p = persister(
        managed_ledger_max_unacked_ranges_to_persist=10,
        dispatcher_pause_on_ack_state_persistent_enabled=True,
    )
    state = odd_acks(100)
    opened(p, FakeState((1, -1)))
    out = p.acked(state, [1])
    assert out is not None and out.ranges_persisted == 50
    assert "ack_truncations" not in p.stats()
    assert not p.should_pause_dispatch(state)


def test_scenario_b5_lagging_resume() -> None:
    clock = FakeClock()
    p = persister(clock, managed_ledger_default_mark_delete_rate_limit=1.0)
    p.created(FakeState((1, -1)))
    p.acked(odd_acks(400), [1])  # the first call gets a permit
    clock.advance(0.1)
    everything = FakeState((1, 399))
    assert p.acked(everything, [1]) is None  # no permit: the cache is stale
    assert p.should_pause_dispatch(everything)
    clock.advance(60)
    p.flush(everything)  # the dirty-cursor flush refreshes the cached size
    assert not p.should_pause_dispatch(everything)


def test_scenario_b6_switch_off() -> None:
    p = persister(dispatcher_pause_on_ack_persistent_state_enabled=False)
    state = odd_acks(400)
    opened(p, FakeState((1, -1)))
    out = p.acked(state, [1])
    assert out is not None and out.ranges_dropped == 129
    assert not p.should_pause_dispatch(state)


@pytest.mark.parametrize("value", [1023, 5 * 1024 * 1024 + 1])
def test_limit_out_of_range_is_rejected_with_the_range(value: int) -> None:
    with pytest.raises(ValidationError, match=r"1024|5242880"):
        BrokerSettings(managed_ledger_max_ack_state_in_bytes_to_persist=value)


def test_long_array_walk_keeps_whole_ledgers() -> None:
    # Two ledgers of dense acks: the budget fits the first ledger's map but not the second's.
    state = FakeState((1, 0), [((1, 1), (1, 500)), ((2, 0), (2, 9000))])
    p = persister(managed_ledger_persist_individual_ack_as_long_array=True)
    p.created(FakeState((1, 0)))
    out = p.acked(state, [1, 2])
    assert out is not None and out.ranges_persisted == 1 and out.ranges_dropped == 1
