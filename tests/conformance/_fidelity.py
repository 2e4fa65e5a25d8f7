"""Collects the conformance suite's declarations and renders ``docs/fidelity.md``.

The page is generated, never edited: ``python -m pytest tests/conformance --fidelity-write``
rewrites it from the tests' declarations and outcomes, and ``test_fidelity_page.py`` fails when
the committed page differs from what the suite declares.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from _conformance import ROOT, Reexpression, UpstreamClass
from _gaps import GAPS, Gap

HERE = Path(__file__).resolve().parent
PAGE = ROOT / "docs" / "fidelity.md"

PASSES = "passes"
DIFFERS = "documented difference"
DEFECT = "known defect"
FAILS = "fails"
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class ConformanceTest:
    """One test function: its module file, name, claims and expected-failure reason."""

    file: str
    name: str
    claims: tuple[Reexpression, ...]
    own_doc: str
    xfail: str | None

    @property
    def node(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass(frozen=True)
class ConformanceModule:
    file: str
    upstream: UpstreamClass | None
    tests: tuple[ConformanceTest, ...]


def _load(path: Path) -> ModuleType:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"_fidelity_scan_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _xfail_reason(function: object) -> str | None:
    for mark in getattr(function, "pytestmark", ()):
        if mark.name == "xfail":
            return str(mark.kwargs.get("reason", "expected to fail"))
    return None


def _own_doc(function: object) -> str:
    """The test's docstring without the provenance :func:`reexpresses` appended."""
    if hasattr(function, "__scenario__"):
        return str(function.__scenario__)
    return inspect.getdoc(function) or ""


def collect(paths: Iterable[Path] | None = None) -> tuple[ConformanceModule, ...]:
    """Every conformance module (``test_*.py`` here, or ``paths``) with its declarations."""
    files = sorted(HERE.glob("test_*.py")) if paths is None else sorted(paths)
    modules = []
    for path in files:
        module = _load(path)
        upstream = getattr(module, "UPSTREAM", None)
        tests = []
        for name, function in sorted(vars(module).items()):
            if not (name.startswith("test_") and callable(function)):
                continue
            claims = tuple(getattr(function, "__reexpresses__", ()))
            tests.append(
                ConformanceTest(
                    path.name, name, claims, _own_doc(function), _xfail_reason(function)
                )
            )
        if upstream is None and not tests:
            continue
        modules.append(ConformanceModule(path.name, upstream, tuple(tests)))
    return tuple(modules)


def problems(modules: Iterable[ConformanceModule]) -> list[str]:
    """What keeps the suite from accounting for every upstream method exactly."""
    found: list[str] = []
    names: dict[str, str] = {}
    for module in modules:
        upstream = module.upstream
        if upstream is None:
            if module.file != "test_fidelity_page.py":
                found.append(f"{module.file}: declares no UPSTREAM class")
            continue
        if upstream.name in names:
            found.append(
                f"{module.file}: {upstream.name!r} is also declared in {names[upstream.name]}"
            )
        names[upstream.name] = module.file
        if len(set(upstream.methods)) != len(upstream.methods):
            found.append(f"{module.file}: {upstream.name} lists a method twice")
        unknown = set(upstream.not_applicable) - set(upstream.methods)
        for method in sorted(unknown):
            found.append(
                f"{module.file}: not_applicable names {method!r}, not a method of the class"
            )
        covered: set[str] = set()
        for test in module.tests:
            if not test.claims:
                found.append(f"{test.node}: re-expresses no upstream method (use @reexpresses)")
            if not test.own_doc:
                found.append(f"{test.node}: has no docstring of its own saying what it checks")
            for claim in test.claims:
                if claim.upstream != upstream:
                    found.append(
                        f"{test.node}: claims {claim.upstream.name}, not this module's class"
                    )
                covered.add(claim.method)
        for method in upstream.methods:
            if method not in covered and method not in upstream.not_applicable:
                found.append(
                    f"{module.file}: {upstream.java_class}.{method} is neither re-expressed"
                    " nor declared not applicable"
                )
    return found


@dataclass(frozen=True)
class MethodStatus:
    method: str
    status: str
    detail: str


