"""Keys the PIP-448 plugin owns, read from ``sim.pip448.*``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Pip448Settings"]


class Pip448Settings(BaseModel):
    """Options of the topic-level (PIP-448) delayed-delivery tracker plugin."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    draft_semantics: bool = Field(
        False,
        alias="draftSemantics",
        description="Behave like the draft of PR #24927 (commit 06ea0be7) instead of the semantics "
        "PIP-448 promises: tick-multiple buckets, no removal on read, topic-wide tick and counts "
        "(divergences D1-D5 of delayed-delivery.md §0.3), to show them in the metrics.",
    )
    timer_wheel: bool = Field(
        True,
        alias="timerWheel",
        description="Round timer firings up to the next tick of the shared HashedWheelTimer "
        "(delayed-delivery.md §0.5); false fires at the exact computed time.",
    )
