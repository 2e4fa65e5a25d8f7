"""The modules that installs compile with mypyc, and the guard that keeps them honest.

An install compiles the hot modules of the broker model, the entry caches, the ack-state
persisters and the baselines (``hatch_build.py``); the sources stay plain Python and are what runs
without a C compiler. A compiled module is only as new as the build, so this guard routes every
module of :data:`COMPILED` back to its ``.py`` source when

* ``BROKERLAB_PURE_PYTHON`` is set to anything but ``0`` (to compare or debug), or
* any of their sources changed since the build (an editable install after an edit), with a
  warning that says how to compile again.

They go back together: compiled modules reach into each other's objects directly, so a compiled
module must never meet an interpreted copy of another one. The build's record of the sources is
:data:`MANIFEST` beside this file. This module runs inside the build too, with nothing installed:
it imports only the standard library.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

__all__ = [
    "COMPILED",
    "MANIFEST",
    "build_state",
    "compiled_in",
    "compiled_now",
    "install_guard",
    "installed_roots",
    "source_digests",
    "source_path",
    "stale_modules",
    "summary",
]

COMPILED: tuple[str, ...] = (
    "brokerlab.broker.arrivals",
    "brokerlab.broker.broker",
    "brokerlab.broker.client",
    "brokerlab.broker.consumer",
    "brokerlab.broker.cursor",
    "brokerlab.broker.dedup",
    "brokerlab.broker.dispatcher",
    "brokerlab.broker.durations",
    "brokerlab.broker.events",
    "brokerlab.broker.ledger",
    "brokerlab.broker.producers",
    "brokerlab.broker.publishing",
    "brokerlab.broker.reads",
    "brokerlab.broker.recovery",
    "brokerlab.broker.replay",
    "brokerlab.broker.settlement",
    "brokerlab_plugins.ack_state.cadence",
    "brokerlab_plugins.ack_state.forms",
    "brokerlab_plugins.ack_state.lru",
    "brokerlab_plugins.ack_state.pause",
    "brokerlab_plugins.ack_state.pip299",
    "brokerlab_plugins.ack_state.pip81",
    "brokerlab_plugins.ack_state.range_count",
    "brokerlab_plugins.ack_state.shapes",
    "brokerlab_plugins.ack_state.storage",
    "brokerlab_plugins.ack_state.truncation",
    "brokerlab_plugins.ack_state.unlimited",
    "brokerlab_plugins.ack_state.whole_state",
    "brokerlab_plugins.ack_state.wire_size",
    "brokerlab_plugins.baselines.disabled_cache",
    "brokerlab_plugins.baselines.no_delayed_delivery",
    "brokerlab_plugins.cache_trace.replay",
    "brokerlab_plugins.cursor_containers.heap",
    "brokerlab_plugins.cursor_containers.sorted_list",
    "brokerlab_plugins.entry_cache_common.backlog",
    "brokerlab_plugins.entry_cache_common.counters",
    "brokerlab_plugins.entry_cache_common.limits",
    "brokerlab_plugins.entry_cache_common.trigger",
    "brokerlab_plugins.legacy_cache.cache",
    "brokerlab_plugins.legacy_cache.ledger_cache",
    "brokerlab_plugins.legacy_cache.policy",
    "brokerlab_plugins.pip430_cache.cache",
    "brokerlab_plugins.pip430_cache.entry",
    "brokerlab_plugins.pip430_cache.predicates",
    "brokerlab_plugins.pip430_cache.queue",
)
"""Dotted names of the modules a build compiles: ``brokerlab`` ones live under ``framework/`` in
the repository, ``brokerlab_plugins`` ones under ``plugins/``; an installed wheel has both
packages in one folder."""

MANIFEST = "_native_build.json"
"""File name, beside this module, of the build's ``{module: sha256 of its source}``."""

PURE_PYTHON_VARIABLE = "BROKERLAB_PURE_PYTHON"

_routed_to_sources = ""  # why install_guard sent the listed modules to their sources, if it did

Roots = Mapping[str, Path]
"""Top-level package name -> the folder that holds it."""


