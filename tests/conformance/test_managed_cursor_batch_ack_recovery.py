"""Partial batch acknowledgements survive a cursor close and reopen: through the cursor ledger on
every line, and through the metadata-store node on Pulsar's master line (PR #26474)."""

from __future__ import annotations

import pytest
from _ack_state_helpers import State, cursor_on, profile_persister, restart
from _conformance import ROOT, UpstreamClass, ready_profile, reexpresses

import brokerlab
from brokerlab.profiles.loader import Profile
from brokerlab.protocols import BatchAck, Position, RecoveredAckState

UPSTREAM = UpstreamClass(
    name="ManagedCursorBatchAckRecoveryTest",
    area="Ack state",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/"
    "ManagedCursorBatchAckRecoveryTest.java",
    commit="a365c60ca9cbcfb479eb40f1e4e665b68e2feb8b",
    methods=(
        "testPartialBatchAckPersistenceRetainsConfiguredCount",
        "testMetadataStoreRecoveryPreservesAllCursorState",
        "testMetadataStoreRecoveryHandlesMissingOrDisabledBatchIndexAck",
    ),
    line="master",
    profile="pulsar-5.0",
    note="The 4.x line (ready profile pulsar-4.2) writes the batch bitsets into the node but does "
    "not read them back; the tests marked as differences show that line next to master's.",
)

OLDER_LINE = "pulsar-4.2"

ACK_SETS: tuple[tuple[int, ...], ...] = ((2,), (1 << 63, 1), (5, 0, 3))
"""The unacked bitsets of the batches at entries 1, 2 and 3, as 64-bit words (word 0 first): one,
two and three words long; bit ``i`` set means message ``i`` of the batch is still unacked."""


def as_batch(words: tuple[int, ...]) -> BatchAck:
    """A batch of 64 messages per word whose unacked set is ``words``."""
    return BatchAck(64 * len(words), sum(w << (64 * i) for i, w in enumerate(words)))


def recovered_batches(
    profile_name: str | None, batch_count: int, metadata_store: bool
) -> tuple[bool, dict[Position, BatchAck]]:
    """Batches at entries 1..``batch_count`` acked in part, entry 0 acked (the mark-delete moves
    there), a close with at most 2 batch bitsets persisted; the close went to the metadata
    store?, and the batch bitsets a reopen restores."""
    profile = ready_profile(UPSTREAM) if profile_name is None else load(profile_name)
    p = profile_persister(
        profile,
        managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=20 if metadata_store else -1,
        managed_ledger_max_batch_deleted_index_to_persist=2,
    )
    cursor = cursor_on(batch_count + 1)
    p.created(cursor)
    for i in range(1, batch_count + 1):
        batch = as_batch(ACK_SETS[i - 1])
        cursor.ack_batch_partially((1, i), batch.batch_size, batch.unacked)
        p.acked(cursor, [1])
    cursor.ack(1, 0)
    p.acked(cursor, [1])
    assert cursor.md == (1, 0)
    out = p.close(cursor)
    assert out is not None
    restart_state = p.recover()
    cursor.restore(restart_state)
    assert cursor.md == (1, 0)
    return out.to_metadata_store, dict(restart_state.batch_acks)


def load(name: str) -> Profile:
    return brokerlab.load_profile(ROOT / "profiles" / f"{name}.conf", mode="strict")


@pytest.mark.parametrize("batch_count", [1, 2, 3])
@pytest.mark.parametrize("metadata_store", [False, True])
@reexpresses(UPSTREAM, "testPartialBatchAckPersistenceRetainsConfiguredCount")
def test_the_two_lowest_batch_bitsets_survive_a_close(
    batch_count: int, metadata_store: bool
) -> None:
    """With managedLedgerMaxBatchDeletedIndexToPersist=2, a close (to the metadata store when the
    threshold is 20, to the cursor ledger when it is -1) keeps the bitsets of batches 1 and 2
    exactly; batch 3, above the cap, comes back with no bitset (redelivered whole)."""
    to_store, batches = recovered_batches(None, batch_count, metadata_store)
    assert to_store is metadata_store
    kept = min(batch_count, 2)
    assert batches == {(1, i): as_batch(ACK_SETS[i - 1]) for i in range(1, kept + 1)}


