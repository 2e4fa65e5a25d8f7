"""``brokerlab new-plugin`` end to end: every kind generated, installed with no package index
(brokerlab and its dependencies come from this environment), its tests passing, and the plugins
listed by ``brokerlab plugins``.

One virtual environment is layered over this one (a ``.pth`` adds this environment's
site-packages, .pth files included, so the editable brokerlab counts as installed): ``python -m
venv --system-site-packages`` would layer over the base interpreter, not over this environment.
Only hatchling and editables, to build the plugins without build isolation, come from an index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from brokerlab.scaffold import KINDS, Kind, generate

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def probe(kind: Kind) -> str:
    """The name each kind is generated under: ``probe-entry-cache``, ``probe-workload``..."""
    return "probe-" + kind.point.replace("_", "-")


def environment() -> dict[str, str]:
    """This checkout's sources first (whatever brokerlab the environment has installed), pure
    Python, no BROKERLAB_* setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "framework"), str(ROOT / "plugins")])
    env["BROKERLAB_PURE_PYTHON"] = "1"
    return env


def layered_venv(folder: Path) -> Path:
    """A venv without pip whose interpreter also sees this environment's packages (and pip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parents = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in parents)
    Path(site, "_brokerlab_parent.pth").write_text(lines, encoding="utf-8")
    return python


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Every kind generated (:func:`probe` names it) and installed (editable) into one layered venv,
    offline: ``--no-index``, so pip must find brokerlab installed already."""
    root = tmp_path_factory.mktemp("new-plugin")
    python = layered_venv(root / "venv")
    env = environment()
    tools = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "hatchling", "editables"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if tools.returncode != 0:
        pytest.skip(f"no index to fetch hatchling from: {tools.stderr.strip()[-300:]}")
    folders = [generate(probe(kind), kind.name, root / kind.name).folder for kind in KINDS.values()]
    editable = [arg for folder in folders for arg in ("-e", str(folder))]
    install = [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation"]
    done = subprocess.run(
        [*install, *editable], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return python, folders


def test_the_generated_plugins_are_listed_by_brokerlab_plugins(
    installed: tuple[Path, list[Path]],
) -> None:
    python, _ = installed
    listed = subprocess.run(
        [str(python), "-m", "brokerlab", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        check=True,
    )
    document = json.loads(listed.stdout)
    for kind in KINDS.values():
        by_name = {row["name"]: row for row in document["extension_points"][kind.point]}
        row = by_name.get(probe(kind))
        assert row is not None, f"{kind.name}: {sorted(by_name)}"
        assert (row["distribution"], row["version"]) == (probe(kind), "0.1.0")
    namespaces = {row["namespace"] for row in document["settings"]}
    owned = {f"sim.{probe(k)}." for k in KINDS.values() if k.settings_key is not None}
    assert owned <= namespaces


def test_every_kind_passes_its_generated_tests_under_a_ready_profile(
    installed: tuple[Path, list[Path]],
) -> None:
    """One pytest run over every generated package's tests (the contract kit's suites and the
    plugins' own), under ``BROKERLAB_PROFILE=pulsar-4.2`` as the generated tox.ini sets it."""
    python, folders = installed
    env = dict(environment(), BROKERLAB_PROFILE="pulsar-4.2")
    tests = [str(folder / "tests") for folder in folders]
    run = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--import-mode=importlib", *tests],
        capture_output=True,
        text=True,
        env=env,
        cwd=folders[0].parent,
        timeout=1200,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "brokerlab profile: pulsar-4.2 (from $BROKERLAB_PROFILE)" in run.stdout
    for kind in KINDS.values():
        assert f"{probe(kind)} 0.1.0" in run.stdout  # the header's installed plugins


def test_the_entry_caches_own_metric_reaches_parquet_and_the_report(
    installed: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """A matrix of two ready profiles by name on local Spark, each with the generated entry cache
    and with pip430: the generated cache's own metric (declared in its ``metrics.py``) is a
    Parquet column, measured where the cache ran and null where it did not, and the report and
    ``matrix.json`` carry its declaration."""
    python, _ = installed
    out = tmp_path / "out"
    metric = "probe_entry_cache_refused"
    env = dict(environment(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(python))
    args = [str(python), "-m", "brokerlab", "matrix",
            "--profile", "pulsar-4.2", "--profile", "pulsar-4.0-legacy",
            "--set", "sim.entryCache=probe-entry-cache,pip430",
            "--workload", "tailing", "--seeds", "1", "--scale", "0.05",
            "--out", str(out), "--conf", "spark.ui.enabled=false"]  # fmt: skip
    run = subprocess.run(
        args,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    import pandas as pd

    frame = pd.read_parquet(out / "results")
    assert len(frame) == 4 and set(frame["status"]) == {"ok"}
    cache = frame["plugins"].map(lambda p: json.loads(p)["entry_cache"])
    assert frame.loc[cache == "probe-entry-cache", metric].notna().all()
    assert frame.loc[cache == "pip430", metric].isna().all()  # not reported: null, never 0
    recorded = json.loads((out / "matrix.json").read_text(encoding="utf-8"))["metrics"][metric]
    assert (recorded["unit"], recorded["kind"], recorded["owner"]) == (
        "entries",
        "counter",
        "probe-entry-cache",
    )
    assert metric in (out / "report.html").read_text(encoding="utf-8")


def test_a_hash_dependent_variant_of_the_generated_cache_fails_its_determinism_test(
    installed: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The author's own mistake, planted: the generated cache admits an add only where
    ``hash((topic, position))`` is even (a sample "by hash"). A string's hash is salted per
    interpreter, so one process gives the same result twice; the kit's determinism test runs the
    second simulation in a fresh interpreter with another ``PYTHONHASHSEED`` and fails, naming
    the metrics that differ."""
    python, _ = installed
    folder = generate("probe-hashed", "entry-cache", tmp_path / "hashed").folder
    cache = folder / "probe_hashed" / "cache.py"
    source = cache.read_text(encoding="utf-8")
    admit = "        return self._admit((topic, position[0], position[1]), size)\n"
    assert source.count(admit) == 1
    planted = "        if hash((topic, position)) % 2:\n            return False\n" + admit
    cache.write_text(source.replace(admit, planted), encoding="utf-8")
    install = [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation"]
    env = environment()
    done = subprocess.run(
        [*install, "-e", str(folder)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--import-mode=importlib",
         "-k", "deterministically", str(folder / "tests")],
        capture_output=True,
        text=True,
        env=dict(env, BROKERLAB_PROFILE="pulsar-4.2"),
        cwd=folder,
        timeout=900,
        check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-4000:] + run.stderr[-2000:]
    assert "1 failed" in run.stdout, run.stdout[-4000:]
    assert "fresh interpreter with PYTHONHASHSEED=" in run.stdout
    assert "metrics that differ: " in run.stdout and "cache_" in run.stdout
