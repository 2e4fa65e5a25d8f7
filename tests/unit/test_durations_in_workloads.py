"""Durations written in a workload file reach the duration model as the file says."""

from __future__ import annotations

import textwrap

from brokerlab.workloads import WorkloadSpec, parse_workload


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