@pytest.mark.parametrize("batch_count", [1, 2, 3])
@reexpresses(
    UPSTREAM,
    "testPartialBatchAckPersistenceRetainsConfiguredCount",
    differs="the 4.x line (profile pulsar-4.2) recovers no batch bitset from the metadata-store "
    "node: ManagedCursorImpl.recoverFromMetadataStore read only the ranges before apache/pulsar "
    "PR #26474 (spec ack-state.md §6.1 step 2); the cursor-ledger path restores them on both "
    "lines.",
)
def test_the_older_line_drops_batch_bitsets_closed_to_the_metadata_store(
    batch_count: int,
) -> None:
    """Under pulsar-4.2 the same close to the metadata store restores no batch bitset at all,
    while a close to the cursor ledger keeps the two lowest."""
    to_store, batches = recovered_batches(OLDER_LINE, batch_count, True)
    assert to_store and batches == {}
    to_store, batches = recovered_batches(OLDER_LINE, batch_count, False)
    assert not to_store
    assert batches == {(1, i): as_batch(ACK_SETS[i - 1]) for i in range(1, min(batch_count, 2) + 1)}


def closed_with_everything(profile_name: str | None) -> tuple[State, RecoveredAckState]:
    """Mark-delete at entry 0 with a property, a subscription property, entry 2 acked alone and
    the batch at entry 4 acked in part; closed to the metadata store (threshold 20) and reopened.
    Returns the state written and the state recovered."""
    profile = ready_profile(UPSTREAM) if profile_name is None else load(profile_name)
    p = profile_persister(
        profile, managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=20
    )
    state = State(
        (1, 0),
        [((1, 1), (1, 2))],
        {(1, 4): as_batch(ACK_SETS[1])},
        props={"mark-delete-property": 7},
        sub_props={"cursor-property": "value"},
    )
    p.created(State((1, -1)))
    p.acked(state, [1])
    out = p.close(state)
    assert out is not None and out.to_metadata_store and p.storage.node_holds_state
    return state, p.recover()


@reexpresses(UPSTREAM, "testMetadataStoreRecoveryPreservesAllCursorState")
def test_the_metadata_store_node_restores_the_whole_cursor_state() -> None:
    """Everything comes back from the node: the mark-delete and its property, the subscription
    property, entry 2 acked and entry 1 not, and the batch bitset of entry 4."""
    state, got = closed_with_everything(None)
    cursor = cursor_on(5)
    cursor.restore(got)
    assert cursor.md == (1, 0)
    assert got.mark_delete_properties == {"mark-delete-property": 7}
    assert got.subscription_properties == {"cursor-property": "value"}
    assert not cursor.is_acked(1, 1) and cursor.is_acked(1, 2)
    assert dict(cursor.batch_acks()) == state.batches


@reexpresses(
    UPSTREAM,
    "testMetadataStoreRecoveryPreservesAllCursorState",
    differs="the 4.x line (profile pulsar-4.2) restores everything but the batch bitsets from the "
    "node (spec ack-state.md §6.1 step 2, §12 quirk 3); apache/pulsar PR #26474 added them on "
    "master.",
)
def test_the_older_line_restores_all_but_the_batch_bitsets_from_the_node() -> None:
    """Under pulsar-4.2 the node gives back the mark-delete, both properties and the acked
    entry, but entry 4 comes back with no bitset."""
    _, got = closed_with_everything(OLDER_LINE)
    cursor = cursor_on(5)
    cursor.restore(got)
    assert cursor.md == (1, 0) and cursor.is_acked(1, 2) and not cursor.is_acked(1, 1)
    assert got.mark_delete_properties == {"mark-delete-property": 7}
    assert got.subscription_properties == {"cursor-property": "value"}
    assert not cursor.batch_acks()


@reexpresses(UPSTREAM, "testMetadataStoreRecoveryHandlesMissingOrDisabledBatchIndexAck")
def test_no_batch_bitset_is_restored_when_batch_index_acks_are_off() -> None:
    """With acknowledgmentAtBatchIndexLevelEnabled=false, a partly acked batch leaves no bitset in
    the node a close writes, so a reopen restores none (the batch is redelivered whole). Pulsar's
    test also switches the flag between the close and the reopen; a brokerlab run keeps one
    profile throughout, so only the flag as set at both ends is checked here."""
    p = profile_persister(
        ready_profile(UPSTREAM),
        managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=20,
        acknowledgment_at_batch_index_level_enabled=False,
    )
    state = State((1, -1), batches={(1, 0): as_batch((2,))})
    p.created(State((1, -1)))
    out = p.close(state)
    assert out is not None and out.to_metadata_store
    assert not p.recover().batch_acks


@reexpresses(UPSTREAM, "testMetadataStoreRecoveryHandlesMissingOrDisabledBatchIndexAck")
def test_a_node_without_batch_bitsets_restores_none() -> None:
    """A close with no partly acked batch writes a node with no bitset; a reopen with batch-index
    acks on finds none to restore, and the cursor recovers as it was."""
    p = profile_persister(
        ready_profile(UPSTREAM), managed_ledger_max_unacked_ranges_to_persist_in_metadata_store=20
    )
    cursor = cursor_on(1)
    p.created(cursor)
    again = restart(p, cursor, close=True)
    assert p.storage.node_holds_state
    assert again.md == (1, -1) and not again.batch_acks()
