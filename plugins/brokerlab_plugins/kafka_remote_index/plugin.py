"""Registration of the Kafka remote index cache family: its simulator, settings and workloads."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib import resources

from brokerlab import Metric
from brokerlab.hookspecs import hookimpl
from brokerlab.records import SettingsRecord, SimulatorRecord, WorkloadRecord
from brokerlab.workloads.scaling import check_scale
from brokerlab_plugins.kafka_remote_index.metrics import METRICS
from brokerlab_plugins.kafka_remote_index.model import SIMULATOR, KafkaWorkload
from brokerlab_plugins.kafka_remote_index.resources import estimate_kafka
from brokerlab_plugins.kafka_remote_index.settings import NAMESPACE, KafkaIndexCacheSettings
from brokerlab_plugins.kafka_remote_index.tiered_storage import run_tiered_storage

__all__ = ["KAFKA_WORKLOADS", "scale_kafka_workload"]

KAFKA_WORKLOADS = ("kafka-leadership-change", "kafka-read-from-replica", "kafka-backfill-tail")


def scale_kafka_workload(workload: KafkaWorkload, factor: float) -> KafkaWorkload:
    """A cheaper run of the same scenario: ``factor`` times the partitions (at least one per
    group), the time axis unchanged, because TTLs and retention, the subject here, are times."""
    check_scale(factor)
    if factor == 1.0:
        return workload
    groups = tuple(
        group.model_copy(update={"count": max(1, round(group.count * factor))})
        for group in workload.partitions
    )
    return workload.model_copy(update={"partitions": groups})


def estimated_cost(workload: KafkaWorkload) -> float:
    """Fetch rounds times partitions: what a run spends its time on."""
    counts = {group.name: group.count for group in workload.partitions}
    return (
        sum(counts[c.partitions] * c.fetch_rate * workload.duration_s for c in workload.consumers)
        + sum(counts.values()) * workload.duration_s / 60
    )


@hookimpl
def brokerlab_simulators() -> Iterator[SimulatorRecord]:
    yield SimulatorRecord(
        name=SIMULATOR,
        description="Kafka tiered storage as one broker sees it: its remote index cache "
        "(size bound, W-TinyLFU or LRU, KAFKA-19970 TTL), retention, leadership moves",
        workload_model=KafkaWorkload,
        run=run_tiered_storage,
        scale=scale_kafka_workload,
        cost=estimated_cost,
        estimate=estimate_kafka,
        timeline=True,  # cached, resident and stale bytes every sim.kafka.sampleIntervalSeconds
    )


@hookimpl
def brokerlab_settings() -> Iterator[SettingsRecord]:
    yield SettingsRecord(
        namespace=NAMESPACE,
        model=KafkaIndexCacheSettings,
        description="Kafka's remote index cache (remote.log.index.file.cache.*) and the "
        "tiered-storage model (sim.kafka.*)",
        prefix="",
        simulator=SIMULATOR,
    )


@hookimpl
def brokerlab_workloads() -> Iterator[WorkloadRecord]:
    folder = resources.files(__package__).joinpath("workloads")
    for name in KAFKA_WORKLOADS:
        text = folder.joinpath(f"{name}.toml").read_text(encoding="utf-8")
        description = str(tomllib.loads(text).get("description", ""))
        yield WorkloadRecord(
            name=name,
            description=description,
            document=text,
            origin=f"builtin:{name}",
            metadata={"simulator": SIMULATOR},
        )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
