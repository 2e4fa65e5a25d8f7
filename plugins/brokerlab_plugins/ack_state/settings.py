"""Plugin-owned profile keys (``sim.ackState.*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from brokerlab.protocols import PluginContext
from brokerlab_plugins.ack_state.truncation import Release

__all__ = ["NAMESPACE", "AckStateSettings", "ack_settings"]

NAMESPACE = "ackState"


class AckStateSettings(BaseModel):
    """Settings of the ack-state persisters that no Pulsar key expresses."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    pulsar_release: Release = Field(
        default="4.x",
        alias="pulsarRelease",
        description="Pulsar line whose range-set code the persisters follow: '4.x' "
        "(OpenLongPairRangeSet: the long-array cap includes the ledger that crosses it; the "
        "long array needs managedLedgerUnackedRangesOpenCacheSetEnabled) or '5.0' "
        "(PositionRangeSet: a ledger goes in only if the total after it fits; the open-cache "
        "flag is gone; recovery from the metadata store restores batch bitsets, as master does "
        "since PR #26474). Defaults still come from the Pulsar keys (ack-state.md §4.3, §6.1, "
        "§9).",
    )


def ack_settings(context: PluginContext) -> AckStateSettings:
    """This plugin's validated settings, or the defaults when the host did not collect them."""
    model = context.plugin_settings.get(NAMESPACE)
    return model if isinstance(model, AckStateSettings) else AckStateSettings()
