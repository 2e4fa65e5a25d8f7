"""Workloads: the declarative format (:class:`WorkloadSpec`) and loading it from TOML with errors
that name file, line and key. The format is documented in ``docs/workloads.md``."""

from brokerlab.workloads.loader import (
    format_key,
    load_workload_file,
    parse_workload,
    resolve_workload,
    toml_key_lines,
)
from brokerlab.workloads.model import (
    ClusterSpec,
    ConsumerSpec,
    DelaySpec,
    DurationSpec,
    EventSpec,
    KeySpec,
    SizeSpec,
    StorageSpec,
    SubscriptionSpec,
    TopicSpec,
    WorkloadDocument,
    WorkloadSpec,
)

__all__ = [
    "ClusterSpec",
    "ConsumerSpec",
    "DelaySpec",
    "DurationSpec",
    "EventSpec",
    "KeySpec",
    "SizeSpec",
    "StorageSpec",
    "SubscriptionSpec",
    "TopicSpec",
    "WorkloadDocument",
    "WorkloadSpec",
    "format_key",
    "load_workload_file",
    "parse_workload",
    "resolve_workload",
    "toml_key_lines",
]
