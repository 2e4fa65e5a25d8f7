"""The built-in predicates' and containers' own source files, loaded under names of this plugin:
the same code, never compiled (the compiled build covers only the built-in module names)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from brokerlab._native import installed_roots, source_path

__all__ = ["heap", "predicates", "sorted_list"]


def _copy(builtin: str, name: str) -> ModuleType:
    path = source_path(builtin, installed_roots())
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and annotations look the module up by name
    spec.loader.exec_module(module)
    return module


predicates = _copy("brokerlab_plugins.pip430_cache.predicates", "brokerlab_copies.predicates")
heap = _copy("brokerlab_plugins.cursor_containers.heap", "brokerlab_copies.heap")
sorted_list = _copy(
    "brokerlab_plugins.cursor_containers.sorted_list", "brokerlab_copies.sorted_list"
)
