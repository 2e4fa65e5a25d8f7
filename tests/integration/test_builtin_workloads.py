"""Every built-in workload runs through ``brokerlab run`` with the baseline profile, as a user
would start it, with zero invariant violations and message accounting that adds up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from brokerlab.metrics import invariants
from brokerlab_plugins.workloads import BUILTIN_WORKLOADS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("workload", BUILTIN_WORKLOADS)
def test_builtin_runs_clean(workload: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "brokerlab",
            "run",
            "--profile",
            str(ROOT / "profiles" / "baseline.conf"),
            "--workload",
            workload,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)["metrics"]
    for name in invariants():
        assert metrics[name] == 0, f"{workload}: {name} = {metrics[name]}"
    assert metrics["delivered"] > 0
    # Each message is either acknowledged or still waiting, per subscription.
    assert metrics["acked"] <= metrics["delivered"]
