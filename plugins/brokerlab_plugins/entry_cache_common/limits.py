"""The size and time limits of a cache manager, resolved once from the broker settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["EVICTION_TRIGGER_FRACTION", "CacheLimits"]

EVICTION_TRIGGER_FRACTION: Final = 0.98
"""Pulsar's hard-coded ``evictionTriggerThresholdPercent`` (spec §1.5, §6)."""

_MS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class CacheLimits:
    """``maxSize``, the 0.98 trigger, the watermark target and the TTL, in bytes and nanoseconds.

    The ``int()`` truncations reproduce Java's ``(long)(maxSize * fraction)`` casts (spec §1.5).
    """

    max_size: int
    trigger: int
    watermark: int
    ttl_ns: int

    @classmethod
    def of(cls, max_size: int, watermark: float, ttl_ms: int) -> CacheLimits:
        return cls(
            max_size=max_size,
            trigger=int(max_size * EVICTION_TRIGGER_FRACTION),
            watermark=int(max_size * watermark),
            ttl_ns=ttl_ms * _MS,
        )

    @classmethod
    def from_settings(cls, settings: Any) -> CacheLimits:
        return cls.of(
            settings.cache_size_bytes,
            settings.managed_ledger_cache_eviction_watermark,
            settings.managed_ledger_cache_eviction_time_threshold_millis,
        )
