"""When a cursor writes its ack state: Pulsar's mark-delete rate limiter and dirty-cursor flush.

Every acknowledgement tries to persist the whole state. A token-bucket limiter (Guava's bursty
``RateLimiter`` with one second of stored permits, at ``managedLedgerDefaultMarkDeleteRateLimit``
per second) lets the first call through and then about ``rate`` per second; a call without a permit
only marks the cursor dirty, and the periodic flush writes dirty cursors.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MarkDeleteRateLimiter"]

NS: Final = 1_000_000_000


class MarkDeleteRateLimiter:
    """Bursty token bucket; ``rate <= 0`` means no limit (every call passes)."""

    __slots__ = ("_interval_ns", "_max_stored", "_next_free_ns", "_stored")

    def __init__(self, rate_per_second: float, now_ns: int) -> None:
        self._interval_ns = NS / rate_per_second if rate_per_second > 0 else 0.0
        self._max_stored = rate_per_second  # one second's worth of permits
        self._stored = 0.0
        self._next_free_ns = float(now_ns)

    def try_acquire(self, now_ns: int) -> bool:
        if self._interval_ns == 0:
            return True
        if now_ns < self._next_free_ns:
            return False
        stored = self._stored + (now_ns - self._next_free_ns) / self._interval_ns
        self._stored = min(self._max_stored, stored)
        self._next_free_ns = float(now_ns)
        from_stored = min(1.0, self._stored)
        self._stored -= from_stored
        # Stored permits are free; a fresh one pushes the next free time one interval ahead.
        self._next_free_ns += (1.0 - from_stored) * self._interval_ns
        return True
