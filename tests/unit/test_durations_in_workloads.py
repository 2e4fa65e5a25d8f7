"""Durations written in a workload file reach the duration model as the file says."""

from __future__ import annotations

import textwrap

from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab.workloads.scaling import scale_workload


def test_an_empirical_table_loads_from_a_workload_file() -> None:
    """Its arrays reach the duration model as tuples (validated strictly, a list is none)."""
    toml = textwrap.dedent(
        """
        name = "empirical"
        duration_s = 1
        [storage]
        read_latency_ms = { kind = "empirical", values = [0.5, 1, 4], weights = [6, 3, 1] }
        [[topics]]
        """
    )
    spec = parse_workload(toml, "empirical.toml")
    assert isinstance(spec, WorkloadSpec)
    latency = spec.storage.read_latency_ms
    # (0.5 x 6 + 1 x 3 + 4 x 1) / 10
    assert latency.values == (0.5, 1, 4) and latency.mean_ms == 1.0


def test_a_workload_with_durations_survives_a_dump_and_a_scaled_copy() -> None:
    """A dump validates again (a matrix cell's workload on the executor, ``--scale``): it holds
    only the keys each duration's kind reads."""
    toml = textwrap.dedent(
        """
        name = "durations"
        duration_s = 10
        [storage]
        read_latency_ms = { kind = "lognormal", median = 2, sigma = 0.4 }
        write_latency_ms = 3
        [[topics]]
        [[topics.subscriptions]]
        [[topics.subscriptions.consumers]]
        service_time_ms = { kind = "exponential", mean = 1.5 }
        """
    )
    spec = parse_workload(toml, "durations.toml")
    assert isinstance(spec, WorkloadSpec)
    again = WorkloadSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    assert spec.model_dump()["storage"]["write_latency_ms"] == {"kind": "fixed", "value": 3.0}
    scaled = scale_workload(spec, 0.5)
    assert scaled.duration_s == 5
    consumer = scaled.topics[0].subscriptions[0].consumers[0]
    assert consumer.service_time_ms == spec.topics[0].subscriptions[0].consumers[0].service_time_ms
