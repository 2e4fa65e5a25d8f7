"""The suite accounts for every upstream method, and docs/fidelity.md says what it declares."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest
from _conformance import UpstreamClass, reexpresses
from _fidelity import (
    DEFECT,
    DIFFERS,
    NOT_APPLICABLE,
    PAGE,
    PASSES,
    _load,
    collect,
    problems,
    render,
)
from _gaps import Gap

TOY = UpstreamClass(
    name="ToyTest",
    area="Toys",
    repo="apache/pulsar",
    path="src/test/java/ToyTest.java",
    commit="0" * 40,
    methods=("a", "b", "c", "d"),
    not_applicable={"d": "threads"},
)


def test_every_upstream_method_is_accounted_for() -> None:
    """Each declared method is re-expressed or not applicable; each test claims a method."""
    assert problems(collect()) == []


def test_the_page_is_current() -> None:
    """docs/fidelity.md is what the suite declares (regenerate with --fidelity-write)."""
    assert PAGE.read_text(encoding="utf-8") == render(collect()), (
        "docs/fidelity.md is stale: python -m pytest tests/conformance --fidelity-write"
    )


def test_reexpresses_rejects_unknown_and_not_applicable_methods() -> None:
    """A claim on a method the class lacks, or declared not applicable, is an error at import."""
    with pytest.raises(ValueError, match="no test method 'z'"):
        reexpresses(TOY, "z")
    with pytest.raises(ValueError, match="declared not applicable"):
        reexpresses(TOY, "d")


def _toy_module(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "test_toy.py"
    header = f"""
        import pytest
        from _conformance import UpstreamClass, reexpresses
        UPSTREAM = UpstreamClass(name="ToyTest", area="Toys", repo="apache/pulsar",
            path="src/test/java/ToyTest.java", commit="{"0" * 40}",
            methods=("a", "b", "c", "d"), not_applicable={{"d": "threads"}})
    """
    path.write_text(textwrap.dedent(header) + textwrap.dedent(body), encoding="utf-8")
    return path


def test_statuses_and_totals_follow_the_declarations(tmp_path: Path) -> None:
    """Passing, deliberate difference, known defect and not applicable each land in their row."""
    path = _toy_module(
        tmp_path,
        """
        @reexpresses(UPSTREAM, "a")
        def test_a():
            '''A passes.'''

        @reexpresses(UPSTREAM, "b", differs="brokerlab rounds up (see X)")
        def test_b():
            '''B differs.'''

        @pytest.mark.xfail(strict=True, reason="#24 item 1")
        @reexpresses(UPSTREAM, "c")
        def test_c():
            '''C is a defect.'''
        """,
    )
    modules = collect([path])
    assert problems(modules) == []
    page = render(modules)
    assert f"| `a` | {PASSES} | `test_a` |" in page
    assert f"| `b` | {DIFFERS} | `test_b`: brokerlab rounds up (see X) |" in page
    assert f"| `c` | {DEFECT} | `test_c`: #24 item 1 |" in page
    assert f"| `d` | {NOT_APPLICABLE} | threads |" in page
    assert "| Toys | 1 | 4 | 3 | 1 | 1 | 1 | 0 | 1 |" in page
    doc = inspect.getdoc(_load(path).test_a) or ""
    assert doc.startswith("A passes.\n\nRe-expresses apache/pulsar src/test/java/ToyTest.java @ ")
    assert doc.endswith(": ToyTest.a.")
    failed = render(modules, {"test_toy.py::test_a": "failed"})
    assert "| `a` | fails | `test_a` |" in failed
    gap = Gap("Toys", "Upstream rounds | up.", "brokerlab rounds down.", "Always.")
    with_gap = render(modules, gaps=[gap])
    assert with_gap.endswith(
        "| Toys | Upstream rounds \\| up. | brokerlab rounds down. | Always. |\n"
    )
    assert "## Differences found outside these tests" not in render(modules, gaps=[])


def test_gaps_are_reported(tmp_path: Path) -> None:
    """An unaccounted method, an unclaimed test and a test without a docstring are named."""
    path = _toy_module(
        tmp_path,
        """
        @reexpresses(UPSTREAM, "a")
        def test_a():
            pass

        def test_extra():
            '''Says what it checks.'''
        """,
    )
    found = problems(collect([path]))
    assert "test_toy.py::test_a: has no docstring of its own saying what it checks" in found
    assert "test_toy.py::test_extra: re-expresses no upstream method (use @reexpresses)" in found
    assert any("ToyTest.b is neither re-expressed" in line for line in found)
    assert any("ToyTest.c is neither re-expressed" in line for line in found)
