"""Spec ack-state.md §10, scenarios C1-C6: persister (c), PIP-81 split acknowledgements (§0.3)."""

from __future__ import annotations

from typing import Any

from ack_state_support import (
    FakeState,
    context,
    cursor,
    ledger_layout,
    opened,
    redelivered,
)

from brokerlab.broker.cursor import Cursor
from brokerlab_plugins.ack_state.lru import LruLedgers
from brokerlab_plugins.ack_state.pip81 import SplitAckPersister, new_pip81_persister
from brokerlab_plugins.ack_state.range_count import new_range_count_persister


def persister(**s: Any) -> SplitAckPersister:
    return new_pip81_persister(context(**s), "t/s")


def three_ledgers() -> Cursor:
    """C1's state: ledgers 1..3 of 1,000 entries, the odd entries acked (500 ranges each)."""
    c = cursor(3000, per_ledger=1000)
    for lid in (1, 2, 3):
        for e in range(1, 1000, 2):
            c.ack(lid, e)
    return c


def test_scenario_c1_save_and_restore() -> None:
    c = three_ledgers()
    p = persister()
    p.created(cursor(0))
    p.acked(c, [1, 2, 3])
    p.crash()
    got = p.recover()
    assert got.mark_delete == c.md and list(got.acked_ranges) == list(c.acked_ranges())
    assert p.recovery_path == "marker"


def test_scenario_c2_only_dirty_ledgers_rewritten() -> None:
    c = three_ledgers()
    split = persister()
    whole = new_range_count_persister(context(), "t/s")
    split.created(c)
    opened(whole, c)  # the whole-state persister's cursor ledger exists from its first write
    before = {p: p.stats()["ack_changed_bytes"] for p in (split, whole)}
    c.ack(2, 0)
    entries = split.ledger_entries_written
    out_split, out_whole = split.acked(c, [2]), whole.acked(c, [2])
    assert out_split is not None and out_whole is not None
    assert split.ledger_entries_written - entries == 1  # ledger 2 only, then the marker
    assert sorted(split._index) == [1, 2, 3]  # ledgers 1 and 3 still point at older entries
    wa_split = out_split.bytes_written / (split.stats()["ack_changed_bytes"] - before[split])
    wa_whole = out_whole.bytes_written / (whole.stats()["ack_changed_bytes"] - before[whole])
    assert 1.0 <= wa_split < 1.05
    assert 2.9 < wa_whole < 3.1


def test_scenario_c3_marker_index_pruned_on_md_advance() -> None:
    c = cursor(30, per_ledger=10)
    p = persister()
    p.created(c)
    for pos in [(1, 5), (2, 3), (3, 3)]:
        c.ack(*pos)
    p.acked(c, [1, 2, 3])
    assert sorted(p._index) == [1, 2, 3]
    for e in [0, 1, 2, 3, 4, 6, 7, 8, 9]:
        c.ack(1, e)
    assert c.md == (1, 9)  # the mark-delete reached the end of ledger 1
    p.acked(c, [1])
    assert sorted(p._index) == [2, 3]


def test_scenario_c4_incomplete_marker_falls_back() -> None:
    c = cursor(20)
    p = persister()
    p.created(c)
    c.ack(1, 3)
    p.acked(c, [1])
    p.fail_next_marker = True
    c.ack(1, 7)
    c.ack(1, 9)
    p.acked(c, [1])  # the per-ledger entry is written, its marker is not
    truth_md, truth_ranges = c.md, list(c.acked_ranges())
    p.crash()
    got = p.recover()
    assert p.recovery_path == "previous marker" and p.marker_fallbacks == 1
    assert redelivered(truth_md, truth_ranges, got, ledger_layout(c)) == 2


def test_scenario_c5_cap_smaller_than_one_ledger() -> None:
    c = three_ledgers()
    p = persister(max_individual_ack_cache_bytes_per_cursor=1000)
    p.created(cursor(0))
    p.acked(c, [1, 2, 3])
    p.crash()
    got = p.recover()
    assert list(got.acked_ranges) == list(c.acked_ranges())
    assert p.lru.resident() == [3]  # only the newest ledger is loaded back


def test_scenario_c6_lru_switching() -> None:
    lru = LruLedgers(2000)
    lru.touch(1, 1000, persisted=True)
    lru.touch(2, 1000, persisted=True)
    assert lru.touch(3, 800, persisted=True) == [1]
    assert lru.resident() == [2, 3]
    lru = LruLedgers(2000)
    lru.touch(1, 1000, persisted=True)
    lru.touch(2, 1000, persisted=True)
    assert lru.touch(3, 1500, persisted=True) == [1, 2]
    assert lru.swap_outs == 2 and lru.swap_ins == 3


def test_dirty_ledger_is_written_before_swap_out() -> None:
    c = three_ledgers()
    p = persister(
        max_individual_ack_cache_bytes_per_cursor=8000,
        managed_ledger_default_mark_delete_rate_limit=1.0,
    )
    p.created(cursor(0))
    p.acked(c, [1, 2, 3])  # first call: a permit; only ledger 3 stays resident
    assert p.lru.resident() == [3]
    c.ack(3, 0)
    assert p.acked(c, [3]) is None  # no permit: ledger 3 is dirty in memory
    c.ack(1, 0)
    assert p.acked(c, [1]) is not None  # ledger 1 swaps in, dirty ledger 3 must go: written first
    assert p.stats()["ack_swap_ins"] == 1 and p.lru.resident() == [1]


def test_oversize_ledger_entry_fails_the_flush() -> None:
    lid = 3_000_000
    big = FakeState(
        (lid, 16_383), [((lid, 16_384 + 2 * i), (lid, 16_385 + 2 * i)) for i in range(1000)]
    )
    p = persister(max_message_size=1024)
    p.created(FakeState((lid, 16_383)))
    out = p.acked(big, [lid])
    assert out is not None and out.ranges_persisted == 0
    assert p.stats()["ack_oversize_entries"] == 1
    assert p.recover().acked_ranges == ()


def test_properties_come_back_from_the_marker_and_the_metadata_store() -> None:
    state = FakeState((1, 4), [((1, 5), (1, 6))], props={"p": 9}, sub_props={"a": "b"})
    p = persister()
    p.created(state)
    p.flush(state)
    p.crash()
    got = p.recover()
    assert got.mark_delete_properties == {"p": 9}
    assert got.subscription_properties == {"a": "b"}
