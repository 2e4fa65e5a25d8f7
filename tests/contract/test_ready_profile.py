"""What every ready profile promises: it loads strictly, its plugins resolve, and it runs.

Run under one profile with ``BROKERLAB_PROFILE=profiles/x.conf`` (as tox's profile envs do), or
over every profile in ``profiles/`` without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brokerlab import load_profile, simulate
from brokerlab.host import PluginHost
from brokerlab.metrics import invariants
from brokerlab.simulation import load_workload, profile_simulators
from brokerlab.testing import CONTRACT_WORKLOAD
from brokerlab_plugins.kafka_remote_index.plugin import scale_kafka_workload

ROOT = Path(__file__).resolve().parents[2]
READY = sorted(p for p in (ROOT / "profiles").glob("*.conf") if p.name != "reference.conf")
CHOSEN = [Path(os.environ["BROKERLAB_PROFILE"])] if os.environ.get("BROKERLAB_PROFILE") else READY


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


@pytest.mark.parametrize("path", CHOSEN, ids=lambda p: p.name)
def test_profile_loads_strictly_and_resolves(path: Path, host: PluginHost) -> None:
    profile = load_profile(path, host=host)
    assert profile.mode == "strict", "a ready profile must set a sim. key and load strictly"
    host.resolve(profile)


@pytest.mark.parametrize("path", CHOSEN, ids=lambda p: p.name)
def test_profile_runs_deterministically_with_zero_invariant_violations(
    path: Path, host: PluginHost
) -> None:
    profile = load_profile(path, host=host)
    if "kafka-tiered-storage" in profile_simulators(profile, host):
        # A Kafka profile runs a Kafka workload, with a tenth of its partitions.
        workload = scale_kafka_workload(load_workload(host, "kafka-leadership-change"), 0.1)
        first = simulate(profile, workload, 11, host=host)
        assert simulate(profile, workload, 11, host=host).to_json() == first.to_json()
        assert first.metrics["index_lookups"] > 0
        return
    first = simulate(profile, CONTRACT_WORKLOAD, 11, host=host)
    again = simulate(profile, CONTRACT_WORKLOAD, 11, host=host)
    assert first.to_json() == again.to_json()
    assert first.metrics["delivered"] > 0
    if path.parent.name == "diagnostics":
        # A diagnostic profile reproduces a defect on purpose: the checks must see it.
        shown = ("delivered_after_ack", "delayed_early_deliveries", "delayed_duplicate_deliveries")
        assert any(first.metrics[name] > 0 for name in shown)
        return
    for name in invariants():
        assert first.metrics[name] == 0, f"{path.name}: invariant {name} violated"
