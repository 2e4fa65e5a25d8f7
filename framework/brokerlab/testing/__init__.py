"""brokerlab's contract kit for plugin authors: one reusable test suite per extension point.

**How to use it.** Each suite is a plain class; subclass it in a test module and override one
fixture that names your record (the name your hook yields). pytest collects the inherited tests::

    import pytest
    from brokerlab.testing import EvictionPredicateContract

    class TestMyPredicate(EvictionPredicateContract):
        @pytest.fixture
        def eviction_predicate(self) -> str:
            return "my-predicate"

Nothing else is needed: the fixtures the suites use come from the ``brokerlab`` pytest plugin,
which brokerlab registers through the ``pytest11`` entry point, so it is active whenever brokerlab
is installed (see :mod:`brokerlab.testing.plugin`). The record is looked up in the installed
plugins (``brokerlab_host``), so the suite also proves that your entry point registers it; to test
a module that is not installed, override ``brokerlab_host`` to return
``PluginHost(modules=["my_module"])``.

**Why this shape.** A subclass with one fixture is the smallest thing a plugin author writes, it
reads like any pytest test class, and the same class runs every built-in record when the fixture
is parametrised over the host's records (``params=record_names("entry_cache")``), as
``tests/contract/test_builtin_contracts.py`` does.

**The suites** (each also runs a short simulation with the record selected, twice, and requires
identical results and zero invariant metrics; the second run is in a fresh interpreter with
another ``PYTHONHASHSEED``, so behaviour that hangs on ``hash()`` of a string fails, naming the
metrics that differ; that interpreter rebuilds ``brokerlab_host`` from its entry points and
modules, so a plugin object given with ``plugins=`` must be a global of its module):

* :class:`EntryCacheContract` (fixture ``entry_cache``): size accounting (at most the limit plus
  one entry once eviction has run; ``size_bytes()`` equals the bytes it serves), stats consistent
  with what reads returned, every removal counted under one reason, invalidation by ledger
  deletion and close, no read served of a removed or never-inserted entry, TTL expiry (and no
  expiry before the TTL), every hit reported to the eviction predicates it consults.
* :class:`EvictionPredicateContract` (``eviction_predicate``): decisions are
  :class:`~brokerlab.protocols.EvictionDecision` values or ``None``, deterministic for a seed,
  and every cache that consults predicates keeps its entry-cache contract with it chained
  (state machine, TTL expiry of unread entries, size bound under a flood).
* :class:`CursorContainerContract` (``cursor_container``): slowest position, counts, membership
  and the rank query equal brute force over random moves (hypothesis).
* :class:`DelayedDeliveryContract` (``delayed_delivery_tracker_factory``): never early (strict
  mode; at most one tick early otherwise), at most ``max_messages`` per hand-back, each message
  handed back at most once per add and only to the subscription it was added to, and, driven by
  its own wake-ups, every message after the mark-delete position delivered.
* :class:`AckStatePersisterContract` (``ack_state_persister``): the state recovered after a
  crash is a subset of the acknowledged state, and of the state at the last write a call
  reported, under roomy and under tight limits.

Suites run under ``brokerlab_profile``: ``--brokerlab-profile PATH``, else ``$BROKERLAB_PROFILE``,
else the defaults; they add only the ``--set`` values they need (a 1 MiB cache, strict mode...).
The building blocks (:class:`CacheBench`, :class:`EntryView`, :class:`DelayedBench`,
:func:`play_ack_script`, the state machines) are public for a plugin's own behavioural tests.

The kit needs ``pytest`` and ``hypothesis`` (``pip install 'brokerlab[testing]'``); importing
this package is cheap, each suite module is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brokerlab.testing._common import (
        CONTRACT_WORKLOAD,
        Simulate,
        build_context,
        check_simulation,
        check_stats,
        is_diagnostic,
        record_names,
    )
    from brokerlab.testing.ack_state import (
        TIGHT_ACK_LIMITS,
        AckStatePersisterContract,
        ack_scripts,
        check_recovery,
        check_written,
        play_ack_script,
    )
    from brokerlab.testing.cursor_containers import (
        CursorContainerContract,
        CursorContainerMachine,
        brute_rank,
    )
    from brokerlab.testing.delayed_delivery import (
        DelayedBench,
        DelayedDeliveryContract,
        DeliveryLog,
        play_fixed_scenario,
    )
    from brokerlab.testing.entry_cache import (
        CacheBench,
        EntryCacheContract,
        EntryCacheMachine,
        EntryView,
        EvictionPredicateContract,
    )

__all__ = [
    "CONTRACT_WORKLOAD",
    "TIGHT_ACK_LIMITS",
    "AckStatePersisterContract",
    "CacheBench",
    "CursorContainerContract",
    "CursorContainerMachine",
    "DelayedBench",
    "DelayedDeliveryContract",
    "DeliveryLog",
    "EntryCacheContract",
    "EntryCacheMachine",
    "EntryView",
    "EvictionPredicateContract",
    "Simulate",
    "ack_scripts",
    "brute_rank",
    "build_context",
    "check_recovery",
    "check_simulation",
    "check_stats",
    "check_written",
    "is_diagnostic",
    "play_ack_script",
    "play_fixed_scenario",
    "record_names",
]

_HOME = {
    "CONTRACT_WORKLOAD": "_common",
    "build_context": "_common",
    "check_simulation": "_common",
    "check_stats": "_common",
    "is_diagnostic": "_common",
    "record_names": "_common",
    "Simulate": "_common",
    "TIGHT_ACK_LIMITS": "ack_state",
    "AckStatePersisterContract": "ack_state",
    "ack_scripts": "ack_state",
    "check_recovery": "ack_state",
    "check_written": "ack_state",
    "play_ack_script": "ack_state",
    "CursorContainerContract": "cursor_containers",
    "CursorContainerMachine": "cursor_containers",
    "brute_rank": "cursor_containers",
    "DelayedBench": "delayed_delivery",
    "DelayedDeliveryContract": "delayed_delivery",
    "DeliveryLog": "delayed_delivery",
    "play_fixed_scenario": "delayed_delivery",
    "CacheBench": "entry_cache",
    "EntryCacheContract": "entry_cache",
    "EntryCacheMachine": "entry_cache",
    "EntryView": "entry_cache",
    "EvictionPredicateContract": "entry_cache",
}


def __getattr__(name: str) -> Any:
    # The pytest plugin imports this package in every pytest run; the suites (and hypothesis)
    # are imported only when a test asks for them.
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
