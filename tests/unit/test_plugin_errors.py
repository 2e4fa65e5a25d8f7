"""Errors about plugins name the plugin; records that a profile cannot select are refused."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from brokerlab import load_profile, simulate
from brokerlab.errors import PluginError, ProfileError, WorkloadError
from brokerlab.hookspecs import hookimpl
from brokerlab.host import PluginHost
from brokerlab.profiles.loader import load_profile as load_profile_with
from brokerlab.protocols import AckStatePersister, PluginContext
from brokerlab.records import AckStatePersisterRecord, EvictionPredicateRecord, WorkloadRecord
from brokerlab.simulation import load_workload
from brokerlab.testing._common import CONTRACT_WORKLOAD
from brokerlab.testing.entry_cache import EvictionPredicateContract
from brokerlab.testing.plugin import _Simulate

TAILING = resources.files("brokerlab_plugins.workloads").joinpath("tailing.toml")


class Predicates:
    """A plugin registering one eviction predicate under ``name`` (and ``aliases``)."""

    def __init__(self, name: str, aliases: tuple[str, ...] = ()) -> None:
        self.name, self.aliases = name, aliases

    @hookimpl
    def brokerlab_eviction_predicates(self) -> Iterator[EvictionPredicateRecord]:
        yield EvictionPredicateRecord(
            name=self.name, aliases=self.aliases, description="test", factory=lambda c: None
        )


@pytest.mark.parametrize(
    ("name", "aliases", "bad", "problem"),
    [
        ("small,first", (), "'small,first'", "contains a comma"),
        (" small", (), "' small'", "begins or ends with whitespace"),
        ("small ", (), "'small '", "begins or ends with whitespace"),
        ("", (), "''", "is empty"),
        ("two\nlines", (), "'two\\nlines'", "contains a line break"),
        ("small", ("a,b",), "'a,b'", "contains a comma"),
    ],
)
def test_a_record_name_a_profile_cannot_select_is_refused(
    name: str, aliases: tuple[str, ...], bad: str, problem: str
) -> None:
    host = PluginHost(entry_points=False, plugins={"oddnames": Predicates(name, aliases)})
    with pytest.raises(PluginError) as info:
        host.records("eviction_predicate")
    message = str(info.value)
    assert message.startswith(
        f"plugin 'oddnames' (-p oddnames) yielded EvictionPredicateRecord {name!r} from "
        f"brokerlab_eviction_predicates, whose name or alias {bad} {problem}"
    )
    assert message.endswith("; allowed: non-empty names without commas or surrounding whitespace")


class ChattyPersister:
    """A persister that adds a metric nobody registered to its stats."""

    def __init__(self, inner: AckStatePersister) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stats(self) -> Mapping[str, float]:
        return {**self.inner.stats(), "my_custom_metric": 1.0}


class Chatty:
    def __init__(self, inner: AckStatePersisterRecord) -> None:
        self.inner = inner

    @hookimpl
    def brokerlab_ack_state_persisters(self) -> Iterator[AckStatePersisterRecord]:
        inner = self.inner

        def factory(context: PluginContext, cursor: str) -> AckStatePersister:
            return ChattyPersister(inner.factory(context, cursor))

        yield AckStatePersisterRecord(name="chatty", description="test", factory=factory)


def test_an_unregistered_metric_names_the_record_and_plugin_that_reported_it() -> None:
    inner = PluginHost().select("ack_state_persister", "range-count").record
    host = PluginHost(plugins={"chattyplug": Chatty(inner)})
    profile = load_profile(None, ["sim.ackStatePersister=chatty"], host=host)
    with pytest.raises(PluginError) as info:
        simulate(profile, CONTRACT_WORKLOAD, 0, host=host)
    assert str(info.value) == (
        "AckStatePersisterRecord 'chatty' of plugin 'chattyplug' (-p chattyplug) reported the "
        "undeclared metric 'my_custom_metric'; allowed: the metrics of the pulsar simulator that "
        "a loaded plugin declares (brokerlab_metrics; `brokerlab metrics` lists them)"
    )


@pytest.mark.parametrize(
    ("how", "where"),
    [
        ("--set", "--set"),
        ("env", "env BROKERLAB_managedLedgerCacheSizeMB"),
        ("file", "pr.conf:3"),
    ],
)
def test_predicates_with_a_size_0_cache_name_what_disabled_it(
    tmp_path: Path, how: str, where: str
) -> None:
    host = PluginHost()
    text = "sim.entryCache=pip430\nsim.evictionPredicates=expected-reads\n"
    path = tmp_path / "pr.conf"
    path.write_text(text + ("managedLedgerCacheSizeMB=0\n" if how == "file" else ""))
    overrides = ["managedLedgerCacheSizeMB=0"] if how == "--set" else []
    environ = {"BROKERLAB_managedLedgerCacheSizeMB": "0"} if how == "env" else {}
    profile = load_profile_with(
        path, overrides, plugin_settings=host.plugin_settings(), environ=environ
    )
    with pytest.raises(ProfileError) as info:
        host.resolve(profile)
    where = where.replace("pr.conf", str(path))
    assert str(info.value) == (
        f"{path}:2: key 'sim.evictionPredicates': value 'expected-reads' cannot be used with the "
        f"entry cache 'disabled' (selected by managedLedgerCacheSizeMB=0 from {where}), which "
        "does not consult eviction predicates; allowed: caches that use a removal queue: pip430"
    )


class Workloads:
    def __init__(self, document: str) -> None:
        self.document = document

    @hookimpl
    def brokerlab_workloads(self) -> Iterator[WorkloadRecord]:
        yield WorkloadRecord(name="mine", description="test", document=self.document)


def test_a_third_party_workload_error_names_its_plugin_not_builtin() -> None:
    text = TAILING.read_text(encoding="utf-8").replace('name = "tailing"', 'name = "mine"')
    bad = text.replace("duration_s = ", "duration_s = -", 1)
    assert bad != text
    host = PluginHost(plugins={"thirdparty": Workloads(bad)})
    with pytest.raises(WorkloadError) as info:
        load_workload(host, "mine")
    assert str(info.value).startswith("plugin thirdparty: workload mine:")
    assert load_workload(PluginHost(plugins={"thirdparty": Workloads(text)}), "mine").name == "mine"


def test_a_workload_document_named_unlike_its_record_is_refused() -> None:
    host = PluginHost(plugins={"thirdparty": Workloads(TAILING.read_text(encoding="utf-8"))})
    with pytest.raises(PluginError) as info:
        load_workload(host, "mine")
    line = next(
        number
        for number, text in enumerate(TAILING.read_text(encoding="utf-8").splitlines(), 1)
        if text.startswith("name =")
    )
    assert str(info.value) == (
        f"plugin thirdparty: workload mine:{line}: key 'name': value 'tailing' has the name "
        "'tailing', but its workload record is named 'mine'; allowed: 'mine'"
    )


def test_the_predicate_simulation_contract_runs_under_a_size_0_profile(tmp_path: Path) -> None:
    path = tmp_path / "zero.conf"
    path.write_text("sim.entryCache=pip430\nmanagedLedgerCacheSizeMB=0\n")
    host = PluginHost()
    profile = load_profile(path, host=host)
    contract: Any = EvictionPredicateContract()
    contract.test_runs_deterministically_in_a_simulation(
        brokerlab_host=host,
        brokerlab_profile=profile,
        simulate=_Simulate(host, profile, 0),
        eviction_predicate="expected-reads",
    )