def statuses(
    module: ConformanceModule, outcomes: Mapping[str, str] | None = None
) -> list[MethodStatus]:
    """Each upstream method's status; ``outcomes`` (node -> pytest outcome) marks failures."""
    upstream = module.upstream
    assert upstream is not None
    by_method: dict[str, list[tuple[ConformanceTest, Reexpression]]] = {}
    for test in module.tests:
        for claim in test.claims:
            by_method.setdefault(claim.method, []).append((test, claim))
    result = []
    for method in upstream.methods:
        if method in upstream.not_applicable:
            result.append(MethodStatus(method, NOT_APPLICABLE, upstream.not_applicable[method]))
            continue
        pairs = by_method.get(method, [])
        tests = ", ".join(f"`{test.name}`" for test, _ in pairs)
        failed = outcomes is not None and any(
            outcomes.get(test.node) in ("failed", "error") for test, _ in pairs
        )
        differs = [claim.differs for _, claim in pairs if claim.differs]
        defects = [test.xfail for test, _ in pairs if test.xfail]
        if failed:
            result.append(MethodStatus(method, FAILS, tests))
        elif differs:
            result.append(MethodStatus(method, DIFFERS, f"{tests}: {differs[0]}"))
        elif defects:
            result.append(MethodStatus(method, DEFECT, f"{tests}: {defects[0]}"))
        elif pairs:
            result.append(MethodStatus(method, PASSES, tests))
        else:
            result.append(MethodStatus(method, "unaccounted", ""))
    return result


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


COLUMNS = (PASSES, DIFFERS, DEFECT, FAILS, NOT_APPLICABLE)


def render(
    modules: Iterable[ConformanceModule],
    outcomes: Mapping[str, str] | None = None,
    gaps: Iterable[Gap] = GAPS,
) -> str:
    """The fidelity page for ``modules``, then the differences found outside them."""
    declared = [module for module in modules if module.upstream is not None]
    order = sorted(declared, key=lambda m: (m.upstream.area, m.upstream.name))  # type: ignore[union-attr]
    per_module = {module.file: statuses(module, outcomes) for module in order}
    areas: dict[str, list[ConformanceModule]] = {}
    for module in order:
        areas.setdefault(module.upstream.area, []).append(module)  # type: ignore[union-attr]

    lines = [
        "# Fidelity: brokerlab against the brokers' own tests",
        "",
        "<!-- Generated by `python -m pytest tests/conformance --fidelity-write`; do not edit. -->",
        "",
        "Each upstream test class below is re-expressed, method by method, in `tests/conformance/`"
        " (one module per class, each test naming the upstream repository, file, commit and"
        " method in its docstring). A method **passes** when brokerlab behaves as the upstream"
        " test asserts; a **documented difference** is deliberate, with its reason and evidence;"
        " a **known defect** is a test of the upstream behaviour that fails today and is marked"
        " so; **not applicable** methods test what brokerlab does not model, for the reason"
        " given. Where the brokers' release lines differ, a class runs under the ready profile"
        " that claims its line.",
        "",
        "## Totals",
        "",
        "| Area | Classes | Methods | Re-expressed | "
        + " | ".join(c.capitalize() for c in COLUMNS)
        + " |",
        "|---|--:|--:|--:|" + "--:|" * len(COLUMNS),
    ]
    grand = dict.fromkeys(("classes", "methods", "reexpressed", *COLUMNS), 0)
    for area, members in areas.items():
        counts = dict.fromkeys(grand, 0)
        counts["classes"] = len(members)
        for module in members:
            for status in per_module[module.file]:
                counts["methods"] += 1
                counts[status.status] = counts.get(status.status, 0) + 1
                if status.status != NOT_APPLICABLE:
                    counts["reexpressed"] += 1
        for key in grand:
            grand[key] += counts.get(key, 0)
        lines.append(
            f"| {area} | {counts['classes']} | {counts['methods']} | {counts['reexpressed']} | "
            + " | ".join(str(counts.get(c, 0)) for c in COLUMNS)
            + " |"
        )
    lines.append(
        f"| **All** | {grand['classes']} | {grand['methods']} | {grand['reexpressed']} | "
        + " | ".join(str(grand[c]) for c in COLUMNS)
        + " |"
    )
    for area, members in areas.items():
        lines += ["", f"## {area}"]
        for module in members:
            up = module.upstream
            assert up is not None
            lines += [
                "",
                f"### {up.name}",
                "",
                f"[`{up.path}`]({up.url}) in {up.repo} at `{up.commit[:12]}`, {up.line} line;"
                f" re-expressed in `tests/conformance/{module.file}`"
                + (f", under the ready profile `{up.profile}`." if up.profile else "."),
            ]
            if up.note:
                lines += ["", _cell(up.note)]
            lines += [
                "",
                "| Upstream method | Status | brokerlab test, or reason |",
                "|---|---|---|",
            ]
            for status in per_module[module.file]:
                lines.append(f"| `{status.method}` | {status.status} | {_cell(status.detail)} |")
    found = list(gaps)
    if found:
        lines += [
            "",
            "## Differences found outside these tests",
            "",
            "Reviews of the brokers' code beyond their tests (`tests/conformance/_gaps.py`):",
            "",
            "| Area | Upstream | brokerlab | When it matters |",
            "|---|---|---|---|",
        ]
        for gap in found:
            lines.append(
                f"| {gap.area} | {_cell(gap.upstream)} | {_cell(gap.brokerlab)} "
                f"| {_cell(gap.matters)} |"
            )
    return "\n".join(lines) + "\n"
