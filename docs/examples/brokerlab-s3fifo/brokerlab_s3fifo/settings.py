"""The profile keys this plugin owns, read from ``sim.s3fifo.*``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NAMESPACE", "S3FifoSettings"]

NAMESPACE = "s3fifo"
"""The settings namespace: every key below is spelled ``sim.s3fifo.<alias>`` in a profile."""


class S3FifoSettings(BaseModel):
    """Parameters of the S3-FIFO-style eviction predicate (defaults as in the S3-FIFO paper)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    small_queue_ratio: float = Field(
        0.1,
        alias="smallQueueRatio",
        gt=0.0,
        lt=1.0,
        description="Share of the cache size (managedLedgerCacheSizeMB) that entries still in "
        "their probationary phase may hold before a size eviction takes from them first; "
        "S3-FIFO's small FIFO, 10% in the paper.",
    )
    ghost_ratio: float = Field(
        0.9,
        alias="ghostRatio",
        ge=0.0,
        le=10.0,
        description="Bytes of recently evicted probationary entries remembered (positions only, "
        "no data), as a share of the cache size; an entry re-inserted while remembered skips "
        "probation. S3-FIFO's ghost queue, sized like its main FIFO (90%). 0 disables it.",
    )
    move_to_main_threshold: int = Field(
        1,
        alias="moveToMainThreshold",
        ge=1,
        le=3,
        description="Reads an entry needs during its probationary phase to move to the main "
        "phase instead of being evicted (the frequency counter is 2 bits, so at most 3).",
    )
