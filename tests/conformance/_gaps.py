"""Differences from the brokers found outside the re-expressed tests, each with its evidence.

Reviews of the settings and the read path against Pulsar's and Kafka's code turn these up; no
upstream test covers them, so they are listed here (and on docs/fidelity.md) until they are
fixed or a test re-expresses them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gap:
    """A known difference: what Pulsar or Kafka does, what brokerlab does, and when it matters."""

    area: str
    upstream: str
    brokerlab: str
    matters: str


GAPS: tuple[Gap, ...] = (
    Gap(
        "Ack state",
        "ManagedCursorImpl.periodicRollover also rolls a cursor ledger over from a periodic task "
        "when managedLedgerCursorRolloverTimeInSeconds has passed, without a new write.",
        "A cursor ledger rolls over only on a write (entry count or age checked on append).",
        "Only for a cursor idle past the rollover age (4 h by default): its roll (a creation "
        "entry and a node write) happens at its next write instead of when the age passes.",
    ),
    Gap(
        "Cache eviction",
        "Whether cacheEvictionByMarkDeletedPosition=true still moves the PIP-430 cursor "
        "container by mark-delete position when cacheEvictionByExpectedReadCount=true is not "
        "settled from the code (the PIP-430 ManagedLedgerImpl is not in the reviewed sources).",
        "The broker orders the container by mark-delete position whenever the flag is set.",
        "Only with both flags on; no ready profile sets cacheEvictionByMarkDeletedPosition.",
    ),
)
