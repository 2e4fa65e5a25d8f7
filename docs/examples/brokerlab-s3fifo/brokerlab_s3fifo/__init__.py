"""brokerlab-s3fifo: an S3-FIFO-style eviction predicate for brokerlab's PIP-430 entry cache.

An example third-party plugin. It registers, through the entry-point group ``brokerlab``:

* the eviction predicate ``s3fifo``, which joins the PIP-430 removal queue's chain when a profile
  sets ``sim.evictionPredicates=s3fifo`` (see :mod:`brokerlab_s3fifo.predicate`);
* its settings, the keys ``sim.s3fifo.smallQueueRatio``, ``sim.s3fifo.ghostRatio`` and
  ``sim.s3fifo.moveToMainThreshold`` (see :mod:`brokerlab_s3fifo.settings`).
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import EvictionPredicateRecord, SettingsRecord, hookimpl

from brokerlab_s3fifo.predicate import S3FifoPredicate
from brokerlab_s3fifo.settings import NAMESPACE, S3FifoSettings

__all__ = ["S3FifoPredicate", "S3FifoSettings"]
__version__ = "0.1.0"


@hookimpl
def brokerlab_eviction_predicates() -> Iterator[EvictionPredicateRecord]:
    yield EvictionPredicateRecord(
        name="s3fifo",
        description="S3-FIFO as queue decisions: evict unread probationary entries first, "
        "remember them in a ghost, give frequently read entries more rounds",
        factory=S3FifoPredicate.from_context,
    )


@hookimpl
def brokerlab_settings() -> Iterator[SettingsRecord]:
    yield SettingsRecord(
        namespace=NAMESPACE,
        model=S3FifoSettings,
        description="S3-FIFO eviction predicate (brokerlab-s3fifo)",
    )
