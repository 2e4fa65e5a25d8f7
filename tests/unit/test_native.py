"""The compiled modules (``brokerlab._native``, ``hatch_build.py``): complete builds, the same
results as the Python sources, and a guard that never lets an edited source run stale code."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brokerlab._native import (
    COMPILED,
    MANIFEST,
    installed_roots,
    source_digests,
    source_path,
    stale_modules,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def compiled_build() -> None:
    """The install compiled the listed modules: skipped where it could not, but CI must."""
    if (ROOT / "framework" / "brokerlab" / MANIFEST).exists():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("this install compiled nothing: CI's install must compile (see hatch_build.py)")
    pytest.skip("this install compiled nothing (no manifest)")


needs_build = pytest.mark.usefixtures("compiled_build")

# Imports every compiled module, then prints which of them loaded compiled.
PROBE = (
    "import importlib, json, brokerlab._native as n\n"
    "for m in n.COMPILED: importlib.import_module(m)\n"
    "print(json.dumps(n.compiled_now()))\n"
)


def python(
    code: str, *, pure: bool, path: list[Path] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    env["BROKERLAB_PURE_PYTHON"] = "1" if pure else "0"
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_every_listed_module_has_a_source_under_its_root() -> None:
    roots = installed_roots()
    assert set(roots) == {"brokerlab", "brokerlab_plugins"}
    for module in COMPILED:
        assert source_path(module, roots).is_file(), module


def test_stale_modules_names_exactly_the_edited_sources(tmp_path: Path) -> None:
    roots = {"brokerlab": tmp_path / "framework", "brokerlab_plugins": tmp_path / "plugins"}
    modules = ("brokerlab.broker.events", "brokerlab_plugins.pip430_cache.queue")
    for module in modules:
        path = source_path(module, roots)
        path.parent.mkdir(parents=True)
        path.write_text(f"# {module}\n")
    manifest = tmp_path / MANIFEST
    assert stale_modules(roots, manifest) == []  # no build, nothing stale
    manifest.write_text(json.dumps(source_digests(roots, modules)))
    assert stale_modules(roots, manifest) == []
    queue = source_path(modules[1], roots)
    queue.write_text(queue.read_text() + "x = 1\n")
    assert stale_modules(roots, manifest) == [modules[1]]
    source_path(modules[0], roots).unlink()  # renamed away since the build
    assert stale_modules(roots, manifest) == list(modules)
    manifest.write_text("{not json")
    assert stale_modules(roots, manifest) == list(COMPILED)


VERSION = "import sys, brokerlab.cli as c\nsys.exit(c.main(['--version']))\n"


def test_pure_python_runs_every_listed_module_from_its_source() -> None:
    result = python(PROBE, pure=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    version = python(VERSION, pure=True).stdout
    assert f"{len(COMPILED)} hot modules run from source: BROKERLAB_PURE_PYTHON is set" in version


@needs_build
def test_a_build_loads_every_listed_module_compiled() -> None:
    """Never half a build: compiled modules reach into each other's objects directly."""
    result = python(PROBE, pure=False)
    assert result.returncode == 0, result.stderr
    assert sorted(json.loads(result.stdout)) == sorted(COMPILED)
    assert "RuntimeWarning" not in result.stderr
    assert (
        f"({len(COMPILED)} hot modules compiled with mypyc)" in python(VERSION, pure=False).stdout
    )


@needs_build
def test_an_edited_source_sends_every_module_back_to_the_sources(tmp_path: Path) -> None:
    """A copy of the built tree with one source edited, as after an edit in an editable install."""
    framework, plugins = tmp_path / "framework", tmp_path / "plugins"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "framework", framework, ignore=ignore)
    shutil.copytree(ROOT / "plugins", plugins, ignore=ignore)
    copied = python(PROBE, pure=False, path=[framework, plugins])
    assert copied.returncode == 0, copied.stderr
    assert sorted(json.loads(copied.stdout)) == sorted(COMPILED)  # the copy is a whole build
    edited = plugins / "brokerlab_plugins" / "pip430_cache" / "queue.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    result = python(PROBE, pure=False, path=[framework, plugins])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert "brokerlab_plugins.pip430_cache.queue changed since the install compiled it" in (
        result.stderr
    )
    version = python(VERSION, pure=False, path=[framework, plugins]).stdout
    assert "hot modules run from source: edited since the build" in version


def short(workload: str, tmp_path: Path, **values: int) -> Path:
    """A built-in workload with some top-level numbers cut down, to run in seconds."""
    text = (ROOT / "plugins" / "brokerlab_plugins" / "workloads" / f"{workload}.toml").read_text()
    for key, value in values.items():
        text, count = re.subn(rf"(?m)^{key} = \d+", f"{key} = {value}", text)
        assert count >= 1, key
    path = tmp_path / f"{workload}.toml"
    path.write_text(text)
    return path


@needs_build
@pytest.mark.parametrize(
    ("profile", "workload", "cuts"),
    [
        ("pulsar-4.2.conf", "catch-up-fanout", {"duration_s": 5, "backlog": 3000, "drain_s": 20}),
        ("pulsar-4.0-legacy.conf", "catch-up-fanout", {"duration_s": 5, "backlog": 3000}),
        ("pulsar-5.0.conf", "reconnect-storm", {"duration_s": 45}),
        ("baseline.conf", "ack-holes-restart", {"duration_s": 70}),
    ],
)
def test_compiled_and_source_runs_give_the_same_json(
    profile: str, workload: str, cuts: dict[str, int], tmp_path: Path
) -> None:
    path = short(workload, tmp_path, **cuts)
    code = (
        "import sys, brokerlab.cli as c\n"
        f"sys.exit(c.main(['run', '--profile', {str(ROOT / 'profiles' / profile)!r}, "
        f"'--workload', {str(path)!r}, '--seed', '3', '--json']))\n"
    )
    compiled, source = python(code, pure=False), python(code, pure=True)
    assert compiled.returncode == 0, compiled.stderr
    assert source.returncode == 0, source.stderr
    built, interpreted = json.loads(compiled.stdout), json.loads(source.stdout)
    assert built["metrics"]["delivered"] > 0
    # The provenance says what ran compiled; everything else is the same, byte for byte.
    assert built.pop("compiled")["entry_cache"] != []
    assert set(map(tuple, interpreted.pop("compiled").values())) == {()}
    assert json.dumps(built) == json.dumps(interpreted)
