"""The plugin host: finds plugins, collects their records and resolves a profile's choices.

This is the only module that talks to pluggy. Everything it hands out is plain data: records (from
:mod:`brokerlab.records`) wrapped with the distribution they came from.
"""

from __future__ import annotations

import importlib
import os
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import pluggy

from brokerlab import hookspecs
from brokerlab._native import compiled_in
from brokerlab.errors import Origin, PluginError, ProfileError, WorkloadError, did_you_mean
from brokerlab.metrics import FRAMEWORK_PLUGIN, Declared, Metric, MetricRegistry
from brokerlab.records import (
    AckStatePersisterRecord,
    CursorContainerRecord,
    DelayedDeliveryTrackerFactoryRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    PluginRecord,
    SettingsRecord,
    SimulatorRecord,
    WorkloadRecord,
)
from brokerlab.workloads.model import WorkloadDocument

__all__ = [
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "EXTENSION_POINTS",
    "ExtensionPoint",
    "PluginChoices",
    "PluginHost",
    "Registered",
]

ENTRY_POINT_GROUP = "brokerlab"
DISABLE_ENV = "BROKERLAB_DISABLE_PLUGINS"

R = TypeVar("R")


class ProfileLike(Protocol):
    """What plugin resolution needs of a profile: values and origins by key spelling."""

    def get(self, key: str) -> Any: ...

    def origin(self, key: str) -> Origin | None: ...


@dataclass(frozen=True)
class ExtensionPoint:
    """One extension point: its hook, the record type it yields and a name for people."""

    name: str
    hook: str
    record_type: type[Any]
    title: str


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("entry_cache", "brokerlab_entry_caches", EntryCacheRecord, "entry caches"),
    ExtensionPoint(
        "eviction_predicate",
        "brokerlab_eviction_predicates",
        EvictionPredicateRecord,
        "eviction predicates",
    ),
    ExtensionPoint(
        "cursor_container",
        "brokerlab_cursor_containers",
        CursorContainerRecord,
        "cursor containers",
    ),
    ExtensionPoint(
        "delayed_delivery",
        "brokerlab_delayed_delivery_tracker_factories",
        DelayedDeliveryTrackerFactoryRecord,
        "delayed-delivery tracker factories",
    ),
    ExtensionPoint(
        "ack_state_persister",
        "brokerlab_ack_state_persisters",
        AckStatePersisterRecord,
        "ack-state persisters",
    ),
    ExtensionPoint("workload", "brokerlab_workloads", WorkloadRecord, "workloads"),
    ExtensionPoint("simulator", "brokerlab_simulators", SimulatorRecord, "simulators"),
)
_BUILTIN_SIMULATOR = FRAMEWORK_PLUGIN
"""The framework's own Pulsar broker model: registered by every host, whatever is blocked."""
_BY_NAME = {point.name: point for point in EXTENSION_POINTS}


@dataclass(frozen=True)
class Registered(Generic[R]):
    """A record together with where it came from."""

    record: R
    plugin: str
    distribution: str
    version: str

    @property
    def source(self) -> str:
        return f"{self.distribution} {self.version}".strip()


@dataclass(frozen=True)
class PluginChoices:
    """The records one profile selects, one per extension point (predicates: an ordered chain)."""

    entry_cache: Registered[EntryCacheRecord]
    cursor_container: Registered[CursorContainerRecord]
    delayed_delivery: Registered[DelayedDeliveryTrackerFactoryRecord]
    ack_state_persister: Registered[AckStatePersisterRecord]
    eviction_predicates: tuple[Registered[EvictionPredicateRecord], ...]

    def names(self) -> dict[str, str]:
        """Extension point -> record name (predicates joined by commas), for results and JSON."""
        return {
            "entry_cache": self.entry_cache.record.name,
            "cursor_container": self.cursor_container.record.name,
            "delayed_delivery": self.delayed_delivery.record.name,
            "ack_state_persister": self.ack_state_persister.record.name,
            "eviction_predicates": ",".join(p.record.name for p in self.eviction_predicates),
        }


