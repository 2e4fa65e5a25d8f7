"""The wheel as a user installs it: the ready profiles travel with the package and load by name."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

PROBE = """
import brokerlab
from brokerlab.profiles.ready import ready_profiles
print(brokerlab.__file__)
print(",".join(ready_profiles()))
print(brokerlab.load_profile("pulsar-4.2").path)
print(brokerlab.load_profile("mine.conf").get("managedLedgerCacheSizeMB"))
print(brokerlab.load_profile("mine.conf").get("cacheEvictionByExpectedReadCount"))
"""


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (interpreted: no compiler needed), unpacked."""
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, BROKERLAB_PURE_PYTHON="1")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        env=env,
        timeout=600,
    )
    (wheel,) = out.glob("brokerlab-*.whl")
    target = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def test_a_wheel_loads_ready_profiles_by_name_away_from_any_checkout(
    unpacked: Path, tmp_path: Path
) -> None:
    """Run from a folder outside the checkout with only the unpacked wheel ahead on the path: the
    package holds the ready profiles, ``pulsar-4.2`` loads by name, and a user's profile includes
    it by name (``sim.include=pulsar-4.2``) and overrides one key."""
    (tmp_path / "mine.conf").write_text(
        "sim.include=pulsar-4.2\nmanagedLedgerCacheSizeMB=64\n", encoding="utf-8"
    )
    env = dict(os.environ, PYTHONPATH=str(unpacked), BROKERLAB_PURE_PYTHON="1")
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    package, names, path, size, expected_reads = result.stdout.splitlines()
    assert Path(package).is_relative_to(unpacked)
    assert {"pulsar-4.0-legacy", "pulsar-4.2", "pulsar-5.0", "diagnostics/pip448-draft"} <= set(
        names.split(",")
    )
    assert "reference" not in names.split(",")
    assert Path(path) == unpacked / "brokerlab" / "ready_profiles" / "pulsar-4.2.conf"
    assert (size, expected_reads) == ("64", "True")


def test_the_wheel_carries_the_new_plugin_templates(unpacked: Path) -> None:
    """``brokerlab new-plugin`` renders templates shipped as package data (``*.tmpl``)."""
    templates = unpacked / "brokerlab" / "scaffold" / "templates"
    shipped = {p.relative_to(templates).as_posix() for p in templates.rglob("*.tmpl")}
    source = ROOT / "framework" / "brokerlab" / "scaffold" / "templates"
    assert shipped == {p.relative_to(source).as_posix() for p in source.rglob("*.tmpl")}
    assert "common/pyproject.toml.tmpl" in shipped


def test_the_wheel_carries_the_console_scripts_entry_module(unpacked: Path, tmp_path: Path) -> None:
    """The ``brokerlab`` script imports ``_brokerlab_entry`` (a top-level module, so that a
    Ctrl-C while the package imports is quiet): the wheel ships it and declares it."""
    assert (unpacked / "_brokerlab_entry.py").is_file()
    (info,) = unpacked.glob("brokerlab-*.dist-info")
    assert "brokerlab = _brokerlab_entry:main" in (info / "entry_points.txt").read_text()
    env = dict(os.environ, PYTHONPATH=str(unpacked), BROKERLAB_PURE_PYTHON="1")
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from _brokerlab_entry import main; sys.exit(main())",
         "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout.startswith("brokerlab "), result.stderr
