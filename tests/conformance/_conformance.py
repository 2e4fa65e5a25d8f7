"""What the conformance suite re-expresses, and how a test says so.

Each ``test_*.py`` module here re-expresses one upstream test class. It declares the class once
(:class:`UpstreamClass`: repository, file, commit, every test method, the methods that do not
apply and why) and marks each test with :func:`reexpresses`, which names the upstream method and
writes the provenance into the test's docstring. ``docs/fidelity.md`` is generated from these
declarations and the tests' outcomes (see ``_fidelity.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import brokerlab
from brokerlab.profiles.loader import Profile

ROOT = Path(__file__).resolve().parents[2]

F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True)
class UpstreamClass:
    """One upstream test class: where it lives and what became of each of its methods.

    ``methods`` lists every test method of the file at ``commit``, in file order. A method in
    ``not_applicable`` is not re-expressed, for the reason given (JVM mechanics, threads,
    reference counting, faults the storage model does not inject, ...). ``line`` is the upstream
    release line the file belongs to; ``profile`` the ready profile that claims that line and
    under which the module's tests run (``None`` when the behaviour does not depend on one).
    """

    name: str
    area: str
    repo: str
    path: str
    commit: str
    methods: tuple[str, ...]
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    line: str = "master"
    profile: str | None = None
    note: str = ""

    @property
    def url(self) -> str:
        """The file on GitHub at the pinned commit."""
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}"

    @property
    def java_class(self) -> str:
        """The test class's simple name, from its file name."""
        return Path(self.path).stem


@dataclass(frozen=True)
class Reexpression:
    """A test's claim: it re-expresses ``method`` of ``upstream``.

    ``differs`` is set when brokerlab deliberately behaves otherwise: the test then asserts
    brokerlab's behaviour, and ``differs`` gives the reason and the upstream evidence.
    """

    upstream: UpstreamClass
    method: str
    differs: str | None = None


def reexpresses(
    upstream: UpstreamClass, method: str, *, differs: str | None = None
) -> Callable[[F], F]:
    """Mark a test as re-expressing ``upstream``'s test ``method`` (stack it for several).

    The test keeps its own docstring (the scenario in brokerlab's words); the provenance line
    (repository, file, commit, method) is appended to it.
    """
    if method not in upstream.methods:
        raise ValueError(f"{upstream.java_class} has no test method {method!r}")
    if method in upstream.not_applicable:
        raise ValueError(f"{upstream.java_class}.{method} is declared not applicable")

    def mark(test: F) -> F:
        claims: list[Reexpression] = list(getattr(test, "__reexpresses__", ()))
        claims.insert(0, Reexpression(upstream, method, differs))
        if not hasattr(test, "__scenario__"):
            test.__scenario__ = inspect.cleandoc(test.__doc__ or "")  # type: ignore[attr-defined]
        test.__reexpresses__ = tuple(claims)  # type: ignore[attr-defined]
        provenance = (
            f"Re-expresses {upstream.repo} {upstream.path} @ {upstream.commit}: "
            f"{upstream.java_class}.{method}."
        )
        if differs:
            provenance += f" Deliberate difference: {differs}"
        test.__doc__ = f"{(test.__doc__ or '').rstrip()}\n\n{provenance}"
        return test

    return mark


def ready_profile(upstream: UpstreamClass) -> Profile:
    """The ready profile that claims ``upstream``'s release line, with every installed plugin."""
    if upstream.profile is None:
        raise ValueError(f"{upstream.name} names no ready profile")
    return brokerlab.load_profile(ROOT / "profiles" / f"{upstream.profile}.conf", mode="strict")
