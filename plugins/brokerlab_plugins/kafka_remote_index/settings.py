"""The profile keys of the Kafka remote index cache family.

Kafka's own keys keep Kafka's dotted spelling, so a ``server.properties`` loads unchanged; the
choices Kafka does not expose (the size policy, the read-buffer model, the file deletion delay)
live under ``sim.kafka.``. The record registers them with an empty prefix and full keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from brokerlab.records import JavaLong

__all__ = ["NAMESPACE", "KafkaIndexCacheSettings"]

NAMESPACE = "kafka"


class KafkaIndexCacheSettings(BaseModel):
    """What the remote index cache and the tiered-storage model read from a Kafka profile."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    total_size_bytes: JavaLong = Field(
        1_073_741_824,
        alias="remote.log.index.file.cache.total.size.bytes",
        ge=1,
        description="Bound on the summed size of the cached index files (offset + time + "
        "transaction) in bytes; Kafka's default is 1 GiB, validator atLeast(1).",
    )
    ttl_ms: JavaLong = Field(
        900_000,
        alias="remote.log.index.file.cache.ttl.ms",
        description="Expire-after-access TTL of a cached entry (KAFKA-19970, an internal config). "
        "An entry is expired once idle for at least this long; -1 or 0 disables expiry. "
        "900000 is what a Kafka 4.3.0 broker logs; the commit text says 3600000.",
    )
    task_interval_ms: JavaLong = Field(
        30_000,
        alias="remote.log.manager.task.interval.ms",
        ge=1,
        description="Interval of the remote log manager's task; the leader deletes remote "
        "segments past retention on this cadence.",
    )
    policy: Literal["w-tinylfu", "lru"] = Field(
        "w-tinylfu",
        alias="sim.kafka.indexCachePolicy",
        description="Size-eviction policy: w-tinylfu (what Caffeine, and so Kafka, does) or lru "
        "(the KIP text's description).",
    )
    file_delete_delay_ms: JavaLong = Field(
        10_000,
        alias="sim.kafka.fileDeleteDelayMs",
        ge=0,
        description="Delay between renaming an evicted entry's files to .deleted and deleting "
        "them (Kafka's fileDeleteDelayMs); the files stay resident meanwhile.",
    )
    maintenance_every_reads: int = Field(
        16,
        alias="sim.kafka.maintenanceEveryReads",
        ge=0,
        description="Run cache maintenance (expiry, size eviction) after this many read hits, "
        "standing for Caffeine draining a full 16-slot read buffer; 0 runs it only after "
        "writes, resizes and explicit clean-ups.",
    )
    sample_interval_s: float = Field(
        60.0,
        alias="sim.kafka.sampleIntervalSeconds",
        gt=0,
        description="How often the tiered-storage model samples cached, resident and stale bytes "
        "(means, peaks and the run's timeline).",
    )
