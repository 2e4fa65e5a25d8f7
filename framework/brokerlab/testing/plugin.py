"""The ``brokerlab`` pytest plugin (entry point ``pytest11``): fixtures for plugin authors.

Active in every pytest run where brokerlab is installed; it adds two options and four fixtures,
and a header line naming the profile the kit runs under (with its fingerprint) and the installed
plugin distributions, so a test log says what it tested.

Options:

* ``--brokerlab-profile PATH``: the profile the fixtures and contract suites run under. Without
  it the ``BROKERLAB_PROFILE`` environment variable is used, and without that the defaults.
* ``--brokerlab-seed N``: the seed ``simulate`` uses unless given one (default 0).

Fixtures:

* ``brokerlab_host``: a fresh :class:`~brokerlab.host.PluginHost` with the installed plugins.
  Override it to add modules that are not installed: ``PluginHost(modules=["my_plugin"])``.
* ``brokerlab_profile``: the chosen profile, loaded with ``brokerlab_host``'s plugin settings.
* ``brokerlab_seed``: the seed from ``--brokerlab-seed``.
* ``simulate``: ``simulate(workload, *, seed=None, overrides=None) -> Result`` runs a workload (a
  :class:`~brokerlab.workloads.WorkloadSpec`, a built-in name or a TOML path) under
  ``brokerlab_profile`` plus ``overrides`` (``--set`` values) with ``brokerlab_host``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from brokerlab.host import PluginHost
    from brokerlab.profiles import Profile
    from brokerlab.simulation import Result
    from brokerlab.testing._isolated import FreshRun
    from brokerlab.workloads import WorkloadDocument

__all__ = [
    "PROFILE_ENV",
    "brokerlab_host",
    "brokerlab_profile",
    "brokerlab_seed",
    "chosen_profile_path",
    "pytest_addoption",
    "pytest_report_header",
    "simulate",
]

PROFILE_ENV = "BROKERLAB_PROFILE"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("brokerlab", "brokerlab plugin contracts")
    group.addoption(
        "--brokerlab-profile",
        metavar="PATH",
        default=None,
        help=f"profile for the brokerlab fixtures and contract suites (default: ${PROFILE_ENV}, "
        "else the defaults)",
    )
    group.addoption(
        "--brokerlab-seed",
        metavar="N",
        type=int,
        default=0,
        help="seed the brokerlab 'simulate' fixture uses by default (default 0)",
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """``brokerlab profile: PATH (from ...), fingerprint F`` and ``brokerlab plugins: D V, ...``.

    A profile that does not load is said so here (the fixtures raise its error in each test that
    uses them); the session goes on.
    """
    from brokerlab import load_profile
    from brokerlab.host import PluginHost

    path = chosen_profile_path(config)
    if path is None:
        where = "the defaults"
    elif config.getoption("brokerlab_profile", default=None):
        where = f"{path} (from --brokerlab-profile)"
    else:
        where = f"{path} (from ${PROFILE_ENV})"
    try:
        host = PluginHost()
        plugins = ", ".join(f"{dist} {version}" for dist, version in host.distributions().items())
        fingerprint = load_profile(path, host=host).fingerprint()[:12]
    except Exception as exc:  # a header must not stop the session; the fixtures will raise
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        return [f"brokerlab profile: {where}: does not load: {reason}"]
    return [
        f"brokerlab profile: {where}, fingerprint {fingerprint}",
        f"brokerlab plugins: {plugins}",
    ]


def chosen_profile_path(config: pytest.Config) -> Path | None:
    """The profile path from ``--brokerlab-profile``, else ``$BROKERLAB_PROFILE``, else None."""
    option = config.getoption("brokerlab_profile", default=None)
    chosen = option or os.environ.get(PROFILE_ENV) or None
    return None if chosen is None else Path(str(chosen))


@pytest.fixture
def brokerlab_host() -> PluginHost:
    """A fresh plugin host: the installed plugins (entry-point group ``brokerlab``), minus those
    named in ``BROKERLAB_DISABLE_PLUGINS``."""
    from brokerlab.host import PluginHost

    return PluginHost()


@pytest.fixture
def brokerlab_profile(request: pytest.FixtureRequest, brokerlab_host: PluginHost) -> Profile:
    """The profile chosen by ``--brokerlab-profile`` or ``$BROKERLAB_PROFILE`` (the defaults when
    neither is set), validated with every plugin key ``brokerlab_host`` knows."""
    from brokerlab import load_profile

    return load_profile(chosen_profile_path(request.config), host=brokerlab_host)


@pytest.fixture
def brokerlab_seed(request: pytest.FixtureRequest) -> int:
    """The default seed of ``simulate`` (``--brokerlab-seed``, 0 when not given)."""
    return int(request.config.getoption("brokerlab_seed", default=0))


class _Simulate:
    """The callable behind the ``simulate`` fixture."""

    def __init__(self, host: PluginHost, profile: Profile, seed: int) -> None:
        self.host = host
        self.profile = profile
        self.seed = seed

    def __call__(
        self,
        workload: WorkloadDocument | str | Path,
        *,
        seed: int | None = None,
        overrides: Mapping[str, str] | Iterable[str] | None = None,
    ) -> Result:
        """Run ``workload`` under the fixture's profile plus ``overrides``; one Result."""
        from brokerlab.simulation import simulate as run

        profile = self.profile if overrides is None else self.profile.with_overrides(overrides)
        chosen = str(workload) if isinstance(workload, Path) else workload
        return run(profile, chosen, self.seed if seed is None else seed, host=self.host)

    def in_fresh_interpreter(
        self,
        workload: WorkloadDocument | str | Path,
        *,
        seed: int | None = None,
        overrides: Mapping[str, str] | Iterable[str] | None = None,
    ) -> FreshRun:
        """The same run in a new interpreter with another ``PYTHONHASHSEED`` (the host rebuilt
        from how it was built, the profile from its values): its result document and hash seed."""
        from brokerlab.testing._isolated import run_in_fresh_interpreter

        profile = self.profile if overrides is None else self.profile.with_overrides(overrides)
        chosen = str(Path(workload).resolve()) if isinstance(workload, Path) else workload
        return run_in_fresh_interpreter(
            self.host, profile, chosen, self.seed if seed is None else seed
        )


@pytest.fixture
def simulate(
    brokerlab_host: PluginHost, brokerlab_profile: Profile, brokerlab_seed: int
) -> _Simulate:
    """``simulate(workload, *, seed=None, overrides=None) -> Result``: one simulation of
    ``workload`` (a spec, a built-in workload name or a TOML path) under ``brokerlab_profile``
    with ``overrides`` (``{"key": "value"}`` or ``["key=value"]``) and ``brokerlab_seed``."""
    return _Simulate(brokerlab_host, brokerlab_profile, brokerlab_seed)
