"""A run keeps the garbage collector off the objects it started with, and only for its duration."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerlab import load_profile, simulate
from brokerlab.gc_policy import collector_paused, new_objects_only
from brokerlab.host import PluginHost

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_objects_alive_at_the_start_are_frozen_until_the_end() -> None:
    assert gc.get_freeze_count() == 0
    with new_objects_only():
        frozen = gc.get_freeze_count()
        assert frozen > 1000  # at least the imported modules' objects
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle made inside is still collected
        del a, b
        assert gc.collect() >= 2
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_the_heap_is_unfrozen_when_the_block_raises() -> None:
    with pytest.raises(ValueError, match="x"), new_objects_only():
        raise ValueError("x")
    assert gc.get_freeze_count() == 0


def test_an_earlier_freeze_or_a_disabled_collector_is_left_alone() -> None:
    gc.freeze()
    outer = gc.get_freeze_count()
    with new_objects_only():
        assert gc.get_freeze_count() == outer
    assert gc.get_freeze_count() == outer
    gc.unfreeze()
    gc.disable()
    with new_objects_only():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_a_simulation_freezes_during_its_run_only() -> None:
    host = PluginHost()
    profile = load_profile(ROOT / "profiles" / "baseline.conf", host=host)
    seen: list[int] = []
    result = simulate(
        profile, "tailing", 0, host=host, progress=lambda _: seen.append(gc.get_freeze_count())
    )
    assert result.metrics["delivered"] > 0
    assert seen and min(seen) > 1000
    assert gc.get_freeze_count() == 0


def test_keep_leaves_a_model_built_inside_alone_and_new_cycles_are_still_collected() -> None:
    with new_objects_only() as keep:
        before = gc.get_freeze_count()
        model = [_Node() for _ in range(1000)]
        with collector_paused():
            assert not gc.isenabled()
            more = [_Node() for _ in range(1000)]
            keep()
        assert gc.isenabled()
        # Both lists and their 2,000 nodes are now frozen: no collection walks them.
        assert gc.get_freeze_count() >= before + 2002
        assert gc.get_count()[0] < 10
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        del a, b
        assert gc.collect() >= 2
        del model, more
    assert gc.get_freeze_count() == 0


def test_collector_paused_restores_the_collector_when_the_block_raises() -> None:
    with pytest.raises(ValueError, match="y"), collector_paused():
        raise ValueError("y")
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # a collector that was off stays off


def test_keep_does_nothing_when_the_block_left_the_collector_alone() -> None:
    gc.freeze()
    outer = gc.get_freeze_count()
    with new_objects_only() as keep:
        _ = [_Node() for _ in range(100)]
        keep()
        assert gc.get_freeze_count() == outer
