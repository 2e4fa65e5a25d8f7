"""What every contract suite shares: plugin contexts built like the simulation's, record lookup,
hypothesis settings and the end-to-end simulation check."""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from brokerlab.broker.events import EventLoop
from brokerlab.host import PluginHost
from brokerlab.metrics import METRICS, invariants
from brokerlab.protocols import PluginContext
from brokerlab.simulation import plugin_context
from brokerlab.workloads import parse_workload

if TYPE_CHECKING:
    from brokerlab.profiles import Profile
    from brokerlab.simulation import Result
    from brokerlab.testing._isolated import FreshRun
    from brokerlab.workloads import WorkloadDocument

__all__ = [
    "CONTRACT_WORKLOAD",
    "MS",
    "Simulate",
    "build_context",
    "check_simulation",
    "check_stats",
    "examples",
    "is_diagnostic",
    "record_names",
    "run_machine",
]

MS = 1_000_000
"""Nanoseconds per millisecond (the event loop's monotonic clock counts nanoseconds)."""


class Simulate(Protocol):
    """The ``simulate`` fixture: ``simulate(workload, *, seed=None, overrides=None) -> Result``,
    and the same run in a fresh interpreter with another ``PYTHONHASHSEED``."""

    def __call__(
        self,
        workload: WorkloadDocument | str | Path,
        *,
        seed: int | None = None,
        overrides: Mapping[str, str] | Iterable[str] | None = None,
    ) -> Result: ...

    def in_fresh_interpreter(
        self,
        workload: WorkloadDocument | str | Path,
        *,
        seed: int | None = None,
        overrides: Mapping[str, str] | Iterable[str] | None = None,
    ) -> FreshRun: ...


CONTRACT_WORKLOAD = parse_workload(
    textwrap.dedent(
        """
        name = "contract-small"
        duration_s = 3
        drain_s = 3
        [[topics]]
        count = 6
        rate = 50
        backlog = 35
        keys = { count = 20, skew = 0.5 }
        delays = [{ fraction = 0.2, min_ms = 100, max_ms = 1500 }]
        [[topics.subscriptions]]
        name = "shared"
        type = "Shared"
        initial_position = "earliest"
        [[topics.subscriptions.consumers]]
        count = 2
        rate = 250
        ack_hole_probability = 0.01
        [[topics.subscriptions]]
        name = "keyed"
        type = "Key_Shared"
        [[topics.subscriptions.consumers]]
        count = 2
        rate = 400
        [[events]]
        at_s = 2
        kind = "restart"
        """
    ),
    "brokerlab.testing:contract-small",
)
"""A few seconds of six topics with a backlog, delayed messages, ack holes, a Shared and a
Key_Shared subscription and a broker restart: every extension point is exercised. Six topics,
not one: a plugin whose choices hang on ``hash(topic)`` gives the same result in a fresh
interpreter with another ``PYTHONHASHSEED`` only if all six hashes happen to fall the same way."""


def record_names(point: str, host: PluginHost | None = None) -> list[str]:
    """Names of every record of ``point`` (``"entry_cache"``, ``"eviction_predicate"``,
    ``"cursor_container"``, ``"delayed_delivery"``, ``"ack_state_persister"``), sorted.

    Use it to parametrise a suite over every installed record:
    ``@pytest.fixture(params=record_names("entry_cache"))``.
    """
    return [reg.record.name for reg in (host or PluginHost()).records(point)]


def is_diagnostic(profile: Profile) -> bool:
    """Whether ``profile`` is a diagnostic profile (in a ``diagnostics`` folder): one that
    reproduces a known defect on purpose, so contracts are expected to break under it."""
    return profile.path is not None and Path(profile.path).parent.name == "diagnostics"


def build_context(
    host: PluginHost, profile: Profile, seed: int = 0, *, predicates: bool = False
) -> tuple[PluginContext, EventLoop]:
    """A :class:`PluginContext` for ``profile`` on a fresh event loop, built as ``simulate`` does.

    The rng is the simulation's ``plugins`` stream for ``seed``; ``new_cursor_container`` is the
    container the profile selects. With ``predicates``, the eviction-predicate chain the profile
    selects is built and attached (the profile's entry cache must consult predicates).
    """
    loop = EventLoop()
    choices = host.resolve(profile)
    if not predicates:
        choices = replace(choices, eviction_predicates=())
    return plugin_context(profile, choices, loop, seed), loop


def examples(count: int, **more: Any) -> settings:
    """Hypothesis settings of the suites: ``count`` examples, no deadline (the machine may be
    slow and shared), no health check that only complains about speed."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        **more,
    )


def run_machine(factory: Callable[[], RuleBasedStateMachine], config: settings) -> None:
    """Run the state machines ``factory`` builds as one hypothesis test (hypothesis takes any
    factory; its type hints only name machine classes)."""
    run_state_machine_as_test(cast("type[RuleBasedStateMachine]", factory), settings=config)


def check_stats(stats: Mapping[str, float], what: str) -> None:
    """Every reported name is a declared metric and every value a finite number >= 0."""
    for name, value in stats.items():
        assert name in METRICS, (
            f"{what} reports the metric {name!r}, which no installed plugin declares "
            "(declare it with the brokerlab_metrics hook)"
        )
        assert isinstance(value, int | float), f"{what}: {name} = {value!r} is not a number"
        assert math.isfinite(value) and value >= 0, f"{what}: {name} = {value!r}"


def check_simulation(simulate: Simulate, overrides: Mapping[str, str], seed: int = 7) -> None:
    """The broker runs :data:`CONTRACT_WORKLOAD` with ``overrides`` twice with identical results,
    delivers messages and keeps every invariant metric at zero.

    The second run is in a fresh interpreter with another ``PYTHONHASHSEED``: a plugin whose
    behaviour hangs on ``hash()`` of a string, ``id()`` or set order fails here, naming the
    metrics that differ, instead of giving another result at each ``brokerlab run``.
    """
    first = simulate(CONTRACT_WORKLOAD, seed=seed, overrides=overrides)
    again = simulate.in_fresh_interpreter(CONTRACT_WORKLOAD, seed=seed, overrides=overrides)
    problem = _difference(json.loads(first.to_json()), again.document)
    assert problem is None, (
        f"the same seed gave different results in a fresh interpreter with PYTHONHASHSEED="
        f"{again.hash_seed} (this one: {os.environ.get('PYTHONHASHSEED') or 'random'}): {problem}"
    )
    assert (first.metrics["delivered"] or 0) > 0, "nothing was delivered"
    for name in invariants():
        value = first.metrics.get(name)
        assert value is None or value == 0, f"invariant {name} = {value}"


def _difference(first: Mapping[str, Any], again: Mapping[str, Any]) -> str | None:
    """What differs between two result documents (``Result.to_json``), metrics first; ``None``
    when nothing but the profile's path does (the second run rebuilds it from its values)."""
    metrics, other = first.get("metrics", {}), again.get("metrics", {})
    differ = sorted(name for name in {*metrics, *other} if metrics.get(name) != other.get(name))
    if differ:
        shown = ", ".join(f"{n} ({metrics.get(n)} vs {other.get(n)})" for n in differ[:8])
        more = f" and {len(differ) - 8} more" if len(differ) > 8 else ""
        return f"metrics that differ: {shown}{more}"
    parts = sorted(k for k in {*first, *again} - {"profile"} if first.get(k) != again.get(k))
    return f"the metrics agree but {', '.join(parts)} differ" if parts else None
