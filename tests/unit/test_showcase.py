"""The showcase's focused comparisons: each lowers a limit so that it binds in a shortened run,
and it does (planning needs no Spark; the binding check runs the real simulator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerlab.host import PluginHost
from brokerlab.profiles import load_profile
from brokerlab.simulation import load_workload, simulate
from brokerlab.spark.matrix import (
    SHOWCASE_FOCUS,
    MatrixRequest,
    _plan_all,
    showcase_focus,
)

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
