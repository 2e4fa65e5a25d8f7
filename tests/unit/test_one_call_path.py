"""One call path for everyone (#26 item 2): no framework or plugin code picks a path by a
built-in plugin's concrete class.

A path for a plugin object is chosen by what the object has (an optional protocol of
``brokerlab.protocols``), never by ``isinstance``/``issubclass`` against a class of
``brokerlab_plugins``, an exact-type test (``type(x) is C``, ``type(x) in (...)``, a class name
compared as a string) or a class pattern. A module may test the classes it defines itself, and a
plugin may narrow to its own pydantic models (settings, workload documents); any other class of
the built-in plugins is a violation.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORK = ROOT / "framework"
PLUGINS = ROOT / "plugins"
PLUGIN_PACKAGE = "brokerlab_plugins"


def _modules(root: Path, package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


@cache
def plugin_classes() -> frozenset[str]:
    """The names of the classes the built-in plugins define, but their pydantic models: settings
    and workload documents are data the framework validates and hands over, which a plugin may
    narrow to its own model; every other class may be a plugin object."""
    names = set()
    for module_name, _ in _modules(PLUGINS, PLUGIN_PACKAGE):
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__.startswith(PLUGIN_PACKAGE)
                and not issubclass(value, BaseModel)
            ):
                names.add(value.__name__)
    return frozenset(names)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _is_type_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
    )


class _Checker(ast.NodeVisitor):
    def __init__(self, module: str, classes: frozenset[str]) -> None:
        self.module = module
        self.classes = classes
        self.own: set[str] = set()  # classes this module defines
        self.imported: set[str] = set()  # local names bound to a plugin class from elsewhere
        self.plugin_modules: set[str] = {PLUGIN_PACKAGE}  # local names bound to plugin modules
        self.found: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.own.add(node.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = node.module or ""
        if node.level:  # a relative import stays inside the package it is in
            source = self.module if self.module.startswith(PLUGIN_PACKAGE) else ""
        if source.startswith(PLUGIN_PACKAGE):
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name in self.classes:
                    self.imported.add(local)
                else:
                    self.plugin_modules.add(local)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.startswith(PLUGIN_PACKAGE):
                self.plugin_modules.add(alias.asname or alias.name.partition(".")[0])

    def _plugin_class(self, node: ast.expr) -> str | None:
        """The plugin class ``node`` names, when it names one from another module."""
        name = _dotted(node)
        if name is None:
            return None
        head, _, last = name.rpartition(".")
        if not head:
            return name if name in self.imported else None
        if last in self.classes and head.partition(".")[0] in self.plugin_modules:
            return name
        return None

    def _classes_in(self, node: ast.expr) -> list[str]:
        targets = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
        return [found for t in targets if (found := self._plugin_class(t)) is not None]

    def _report(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.module}:{getattr(node, 'lineno', 0)}: {what}")

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            for found in self._classes_in(node.args[1]):
                self._report(node, f"{node.func.id}(..., {found})")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        if any(_is_type_call(side) for side in sides):
            for side in sides:
                for found in self._classes_in(side):
                    self._report(node, f"type(...) compared with {found}")
        for side in sides:  # type(x).__name__ == "SomePluginClass"
            if (
                isinstance(side, ast.Attribute)
                and side.attr in ("__name__", "__qualname__")
                and any(
                    isinstance(other, ast.Constant)
                    and isinstance(other.value, str)
                    and other.value in self.classes
                    and other.value not in self.own
                    for other in sides
                )
            ):
                self._report(node, f"class name compared as a string ({ast.unparse(node)})")
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        found = self._plugin_class(node.cls)
        if found is not None:
            self._report(node, f"class pattern {found}()")
        self.generic_visit(node)


def violations(source: str, module: str, classes: frozenset[str]) -> list[str]:
    """Every concrete-class path choice in ``source`` (the module ``module``)."""
    checker = _Checker(module, classes)
    checker.visit(ast.parse(source))
    return checker.found


def test_framework_and_plugins_choose_no_path_by_a_built_in_class() -> None:
    classes = plugin_classes()
    assert {"Pip430EntryCache", "SortedListCursorContainer", "StatelessPredicate"} <= classes
    assert "TraceWorkload" not in classes
    found = [
        problem
        for root, package in ((FRAMEWORK, "brokerlab"), (PLUGINS, PLUGIN_PACKAGE))
        for module, path in _modules(root, package)
        for problem in violations(path.read_text(encoding="utf-8"), module, classes)
    ]
    assert found == [], "\n".join(found)


PLANTED = {
    "isinstance": (
        "from brokerlab_plugins.pip430_cache.cache import Pip430EntryCache\n"
        "def f(cache):\n    return isinstance(cache, Pip430EntryCache)\n"
    ),
    "isinstance of a tuple": (
        "from brokerlab_plugins.pip430_cache import predicates as p\n"
        "def f(x):\n    return isinstance(x, (int, p.StatelessPredicate))\n"
    ),
    "issubclass through the package": (
        "import brokerlab_plugins.cursor_containers.sorted_list\n"
        "def f(k):\n"
        "    return issubclass(k, brokerlab_plugins.cursor_containers.sorted_list"
        ".SortedListCursorContainer)\n"
    ),
    "type is": (
        "from brokerlab_plugins.pip430_cache.predicates import RecentlyAccessedPredicate as R\n"
        "def f(p):\n    return type(p) is R\n"
    ),
    "type in": (
        "from brokerlab_plugins.pip430_cache.predicates import (\n"
        "    ExpectedReadsPredicate, RecentlyAccessedPredicate)\n"
        "def f(p):\n"
        "    return type(p) in (RecentlyAccessedPredicate, ExpectedReadsPredicate)\n"
    ),
    "name as a string": "def f(c):\n    return type(c).__name__ == 'SortedListCursorContainer'\n",
    "class pattern": (
        "from brokerlab_plugins.cursor_containers import HeapCursorContainer\n"
        "def f(c):\n    match c:\n        case HeapCursorContainer():\n            return 1\n"
    ),
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_a_planted_violation_is_found(what: str) -> None:
    """Each planted check, in a framework module and in a plugin module, is reported."""
    for module in ("brokerlab.broker.planted", "brokerlab_plugins.pip430_cache.planted"):
        assert violations(PLANTED[what], module, plugin_classes()), (what, module)


def test_choosing_by_capability_or_by_a_module_s_own_class_is_not_a_violation() -> None:
    allowed = (
        "from brokerlab.protocols import RankedCursorContainer, SingleEntryCache\n"
        "class _Marker:\n    pass\n"
        "class Pip430EntryCache:\n    pass\n"
        "def f(c, e, x):\n"
        "    if isinstance(c, RankedCursorContainer | SingleEntryCache):\n        return 1\n"
        "    if isinstance(e, _Marker) or isinstance(x, Pip430EntryCache):\n        return 2\n"
        "    return type(x) is int\n"
    )
    assert violations(allowed, "brokerlab_plugins.pip430_cache.cache", plugin_classes()) == []


def test_the_scan_fails_on_a_planted_violation_in_a_real_module() -> None:
    """The real scan, not only the checker: the queue as it was before #26 is reported."""
    path = PLUGINS / PLUGIN_PACKAGE / "pip430_cache" / "queue.py"
    planted = path.read_text(encoding="utf-8") + (
        "\n\nfrom brokerlab_plugins.pip430_cache.predicates import StatelessPredicate\n"
        "def _built_in(predicate):\n"
        "    return isinstance(predicate, StatelessPredicate) and type(predicate) in (\n"
        "        StatelessPredicate,\n    )\n"
    )
    found = violations(planted, "brokerlab_plugins.pip430_cache.queue", plugin_classes())
    assert len(found) == 2, found