class PluginHost:
    """Registers plugins and serves their records by extension point and name.

    Plugins come from the entry-point group ``brokerlab`` (built-ins and third parties alike) and
    from ``modules`` (the CLI's ``-p module``). Names listed in ``blocked`` (default: the comma list
    in ``BROKERLAB_DISABLE_PLUGINS``) are never registered; a name is the entry-point name, or the
    module name for ``-p``.
    """

    def __init__(
        self,
        *,
        modules: Sequence[str] = (),
        blocked: Iterable[str] | None = None,
        entry_points: bool = True,
        plugins: Mapping[str, object] | None = None,
    ) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        # How this host was built, so that another process can build the same one.
        self.modules: tuple[str, ...] = tuple(modules)
        self.entry_points = entry_points
        self.given_plugins: Mapping[str, object] = dict(plugins or {})
        if blocked is None:
            blocked = os.environ.get(DISABLE_ENV, "").split(",")
        self.blocked = frozenset(name.strip() for name in blocked if name.strip())
        for name in self.blocked:
            self._pm.set_blocked(name)
        self._pm.register(importlib.import_module(_BUILTIN_SIMULATOR), name=_BUILTIN_SIMULATOR)
        if entry_points:
            self._load_entry_points()
        for module_name in modules:
            self._register_module(module_name)
        for name, plugin in (plugins or {}).items():
            if not self._pm.is_blocked(name):
                self._pm.register(plugin, name=name)
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise _mismatch(exc) from exc
        self._dists = self._distributions()
        self._records: dict[str, tuple[Registered[Any], ...]] = {}
        self._settings: tuple[Registered[SettingsRecord], ...] | None = None
        self._metrics: MetricRegistry | None = None

    # ---- registration ------------------------------------------------------------------------

    def _load_entry_points(self) -> None:
        try:
            self._pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except pluggy.PluginValidationError as exc:
            raise _mismatch(exc) from exc
        except Exception as exc:  # a plugin's own bug at import, not only ImportError
            raise PluginError(
                f"a plugin of entry-point group '{ENTRY_POINT_GROUP}' failed to import: "
                f"{_failure(exc)}"
            ) from exc

    def _register_module(self, module_name: str) -> None:
        if self._pm.is_blocked(module_name) or self._pm.has_plugin(module_name):
            return
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise PluginError(
                f"cannot import plugin module: {_failure(exc)}",
                origin=Origin("-p"),
                value=module_name,
            ) from exc
        if self._pm.is_registered(module):
            return  # installed, so its entry point registered it already
        try:
            self._pm.register(module, name=module_name)
        except pluggy.PluginValidationError as exc:
            raise _mismatch(exc) from exc

    def _distributions(self) -> dict[str, tuple[str, str]]:
        from brokerlab import __version__  # late: the package imports this module

        by_plugin: dict[str, tuple[str, str]] = {_BUILTIN_SIMULATOR: ("brokerlab", __version__)}
        for plugin, dist in self._pm.list_plugin_distinfo():
            name = self._pm.get_name(plugin)
            if name is not None:
                by_plugin[name] = (dist.metadata["name"], dist.version)
        return by_plugin

    def plugin_names(self) -> list[str]:
        """Names of every registered plugin, sorted."""
        return sorted(n for n, p in self._pm.list_name_plugin() if p is not None)

    def distribution(self, plugin: str) -> tuple[str, str] | None:
        """``(distribution, version)`` of the registered plugin named ``plugin`` (as in
        :attr:`Registered.plugin`): ``("-p NAME", "")`` for a module given by name or object,
        ``None`` when no plugin of that name is registered."""
        if plugin in self._dists:
            return self._dists[plugin]
        return (f"-p {plugin}", "") if self._pm.get_plugin(plugin) is not None else None

    def distributions(self) -> dict[str, str]:
        """Every installed distribution that registered a plugin -> its version, by name."""
        return dict(sorted(self._dists.values()))

    # ---- records -----------------------------------------------------------------------------

    def _collect(self, hook_name: str, record_type: type[Any]) -> tuple[Registered[Any], ...]:
        found: list[Registered[Any]] = []
        caller = getattr(self._pm.hook, hook_name)
        for impl in caller.get_hookimpls():
            plugin = impl.plugin_name
            dist, version = self._dists.get(plugin, (f"-p {plugin}", ""))
            try:
                produced = impl.function() or ()
                items = list(produced)
            except Exception as exc:
                raise PluginError(
                    f"plugin {plugin!r} ({dist}) failed in {hook_name}: {exc!r}"
                ) from exc
            for item in items:
                if not isinstance(item, record_type):
                    raise PluginError(
                        f"plugin {plugin!r} ({dist}) yielded {type(item).__name__} from "
                        f"{hook_name}; expected {record_type.__name__}"
                    )
                if isinstance(item, PluginRecord):
                    _check_names(item, f"plugin {plugin!r} ({dist})", hook_name)
                found.append(Registered(item, plugin, dist, version))
        return tuple(found)

    def records(self, point: str) -> tuple[Registered[Any], ...]:
        """Every record of one extension point (by :attr:`ExtensionPoint.name`), sorted by name.

        Raises :class:`PluginError` when two records share a name or alias.
        """
        if point not in self._records:
            spec = _BY_NAME[point]
            found = self._collect(spec.hook, spec.record_type)
            _refuse_duplicates(spec, found)
            self._records[point] = tuple(sorted(found, key=lambda r: r.record.name))
        return self._records[point]

    def simulator(self, name: str) -> SimulatorRecord:
        """The simulator a workload document names; an unknown name is a :class:`WorkloadError`."""
        record: SimulatorRecord = self.simulator_registration(name).record
        return record

    def simulator_registration(self, name: str) -> Registered[SimulatorRecord]:
        """:meth:`simulator` with the plugin and distribution it came from."""
        for reg in self.records("simulator"):
            if name in reg.record.names:
                return reg
        names = [n for reg in self.records("simulator") for n in reg.record.names]
        raise WorkloadError(
            "is not an installed simulator",
            key="simulator",
            value=name,
            allowed=", ".join(names),
            suggestions=did_you_mean(name, names),
        )

    def compiled_modules(self, choices: PluginChoices, simulator: str) -> dict[str, list[str]]:
        """Role (extension point, and ``simulator``) -> the modules of the plugin that fills it
        that run compiled in this process (empty: it runs as Python).

        A plugin's modules are those of the package it registered (for a module that is not a
        package, of the package that holds it, or the module alone at top level).
        """
        roles: dict[str, tuple[Registered[Any], ...]] = {
            "entry_cache": (choices.entry_cache,),
            "cursor_container": (choices.cursor_container,),
            "eviction_predicates": choices.eviction_predicates,
            "delayed_delivery": (choices.delayed_delivery,),
            "ack_state_persister": (choices.ack_state_persister,),
            "simulator": (self.simulator_registration(simulator),),
        }
        return {
            role: sorted({m for reg in found for m in compiled_in(self._package(reg.plugin))})
            for role, found in roles.items()
        }

    def _package(self, plugin: str) -> str:
        """The package whose modules belong to the registered plugin ``plugin``."""
        module = self._pm.get_plugin(plugin)
        name = str(getattr(module, "__name__", plugin))
        if hasattr(module, "__path__"):
            return name
        return name.rpartition(".")[0] or name

    def workload_models(self) -> dict[str, type[WorkloadDocument]]:
        """Simulator name (and alias) -> the model that validates its workload documents."""
        return {
            name: reg.record.workload_model
            for reg in self.records("simulator")
            for name in reg.record.names
        }

    def settings_records(self) -> tuple[Registered[SettingsRecord], ...]:
        """Every plugin settings model; two models with one namespace are an error."""
        if self._settings is None:
            found = self._collect("brokerlab_settings", SettingsRecord)
            seen: dict[str, Registered[SettingsRecord]] = {}
            for reg in found:
                other = seen.get(reg.record.namespace)
                if other is not None:
                    raise PluginError(
                        f"two plugins own the settings namespace {reg.record.namespace!r}: "
                        f"{other.plugin} ({other.source}) and {reg.plugin} ({reg.source})"
                    )
                seen[reg.record.namespace] = reg
            self._settings = tuple(found)
        return self._settings

    def metrics(self) -> MetricRegistry:
        """The metric registry: the framework's own metrics, then every other plugin's
        declarations (``brokerlab_metrics``) by plugin name. Raises :class:`PluginError`,
        naming both plugins, when two declare one name."""
        if self._metrics is None:
            found = self._collect("brokerlab_metrics", Metric)
            # The framework's first, then by plugin: an order that is the same in every process.
            ordered = sorted(found, key=lambda r: (r.plugin != _BUILTIN_SIMULATOR, r.plugin))
            owner: dict[str, Registered[Metric]] = {}
            for reg in ordered:
                problem = _metric_name_problem(reg.record.name)
                if problem is not None:
                    raise PluginError(
                        f"plugin {reg.plugin!r} ({reg.source}) declared the metric "
                        f"{reg.record.name!r}, whose name {problem}",
                        allowed="lower-case letters, digits and underscores after a letter",
                    )
                other = owner.get(reg.record.name)
                if other is not None:
                    raise PluginError(
                        f"the metric {reg.record.name!r} is declared twice: by plugin "
                        f"{other.plugin!r} ({other.source}) and by plugin {reg.plugin!r} "
                        f"({reg.source}); rename one of them"
                    )
                owner[reg.record.name] = reg
            self._metrics = MetricRegistry(
                Declared(reg.record, reg.plugin, reg.source) for reg in ordered
            )
        return self._metrics

    def plugin_settings(self) -> tuple[SettingsRecord, ...]:
        """The bare settings records, as the profile loader takes them."""
        return tuple(reg.record for reg in self.settings_records())

    def select(
        self,
        point: str,
        name: str,
        *,
        key: str | None = None,
        origin: Origin | None = None,
    ) -> Registered[Any]:
        """The record of ``point`` called ``name`` (or aliased so).

        An unknown name raises :class:`ProfileError` naming the key and where it was set, listing
        the valid names and suggesting the closest ones.
        """
        records = self.records(point)
        for reg in records:
            if name in reg.record.names:
                return reg
        valid = [reg.record.name for reg in records]
        every_name = [n for reg in records for n in reg.record.names]
        title = _BY_NAME[point].title
        raise ProfileError(
            f"is not an installed plugin among the {title}",
            origin=origin,
            key=key,
            value=name,
            allowed=", ".join(valid) if valid else "(none installed)",
            suggestions=did_you_mean(name, every_name),
        )

    def resolve(self, profile: ProfileLike) -> PluginChoices:
        """The records ``profile`` selects, one per extension point.

        Selection rules (Pulsar's own keys where Pulsar has one):

        * entry cache: ``sim.entryCache``, or ``disabled`` when ``managedLedgerCacheSizeMB=0``;
        * cursor container: ``sim.cursorContainer``, else ``sorted-list`` when
          ``cacheEvictionByExpectedReadCount`` is true and ``heap`` when it is false;
        * delayed delivery: ``delayedDeliveryTrackerFactoryClassName`` when
          ``delayedDeliveryEnabled``, else the record named ``disabled``;
        * ack state: ``sim.ackStatePersister``;
        * eviction predicates, only for a cache that consults them: ``recently-accessed`` when
          ``managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed``, ``expected-reads`` when
          ``cacheEvictionByExpectedReadCount``, then ``sim.evictionPredicates`` in order.
        """

        def pick(point: str, key: str, name: str | None = None) -> Registered[Any]:
            chosen = profile.get(key) if name is None else name
            return self.select(point, str(chosen), key=key, origin=profile.origin(key))

        if profile.get("managedLedgerCacheSizeMB") == 0:
            # Pulsar swaps in its disabled cache whatever the implementation when the size is 0.
            entry_cache = pick("entry_cache", "managedLedgerCacheSizeMB", "disabled")
            # An error about the cache must say what chose it: sim.entryCache may name another.
            where = profile.origin("managedLedgerCacheSizeMB") or "the defaults"
            chosen_by = f" (selected by managedLedgerCacheSizeMB=0 from {where})"
        else:
            entry_cache = pick("entry_cache", "sim.entryCache")
            chosen_by = ""
        by_read_count = bool(profile.get("cacheEvictionByExpectedReadCount"))
        container_name = profile.get("sim.cursorContainer") or (
            "sorted-list" if by_read_count else "heap"
        )
        key = (
            "sim.cursorContainer"
            if profile.get("sim.cursorContainer")
            else ("cacheEvictionByExpectedReadCount")
        )
        container = pick("cursor_container", key, container_name)
        if profile.get("delayedDeliveryEnabled"):
            delayed = pick("delayed_delivery", "delayedDeliveryTrackerFactoryClassName")
        else:
            delayed = pick("delayed_delivery", "delayedDeliveryEnabled", "disabled")
        persister = pick("ack_state_persister", "sim.ackStatePersister")

        extra = tuple(profile.get("sim.evictionPredicates") or ())
        predicates: list[Registered[EvictionPredicateRecord]] = []
        if entry_cache.record.uses_eviction_predicates:
            if profile.get("managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed"):
                predicates.append(
                    pick(
                        "eviction_predicate",
                        "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed",
                        "recently-accessed",
                    )
                )
            if by_read_count:
                predicates.append(
                    pick("eviction_predicate", "cacheEvictionByExpectedReadCount", "expected-reads")
                )
            predicates.extend(
                pick("eviction_predicate", "sim.evictionPredicates", n) for n in extra
            )
        elif extra:
            raise ProfileError(
                f"cannot be used with the entry cache {entry_cache.record.name!r}{chosen_by}, "
                "which does not consult eviction predicates",
                origin=profile.origin("sim.evictionPredicates"),
                key="sim.evictionPredicates",
                value=",".join(extra),
                allowed="caches that use a removal queue: "
                + ", ".join(
                    r.record.name
                    for r in self.records("entry_cache")
                    if r.record.uses_eviction_predicates
                ),
            )
        return PluginChoices(
            entry_cache=entry_cache,
            cursor_container=container,
            delayed_delivery=delayed,
            ack_state_persister=persister,
            eviction_predicates=tuple(predicates),
        )


