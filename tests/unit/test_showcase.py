"""The showcase's focused comparisons: each lowers a limit so that it binds in a shortened run,
and it does (planning needs no Spark; the binding check runs the real simulator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.profiles import load_profile
from brokerlab.simulation import load_workload, simulate
from brokerlab.spark.matrix import (
    SHOWCASE_COST_S,
    SHOWCASE_FOCUS,
    MatrixRequest,
    _plan_all,
    showcase_focus,
)
from brokerlab.workloads.scaling import scale_workload, smallest_scale

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
SCALE = 0.2  # the showcase's scale on the 2-core reference machine

# What each focused profile's limit does when it binds (the metrics verdicts.py checks).
BINDS = {
    "ack-range-limit.conf": "ack_ranges_dropped",
    "pip299-ack-bytes.conf": "ack_bytes_dropped",
    "pip81-split-acks.conf": "ack_swap_outs",
}


def test_every_focus_is_planned_beside_the_showcase_with_its_values_in_its_label() -> None:
    focus = showcase_focus(PROFILES, seeds=1, scale=SCALE)
    assert len(focus) == len(SHOWCASE_FOCUS) == len(BINDS)
    main = MatrixRequest(
        profiles=[str(PROFILES / "ack-range-limit.conf")],
        workloads=["ack-holes-restart"],
        seeds=1,
        scale=SCALE,
        also=focus,
    )
    cells = _plan_all(main, PluginHost())
    labels = {(c.profile, c.overrides) for c in cells}
    assert ("ack-range-limit", "{}") in labels  # Pulsar's default limit, as the profile says
    assert (
        "ack-range-limit",
        json.dumps({"managedLedgerMaxUnackedRangesToPersist": "100"}),
    ) in labels
    assert len(cells) == 1 + len(SHOWCASE_FOCUS)


@pytest.mark.slow
@pytest.mark.parametrize("focus", SHOWCASE_FOCUS, ids=lambda f: f.profile)
def test_each_lowered_limit_binds_at_the_showcase_scale(focus: object) -> None:
    from brokerlab.spark.matrix import ShowcaseFocus

    assert isinstance(focus, ShowcaseFocus)
    host = PluginHost()
    profile = load_profile(
        PROFILES / focus.profile, focus.sets, plugin_settings=host.plugin_settings()
    )
    [name] = focus.workloads
    spec = load_workload(host, name)
    spec = host.simulator(spec.simulator).scale(spec, SCALE)
    result = simulate(profile, spec, 0, host=host)
    assert result.metrics[BINDS[focus.profile]] > 0, focus.why


def _builtin_workloads() -> list[str]:
    return sorted(reg.record.name for reg in PluginHost().records("workload"))


@pytest.mark.parametrize("workload", _builtin_workloads())
def test_every_builtin_workload_takes_every_scale_the_showcase_may_pick(workload: str) -> None:
    # The showcase picks one scale for all its cells: one workload that cannot be shortened so
    # far would fail its cells on a slow machine (rolling-restart did, at 0.02).
    host = PluginHost()
    document = load_workload(host, workload)
    record = host.simulator(document.simulator)
    for scale in SHOWCASE_COST_S:
        record.scale(document, scale)  # raises if the shortened workload is invalid


def test_a_scale_that_moves_an_event_into_an_outage_names_the_smallest_that_works() -> None:
    # rolling-restart unloads a broker at 100, 140 and 180 s, each with a 2 s outage that a
    # shortened run keeps: below 2 / 40 = 0.05 the second unload falls in the first's outage.
    spec = load_workload(PluginHost(), "rolling-restart")
    assert smallest_scale(spec) == 0.05
    scale_workload(spec, 0.05)
    with pytest.raises(WorkloadError) as refused:
        scale_workload(spec, 0.049)
    message = str(refused.value)
    assert message.startswith("key '--scale': value '0.049' shortens workload 'rolling-restart'")
    assert "falls in the outage of the one at 4.9 s" in message
    assert message.endswith("; allowed: at least 0.05 for this workload")
    assert smallest_scale(load_workload(PluginHost(), "tailing")) == 0.0  # no events
