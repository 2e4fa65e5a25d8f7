"""Cursor ack-state persisters (``sim.ackStatePersister``; ack-state.md §0).

* ``range-count``: Pulsar as merged: count caps on ranges and batch bitsets, the long-array form,
  the metadata-store paths and the range-count dispatch pause (§0.1). The default.
* ``pip299``: the PIP-299 proposal's byte budget for the cursor metadata, with its cached-size
  pause (§0.2).
* ``pip81``: the PIP-81 design: one cursor-ledger entry per dirty user ledger plus a marker, LRU
  swapping under a memory cap (§0.3).
* ``unlimited``: the whole state on Pulsar's cadence, never truncated: the baseline the limited
  persisters are measured against.

Plugin-owned key: ``sim.ackState.pulsarRelease`` (``4.x`` or ``5.0``) picks the range-set rules.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import AckStatePersisterRecord, Metric, SettingsRecord, hookimpl
from brokerlab_plugins.ack_state.metrics import METRICS
from brokerlab_plugins.ack_state.pip81 import new_pip81_persister
from brokerlab_plugins.ack_state.pip299 import new_pip299_persister
from brokerlab_plugins.ack_state.range_count import new_range_count_persister
from brokerlab_plugins.ack_state.settings import NAMESPACE, AckStateSettings
from brokerlab_plugins.ack_state.unlimited import new_unlimited_persister


@hookimpl
def brokerlab_ack_state_persisters() -> Iterator[AckStatePersisterRecord]:
    yield AckStatePersisterRecord(
        name="range-count",
        description="Pulsar as merged: range and batch-bitset count caps, long-array form, "
        "metadata-store paths, range-count dispatch pause",
        factory=new_range_count_persister,
    )
    yield AckStatePersisterRecord(
        name="pip299",
        description="PIP-299 proposal: byte budget for the cursor metadata, cached-size pause",
        factory=new_pip299_persister,
    )
    yield AckStatePersisterRecord(
        name="pip81",
        description="PIP-81 design: one entry per dirty user ledger plus a marker, LRU memory cap",
        factory=new_pip81_persister,
    )
    yield AckStatePersisterRecord(
        name="unlimited",
        description="Persists the whole ack state on Pulsar's cadence, with no limit",
        factory=new_unlimited_persister,
    )


@hookimpl
def brokerlab_settings() -> Iterator[SettingsRecord]:
    yield SettingsRecord(
        namespace=NAMESPACE,
        model=AckStateSettings,
        description="Ack-state persisters: which Pulsar line's range-set rules to follow",
    )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