def installed_roots() -> dict[str, Path]:
    """Where this process finds ``brokerlab`` and ``brokerlab_plugins`` (without importing the
    latter: its package import is what installs the guard)."""
    roots = {"brokerlab": Path(__file__).resolve().parent.parent}
    spec = importlib.util.find_spec("brokerlab_plugins")
    if spec is not None and spec.submodule_search_locations:
        roots["brokerlab_plugins"] = Path(next(iter(spec.submodule_search_locations))).parent
    return roots


def source_path(module: str, roots: Roots) -> Path:
    """The ``.py`` file of ``module``."""
    root = roots[module.partition(".")[0]]
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _digest(module: str, roots: Roots) -> str:
    """sha256 of ``module``'s source; empty when it is gone (a file renamed since the build)."""
    try:
        return hashlib.sha256(source_path(module, roots).read_bytes()).hexdigest()
    except (OSError, KeyError):
        return ""


def source_digests(roots: Roots, modules: Sequence[str] = COMPILED) -> dict[str, str]:
    """``{module: sha256 of its source}``: what a build records and the guard compares."""
    return {module: _digest(module, roots) for module in modules}


def stale_modules(roots: Roots, manifest: Path) -> list[str]:
    """Modules whose source differs from the one the build compiled (none without a build).

    An unreadable record counts every listed module as stale: the sources are always safe.
    """
    try:
        built: dict[str, str] = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return list(COMPILED)
    return sorted(module for module, digest in built.items() if _digest(module, roots) != digest)


def compiled_now() -> list[str]:
    """The modules of :data:`COMPILED` that this process imported as compiled extensions."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return [
        name
        for name in COMPILED
        if (module := sys.modules.get(name)) is not None
        and str(getattr(module, "__file__", "")).endswith(suffixes)
    ]


def compiled_in(package: str) -> list[str]:
    """The modules of ``package`` (it and everything under it) that this process imported as
    compiled extensions, whoever compiled them: the provenance a result records for a plugin."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    prefix = package + "."
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if (name == package or name.startswith(prefix))
        and str(getattr(module, "__file__", "") or "").endswith(suffixes)
    )


def build_state() -> str:
    """How this process runs the listed modules, for ``brokerlab --version``."""
    if _routed_to_sources:
        return f"{len(COMPILED)} hot modules run from source: {_routed_to_sources}"
    if Path(__file__).with_name(MANIFEST).exists():
        return f"{len(COMPILED)} hot modules compiled with mypyc"
    return "not compiled: the hot modules run from source"


def summary() -> str:
    """One line for benchmark output: how many of the imported listed modules run compiled."""
    imported = [name for name in COMPILED if name in sys.modules]
    return f"compiled modules: {len(compiled_now())} of the {len(imported)} imported (mypyc)"


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of :data:`COMPILED` as their ``.py`` sources, ahead of the extensions."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED or not path:
            return None
        source = Path(path[0]) / (fullname.rpartition(".")[2] + ".py")
        return importlib.util.spec_from_file_location(fullname, source)


def install_guard() -> bool:
    """Route the compiled modules to their sources when asked or stale; True when it did.

    Called first thing by ``brokerlab/__init__.py``, before any of them can have been imported.
    """
    global _routed_to_sources
    if any(isinstance(finder, _SourceFinder) for finder in sys.meta_path):
        return True
    asked = os.environ.get(PURE_PYTHON_VARIABLE, "0") not in ("", "0")
    stale = [] if asked else stale_modules(installed_roots(), Path(__file__).with_name(MANIFEST))
    if not asked and not stale:
        return False
    _routed_to_sources = f"{PURE_PYTHON_VARIABLE} is set" if asked else "edited since the build"
    if stale:
        warnings.warn(
            f"brokerlab: {', '.join(stale)} changed since the install compiled it; running all "
            "compiled modules from their Python sources (slower, same results). Reinstall "
            "(pip install -e .) to compile them again.",
            RuntimeWarning,
            stacklevel=2,
        )
    sys.meta_path.insert(0, _SourceFinder())
    return True
