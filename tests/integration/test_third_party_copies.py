"""A third-party copy of each built-in eviction predicate and cursor container gives the built-in's
results on every metric (#26 item 2), with the optional protocols the built-ins implement and
without them (the plain protocol only).

The copies are the plugin ``brokerlab_copies`` (``tests/support``), registered as any outside
plugin is (``-p``). Pulsar's own switches select the built-in predicates by name, so a run of the
copies swaps them into the same places of the chain the profile resolved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from brokerlab_copies import COPIES, PLAIN

from brokerlab import PluginHost, Profile, load_profile
from brokerlab.host import PluginChoices
from brokerlab.simulation import load_workload, run_simulation
from brokerlab.workloads import WorkloadSpec
from brokerlab.workloads.scaling import scale_workload

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
HOST = PluginHost(modules=["brokerlab_copies"])

# Both predicates and the sorted list; expected reads alone; recently accessed with the heap
# (ordered by mark-delete positions, which keeps read entries cached until they expire).
HEAP = ("cacheEvictionByExpectedReadCount=false", "cacheEvictionByMarkDeletedPosition=true")
CONFIGS = {"pulsar-4.2": (), "pulsar-5.0": (), "pulsar-4.2-heap": HEAP}
# Built-in workloads where both requeue reasons, restarts, replays and cursor moves occur.
WORKLOADS = ("catch-up-fanout", "key-shared-slow-consumer", "ack-holes-restart", "reconnect-storm")
SCALE = 0.3


def swapped(choices: PluginChoices, predicates: Mapping[str, str]) -> PluginChoices:
    """``choices`` with each built-in predicate and the container replaced by its copy."""
    chain = tuple(
        HOST.select("eviction_predicate", predicates[p.record.name])
        for p in choices.eviction_predicates
    )
    container = HOST.select("cursor_container", f"copy-{choices.cursor_container.record.name}")
    return dataclasses.replace(choices, eviction_predicates=chain, cursor_container=container)


def _profile(config: str) -> Profile:
    base = PROFILES / f"{config.removesuffix('-heap')}.conf"
    return load_profile(base, list(CONFIGS[config]), host=HOST)


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("workload", ["trace-zipf", *WORKLOADS])
def test_copies_give_the_built_ins_metrics(config: str, workload: str) -> None:
    profile = _profile(config)
    choices = HOST.resolve(profile)
    assert choices.eviction_predicates, "the profile must consult the predicates"
    spec = load_workload(HOST, workload)
    if isinstance(spec, WorkloadSpec):
        spec = scale_workload(spec, SCALE)
    simulator = HOST.simulator(spec.simulator)

    def metrics(chosen: PluginChoices) -> Mapping[str, float]:
        return run_simulation(profile, chosen, spec, 1, simulator=simulator).metrics

    built_in = metrics(choices)
    if isinstance(spec, WorkloadSpec):  # the runs exercise what the copies replace
        assert built_in["cache_hits"] > 0
        assert built_in["cache_requeues_accessed"] + built_in["cache_requeues_expected_reads"] > 0
    assert metrics(swapped(choices, COPIES)) == built_in
    assert metrics(swapped(choices, PLAIN)) == built_in


@pytest.mark.slow
def test_the_comparison_sees_a_copy_that_differs() -> None:
    """The control: the same two copied rules in the other order decide the same evictions, but
    the requeues both would make count for expected reads; the comparison must see it."""
    profile = _profile("pulsar-4.2")
    choices = swapped(HOST.resolve(profile), COPIES)
    reordered = dataclasses.replace(choices, eviction_predicates=choices.eviction_predicates[::-1])
    spec = scale_workload(load_workload(HOST, "catch-up-fanout"), SCALE)  # type: ignore[arg-type]
    simulator = HOST.simulator(spec.simulator)
    first, second = (
        run_simulation(profile, c, spec, 1, simulator=simulator).metrics
        for c in (choices, reordered)
    )
    assert first != second
    assert first["cache_requeues_accessed"] > second["cache_requeues_accessed"]


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["wrapped-pip430", "wrapped-pip430-single"])
def test_a_wrapped_cache_replays_a_trace_as_the_built_in_does(cache: str) -> None:
    """The trace replay takes the one-entry path of any cache that has it, or the general one:
    the same hits, peak and counters."""
    profile = load_profile(PROFILES / "pulsar-4.2.conf", None, host=HOST)
    choices = HOST.resolve(profile)
    spec = load_workload(HOST, "trace-zipf")
    simulator = HOST.simulator(spec.simulator)
    wrapped = dataclasses.replace(choices, entry_cache=HOST.select("entry_cache", cache))
    built_in = run_simulation(profile, choices, spec, 0, simulator=simulator).metrics
    assert run_simulation(profile, wrapped, spec, 0, simulator=simulator).metrics == built_in


@pytest.mark.slow
def test_the_copies_load_with_p_and_run_from_the_cli() -> None:
    """``brokerlab -p brokerlab_copies``: selected by the profile alone, a copied container and a
    differently named copy of recently-accessed report what the built-ins do, requeues included."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            str(ROOT / p) for p in ("framework", "plugins", "tests/support")
        ),
    }
    workload = str(ROOT / "plugins/brokerlab_plugins/workloads/key-shared-slow-consumer.toml")

    def run(*settings: str) -> dict[str, float]:
        args = [sys.executable, "-m", "brokerlab", "-p", "brokerlab_copies", "run", "--json"]
        args += ["--profile", str(PROFILES / "pulsar-4.2.conf"), "--workload", workload]
        for setting in (*HEAP, *settings):
            args += ["--set", setting]
        done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["metrics"]  # type: ignore[no-any-return]

    built_in = run()
    copied = run(
        "sim.cursorContainer=copy-heap",
        "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed=false",
        "sim.evictionPredicates=copy-recently-accessed",
    )
    assert built_in["cache_requeues_accessed"] > 0
    assert copied == built_in
