"""Bucketing of deliver-at times and the cutoffs that decide what is due (spec §3.3, §2).

Shared by the legacy tracker and the PIP-448 plugin: PIP-448 keeps the legacy bucket function so
that every subscription sees exactly the delivery times a legacy tracker would give it (§0.2).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LONG_MAX", "Bucketing", "add_cutoff", "precision_bits"]

LONG_MAX = (1 << 63) - 1


def precision_bits(tick_ms: int) -> int:
    """``floor(log2(tick))`` for tick >= 1, else 0: the bucket precision is ``2**bits`` ms."""
    return tick_ms.bit_length() - 1 if tick_ms >= 1 else 0


def add_cutoff(now_ms: int, tick_ms: int, strict: bool) -> int:
    """An ``addMessage`` with ``deliverAt <= cutoff`` is refused (dispatched at once)."""
    return now_ms if strict else now_ms + tick_ms


@dataclass(frozen=True)
class Bucketing:
    """The bucket function of one tracker, fixed at construction (a tick reset never changes it).

    ``previous_rule`` reproduces the older tracker that rounded down in both modes and compared
    bucket keys with the plain cutoff (the cause of issue #25996; §3.3).
    """

    bits: int
    strict: bool
    previous_rule: bool = False

    @classmethod
    def for_tick(cls, tick_ms: int, strict: bool, previous_rule: bool = False) -> Bucketing:
        return cls(precision_bits(tick_ms), strict, previous_rule)

    @property
    def precision(self) -> int:
        return 1 << self.bits

    def bucket(self, deliver_at_ms: int) -> int:
        """The bucket key: rounded up in strict mode (never early), else rounded down."""
        bits = self.bits
        if self.strict and not self.previous_rule:
            # Round up so a strict bucket is due only once every deliverAt inside it has passed.
            rounded = ((deliver_at_ms + (1 << bits) - 1) >> bits) << bits
            return min(rounded, LONG_MAX)
        return (deliver_at_ms >> bits) << bits

    def bucket_cutoff(self, now_ms: int, tick_ms: int) -> int:
        """A bucket ``k`` is due when ``k <= bucket_cutoff`` (``tick_ms`` is the current tick)."""
        if self.strict:
            return now_ms
        if self.previous_rule:
            return now_ms + tick_ms
        # k <= now + tick - precision + 1  <=>  every deliverAt in [k, k + precision) <= now + tick.
        return now_ms + tick_ms - self.precision + 1