def _name_problem(name: object) -> str | None:
    """Why a profile or command line could not select a record by ``name``, if it could not."""
    if not isinstance(name, str) or not name:
        return "is empty or not text"
    if name != name.strip():
        return "begins or ends with whitespace, which a profile strips from values"
    if "," in name:
        return "contains a comma, which separates the names of a list (sim.evictionPredicates)"
    if not name.isprintable():
        return "contains a line break or another unprintable character"
    return None


def _metric_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a metric (a Parquet column, a CSV value), if it cannot."""
    if not isinstance(name, str) or not name:
        return "is empty or not text"
    if not (name[0].isascii() and name[0].islower()) or not all(
        c.isascii() and (c.islower() or c.isdigit() or c == "_") for c in name
    ):
        return "is not made of lower-case letters, digits and underscores after a letter"
    return None


def _check_names(record: PluginRecord, who: str, hook_name: str) -> None:
    for name in record.names:
        problem = _name_problem(name)
        if problem is not None:
            raise PluginError(
                f"{who} yielded {type(record).__name__} {record.name!r} from {hook_name}, whose "
                f"name or alias {name!r} {problem}",
                allowed="non-empty names without commas or surrounding whitespace",
            )


def _mismatch(exc: pluggy.PluginValidationError) -> PluginError:
    """A hook implementation whose name or arguments brokerlab's specifications do not have."""
    name = getattr(exc.plugin, "__name__", None) or repr(exc.plugin)
    detail = str(exc).replace("\n", "; ")  # pluggy explains over several lines
    return PluginError(f"plugin {name!r} does not match brokerlab's hooks: {detail}")


def _failure(exc: BaseException) -> str:
    """An import failure in one line, with the plugin's file and line where it happened."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _refuse_duplicates(point: ExtensionPoint, found: Sequence[Registered[PluginRecord]]) -> None:
    owner: dict[str, Registered[PluginRecord]] = {}
    for reg in found:
        for name in reg.record.names:
            other = owner.get(name)
            if other is not None:
                raise PluginError(
                    f"two {point.title} are named {name!r}: {other.record.name!r} from "
                    f"{other.plugin} ({other.source}) and {reg.record.name!r} from "
                    f"{reg.plugin} ({reg.source})"
                )
            owner[name] = reg
