"""``--fidelity-write``: rewrite ``docs/fidelity.md`` from this run's conformance outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_OUTCOMES: dict[str, str] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fidelity-write",
        action="store_true",
        help="rewrite docs/fidelity.md from the conformance suite's declarations and outcomes",
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path, _, name = report.nodeid.partition("::")
    if Path(path).parent.name != "conformance":
        return
    node = f"{Path(path).name}::{name.split('[', 1)[0]}"
    if report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif hasattr(report, "wasxfail"):
        outcome = "xfailed"
    elif report.when == "call":
        outcome = report.outcome
    else:
        return
    # A parametrised test fails when any of its cases fails.
    if _OUTCOMES.get(node) not in ("failed", "error"):
        _OUTCOMES[node] = outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not session.config.getoption("--fidelity-write"):
        return
    from _fidelity import PAGE, collect, problems, render

    modules = collect()
    found = problems(modules)
    if found:
        raise pytest.UsageError("cannot write docs/fidelity.md:\n" + "\n".join(found))
    PAGE.write_text(render(modules, _OUTCOMES), encoding="utf-8")
