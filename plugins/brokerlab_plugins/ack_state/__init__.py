"""Cursor ack-state persisters.

* ``unlimited``: the whole state on Pulsar's cadence (rate-limited mark-deletes plus the periodic
  flush of dirty cursors), never truncated: the baseline the limited persisters are measured
  against.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import AckStatePersisterRecord, hookimpl
from brokerlab.protocols import PluginContext
from brokerlab_plugins.ack_state.unlimited import UnlimitedPersister


def _unlimited(context: PluginContext, cursor: str) -> UnlimitedPersister:
    return UnlimitedPersister(
        context.clock, context.settings.managed_ledger_default_mark_delete_rate_limit
    )


@hookimpl
def brokerlab_ack_state_persisters() -> Iterator[AckStatePersisterRecord]:
    yield AckStatePersisterRecord(
        name="unlimited",
        description="Persists the whole ack state on Pulsar's cadence, with no limit",
        factory=_unlimited,
    )
