"""The contract kit (``brokerlab.testing``) applied to every built-in record.

Each built-in record of each extension point passes the same suite a third-party plugin
subclasses, under the profile chosen with ``--brokerlab-profile`` or ``BROKERLAB_PROFILE`` (the
defaults otherwise), as tox's profile environments run them.

A diagnostic profile (``profiles/diagnostics/``) reproduces a defect on purpose, so the suites
are not run under it; instead :func:`test_fixed_delayed_scenario_verdict_matches_the_profile`
checks that the kit sees the defect.
"""

from __future__ import annotations

import pytest

from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.testing import (
    AckStatePersisterContract,
    CursorContainerContract,
    DelayedBench,
    DelayedDeliveryContract,
    EntryCacheContract,
    EvictionPredicateContract,
    is_diagnostic,
    play_fixed_scenario,
    record_names,
)
from brokerlab.testing.delayed_delivery import tracker_overrides

_HOST = PluginHost()
DISABLED = "disabled"
"""The record the host selects when a Pulsar feature is switched off (a baseline)."""


@pytest.fixture(autouse=True)
def _not_under_a_diagnostic_profile(request: pytest.FixtureRequest) -> None:
    if request.cls is None:
        return
    profile: Profile = request.getfixturevalue("brokerlab_profile")
    if is_diagnostic(profile):
        pytest.skip(f"{profile.path} breaks a contract on purpose; see the verdict test")


class TestEntryCaches(EntryCacheContract):
    @pytest.fixture(params=record_names("entry_cache", _HOST))
    def entry_cache(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)


class TestEvictionPredicates(EvictionPredicateContract):
    @pytest.fixture(params=record_names("eviction_predicate", _HOST))
    def eviction_predicate(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)


class TestCursorContainers(CursorContainerContract):
    @pytest.fixture(params=record_names("cursor_container", _HOST))
    def cursor_container(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)


class TestDelayedDeliveryTrackerFactories(DelayedDeliveryContract):
    @pytest.fixture(params=record_names("delayed_delivery", _HOST))
    def delayed_delivery_tracker_factory(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture
    def delays_messages(self, delayed_delivery_tracker_factory: str) -> bool:
        # 'disabled' is delayedDeliveryEnabled=false: it dispatches every message at once.
        return delayed_delivery_tracker_factory != DISABLED


class TestAckStatePersisters(AckStatePersisterContract):
    @pytest.fixture(params=record_names("ack_state_persister", _HOST))
    def ack_state_persister(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)


def test_every_extension_point_has_built_in_records() -> None:
    for point in (
        "entry_cache",
        "eviction_predicate",
        "cursor_container",
        "delayed_delivery",
        "ack_state_persister",
    ):
        assert record_names(point, _HOST), f"no built-in {point}: its contract runs on nothing"


def test_fixed_delayed_scenario_verdict_matches_the_profile(
    brokerlab_host: PluginHost, brokerlab_profile: Profile
) -> None:
    """The tracker the profile selects passes the kit's fixed strict-mode scenario, unless the
    profile is a diagnostic one, whose tracker must fail it (the kit sees the defect)."""
    enabled = bool(brokerlab_profile.get("delayedDeliveryEnabled"))
    name = str(brokerlab_profile.get("delayedDeliveryTrackerFactoryClassName"))
    tracker = name if enabled else DISABLED
    profile = brokerlab_profile.with_overrides(tracker_overrides(tracker, strict=True, tick_ms=100))
    bench = DelayedBench(brokerlab_host, profile, delays_messages=tracker != DISABLED)
    if tracker == DISABLED:
        assert not bench.subscribe(("t", "a")).add_message(1, 0, bench.now_ms() + 1000)
    elif is_diagnostic(brokerlab_profile):
        with pytest.raises(AssertionError):
            play_fixed_scenario(bench)
    else:
        play_fixed_scenario(bench)
