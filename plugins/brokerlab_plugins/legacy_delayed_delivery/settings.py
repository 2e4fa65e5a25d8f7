"""Keys the delayed-delivery plugins own, read from ``sim.legacyDelayed.*`` and ``sim.pip448.*``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LegacyDelayedSettings"]


class LegacyDelayedSettings(BaseModel):
    """Options of the legacy ``InMemoryDelayedDeliveryTracker`` plugin."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    previous_rounding_rule: bool = Field(
        False,
        alias="previousRoundingRule",
        description="Round buckets down in both modes and use the older timer base class, as the "
        "tracker did before the issue #25996 fix (delayed-delivery.md §3.3, §3.8).",
    )
    timer_wheel: bool = Field(
        True,
        alias="timerWheel",
        description="Round timer firings up to the next tick of the shared HashedWheelTimer "
        "(delayed-delivery.md §0.5); false fires at the exact computed time.",
    )
