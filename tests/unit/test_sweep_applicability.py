"""A ``--set`` key a profile does not read is not swept for it: the profile runs once, and the
matrix records why (planning only: no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerlab.errors import ProfileError
from brokerlab.host import PluginHost
from brokerlab.spark.matrix import MatrixRequest, plan, sweep_keys_not_applied
from brokerlab.spark.results import read_not_applied, write_profile_order

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
PULSAR, PIP448, KAFKA = (
    str(PROFILES / f"{name}.conf") for name in ("pulsar-4.2", "pip448-topic-tracker", "kafka-ttl")
)


def cells_by_profile(request: MatrixRequest) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for cell in plan(request, PluginHost()):
        found.setdefault(cell.profile, []).append(json.loads(cell.overrides))
    return found


def test_a_plugin_key_applies_only_to_profiles_that_select_its_plugin() -> None:
    request = MatrixRequest(
        profiles=[PULSAR, PIP448],
        sweeps=["sim.pip448.timerWheel=true,false"],
        workloads=["delayed-mixed"],
        seeds=1,
    )
    cells = cells_by_profile(request)
    assert cells["pip448-topic-tracker"] == [
        {"sim.pip448.timerWheel": "true"},
        {"sim.pip448.timerWheel": "false"},
    ]
    assert cells["pulsar-4.2"] == [{}]  # once, not twice with identical results
    assert sweep_keys_not_applied(request, PluginHost()) == {
        "pulsar-4.2": {
            "sim.pip448.timerWheel": "sim.pip448.timerWheel is a setting of plugin "
            "pip448_delayed_delivery (topic-level), which pulsar-4.2 does not select"
        }
    }


def test_keys_of_another_simulator_do_not_apply_and_the_others_still_sweep() -> None:
    request = MatrixRequest(
        profiles=[PULSAR, KAFKA],
        sweeps=[
            "remote.log.index.file.cache.ttl.ms=1000,900000",
            "managedLedgerCacheSizeMB=64,256",
        ],
        workloads=["tailing", "kafka-backfill-tail"],
        seeds=1,
    )
    cells = cells_by_profile(request)
    assert cells["pulsar-4.2"] == [
        {"managedLedgerCacheSizeMB": "64"},
        {"managedLedgerCacheSizeMB": "256"},
    ]
    assert cells["kafka-ttl"] == [
        {"remote.log.index.file.cache.ttl.ms": "1000"},
        {"remote.log.index.file.cache.ttl.ms": "900000"},
    ]
    skipped = sweep_keys_not_applied(request, PluginHost())
    assert skipped["pulsar-4.2"] == {
        "remote.log.index.file.cache.ttl.ms": "remote.log.index.file.cache.ttl.ms is read by the "
        "kafka-tiered-storage simulator; pulsar-4.2 runs pulsar workloads only"
    }
    assert list(skipped["kafka-ttl"]) == ["managedLedgerCacheSizeMB"]


def test_a_swept_selector_decides_where_a_plugin_key_applies() -> None:
    # The tracker is swept too: sim.pip448.* applies in the cells that choose PIP-448's.
    tracker, wheel = "delayedDeliveryTrackerFactoryClassName", "sim.pip448.timerWheel"
    request = MatrixRequest(
        profiles=[PULSAR],
        sweeps=[f"{tracker}=in-memory,topic-level", f"{wheel}=true,false"],
        workloads=["delayed-mixed"],
        seeds=1,
    )
    assert cells_by_profile(request)["pulsar-4.2"] == [
        {tracker: "in-memory"},
        {tracker: "topic-level", wheel: "true"},
        {tracker: "topic-level", wheel: "false"},
    ]
    assert sweep_keys_not_applied(request, PluginHost()) == {}  # it applied to some cells


def test_a_value_is_validated_even_where_its_key_does_not_apply() -> None:
    request = MatrixRequest(
        profiles=[PULSAR], sweeps=["sim.pip448.timerWheel=maybe"], workloads=["tailing"]
    )
    with pytest.raises(ProfileError, match="timerWheel"):
        plan(request, PluginHost())


def test_the_matrix_file_keeps_what_did_not_apply(tmp_path: Path) -> None:
    write_profile_order(tmp_path, ["a", "b"], {"a": {"k": "why"}, "b": {}})
    assert read_not_applied(tmp_path) == {"a": {"k": "why"}}
    write_profile_order(tmp_path, ["a"])
    assert read_not_applied(tmp_path) == {}
