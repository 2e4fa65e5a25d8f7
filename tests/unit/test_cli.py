"""The ``brokerlab`` command, run as a real subprocess: output, exit codes, one clear error each."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "pulsar"

# A profile whose every choice resolves to an installed record.
RESOLVABLE = """\
sim.entryCache=disabled
delayedDeliveryEnabled=false
sim.ackStatePersister=unlimited
"""


def brokerlab(
    *args: str, env: dict[str, str] | None = None, module: str = "brokerlab"
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# Each case: files to write (the first is checked), extra CLI args, and the fragments the one error
# message must contain.
MALFORMED: dict[str, tuple[dict[str, str | bytes], list[str], list[str]]] = {
    "bad-integer": (
        {"p.conf": "sim.entryCache=disabled\nmanagedLedgerCacheSizeMB=lots\n"},
        [],
        ["p.conf:2", "managedLedgerCacheSizeMB", "'lots'", "integer"],
    ),
    "negative-size": (
        {"p.conf": "sim.entryCache=disabled\n\nmanagedLedgerCacheSizeMB=-5\n"},
        [],
        ["p.conf:3", "managedLedgerCacheSizeMB", "'-5'", ">= 0"],
    ),
    "ratio-above-one": (
        {"p.conf": "sim.entryCache=disabled\nmanagedLedgerCacheEvictionWatermark=1.5\n"},
        [],
        ["p.conf:2", "managedLedgerCacheEvictionWatermark", "'1.5'", "from 0.0 to 1.0"],
    ),
    "ratio-with-comma": (
        {"p.conf": "sim.entryCache=disabled\nmanagedLedgerCacheEvictionWatermark=0,9\n"},
        [],
        ["p.conf:2", "managedLedgerCacheEvictionWatermark", "'0,9'"],
    ),
    "bad-boolean": (
        {"p.conf": "sim.entryCache=disabled\ncacheEvictionByExpectedReadCount=maybe\n"},
        [],
        ["p.conf:2", "cacheEvictionByExpectedReadCount", "'maybe'", "true or false"],
    ),
    "pip299-below-range": (
        {"p.conf": "sim.entryCache=disabled\nmanagedLedgerMaxAckStateInBytesToPersist=100\n"},
        [],
        ["p.conf:2", "managedLedgerMaxAckStateInBytesToPersist", "'100'", "1024", "5242880"],
    ),
    "negative-tick": (
        {"p.conf": "sim.entryCache=disabled\ndelayedDeliveryTickTimeMillis=-1\n"},
        [],
        ["p.conf:2", "delayedDeliveryTickTimeMillis", "'-1'", ">= 1"],
    ),
    "unknown-pulsar-key": (
        {"p.conf": "sim.entryCache=disabled\nmanagedLedgerCacheSizeMb=10\n"},
        [],
        ["p.conf:2", "managedLedgerCacheSizeMb", "did you mean 'managedLedgerCacheSizeMB'"],
    ),
    "unknown-sim-key": (
        {"p.conf": "# cache\nsim.entryCahce=disabled\n"},
        [],
        ["p.conf:2", "sim.entryCahce", "did you mean 'sim.entryCache'"],
    ),
    "unknown-plugin-namespace": (
        {"p.conf": "sim.entryCache=disabled\nsim.nosuchplugin.size=3\n"},
        [],
        ["p.conf:2", "sim.nosuchplugin.size"],
    ),
    "unknown-entry-cache": (
        {"p.conf": RESOLVABLE.replace("sim.entryCache=disabled", "sim.entryCache=disabeld")},
        [],
        ["p.conf:1", "sim.entryCache", "'disabeld'", "allowed:", "did you mean 'disabled'"],
    ),
    "unknown-tracker-class": (
        {
            "p.conf": "sim.entryCache=disabled\n"
            "delayedDeliveryTrackerFactoryClassName=org.example.Nope\n"
        },
        [],
        ["p.conf:2", "delayedDeliveryTrackerFactoryClassName", "'org.example.Nope'", "allowed:"],
    ),
    "unknown-ack-persister": (
        {
            "p.conf": "sim.entryCache=disabled\n"
            "delayedDeliveryEnabled=false\n"
            "sim.ackStatePersister=nope\n"
        },
        [],
        ["p.conf:3", "sim.ackStatePersister", "'nope'", "allowed:"],
    ),
    "unknown-cursor-container": (
        {"p.conf": "sim.entryCache=disabled\nsim.cursorContainer=skiplist\n"},
        [],
        ["p.conf:2", "sim.cursorContainer", "'skiplist'", "allowed:"],
    ),
    "predicates-without-queue": (
        {"p.conf": RESOLVABLE + "sim.evictionPredicates=s3fifo\n"},
        [],
        ["p.conf:4", "sim.evictionPredicates", "does not consult eviction predicates"],
    ),
    "include-loop": (
        {"p.conf": "sim.include=q.conf\n", "q.conf": "sim.include=p.conf\n"},
        [],
        ["include", "p.conf", "q.conf"],
    ),
    "self-include": (
        {"p.conf": "sim.entryCache=disabled\nsim.include=p.conf\n"},
        [],
        ["p.conf:2", "include"],
    ),
    "missing-include": (
        {"p.conf": "sim.include=absent.conf\n"},
        [],
        ["p.conf:1", "absent.conf"],
    ),
    "bad-encoding": (
        {"p.conf": b"sim.entryCache=disabled\n# caf\xe9 in latin-1\n"},
        [],
        ["p.conf", "2", "UTF-8"],
    ),
    "bad-unicode-escape": (
        {"p.conf": "sim.entryCache=disabled\nsim.cursorContainer=\\u12G4\n"},
        [],
        ["p.conf:2", "\\u"],
    ),
    "set-without-equals": (
        {"p.conf": RESOLVABLE},
        ["--set", "managedLedgerCacheSizeMB"],
        ["--set", "managedLedgerCacheSizeMB", "key=value"],
    ),
    "set-out-of-range": (
        {"p.conf": RESOLVABLE},
        ["--set", "managedLedgerCacheEvictionWatermark=2"],
        ["--set", "managedLedgerCacheEvictionWatermark", "'2'", "from 0.0 to 1.0"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_profile_gives_one_clear_error_and_exit_2(tmp_path: Path, case: str) -> None:
    files, extra, fragments = MALFORMED[case]
    paths = [write(tmp_path, name, text) for name, text in files.items()]
    command = (
        ["profile", "show", str(paths[0]), *extra] if extra else ["profile", "check", str(paths[0])]
    )
    result = brokerlab(*command)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    first_line = result.stderr.splitlines()[0]
    assert first_line.startswith("brokerlab: error:")
    for fragment in fragments:
        assert fragment in result.stderr, f"{fragment!r} missing from: {result.stderr}"


def test_missing_profile_file(tmp_path: Path) -> None:
    result = brokerlab("profile", "check", str(tmp_path / "nope.conf"))
    assert result.returncode == 2
    assert "nope.conf" in result.stderr and "Traceback" not in result.stderr


def test_directory_instead_of_file(tmp_path: Path) -> None:
    result = brokerlab("profile", "show", str(tmp_path))
    assert result.returncode == 2
    assert str(tmp_path) in result.stderr and "Traceback" not in result.stderr


def test_usage_error_exits_2() -> None:
    result = brokerlab("profile", "frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_check_passes_a_resolvable_profile(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.conf", RESOLVABLE)
    result = brokerlab("profile", "check", str(path))
    assert result.returncode == 0, result.stderr
    assert "ok (strict" in result.stdout and "entry_cache=disabled" in result.stdout


def test_plugins_lists_every_extension_point_with_sources() -> None:
    result = brokerlab("plugins", "--json")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)["extension_points"]
    assert set(listing) == {
        "entry_cache",
        "eviction_predicate",
        "cursor_container",
        "delayed_delivery",
        "ack_state_persister",
        "workload",
        "simulator",
    }
    disabled = next(r for r in listing["entry_cache"] if r["name"] == "disabled")
    assert disabled["distribution"] == "brokerlab"
    # The framework's own broker model is listed with the framework as its source.
    pulsar = next(r for r in listing["simulator"] if r["name"] == "pulsar")
    assert pulsar["distribution"] == "brokerlab"


def test_pulsar_simulator_survives_disabling_every_plugin() -> None:
    blocked = {"BROKERLAB_DISABLE_PLUGINS": "baselines,workloads"}
    result = brokerlab("plugins", "--json", env=blocked)
    names = [r["name"] for r in json.loads(result.stdout)["extension_points"]["simulator"]]
    assert "pulsar" in names


def test_disable_env_removes_builtins_from_the_listing() -> None:
    result = brokerlab("plugins", "--json", env={"BROKERLAB_DISABLE_PLUGINS": "baselines"})
    names = [r["name"] for r in json.loads(result.stdout)["extension_points"]["entry_cache"]]
    assert "disabled" not in names


def test_p_module_adds_a_plugin(tmp_path: Path) -> None:
    write(
        tmp_path,
        "extra_cache_plugin.py",
        "from brokerlab import EntryCacheRecord, hookimpl\n"
        "@hookimpl\n"
        "def brokerlab_entry_caches():\n"
        "    yield EntryCacheRecord(name='extra', description='x', factory=lambda c: None)\n",
    )
    result = brokerlab("-p", "extra_cache_plugin", "plugins", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "extra" in result.stdout and "-p extra_cache_plugin" in result.stdout


def test_p_finds_a_module_in_the_current_folder_with_the_console_script(tmp_path: Path) -> None:
    """The installed ``brokerlab`` script (not ``python -m``, whose path starts with the current
    folder already) imports a ``-p`` module from the folder it runs in."""
    write(
        tmp_path,
        "here_plugin.py",
        "from brokerlab import EntryCacheRecord, hookimpl\n"
        "@hookimpl\n"
        "def brokerlab_entry_caches():\n"
        "    yield EntryCacheRecord(name='here', description='x', factory=lambda c: None)\n",
    )
    script = Path(sys.executable).with_name("brokerlab")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [str(script), "-p", "here_plugin", "plugins"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "here" in result.stdout and "-p here_plugin" in result.stdout


def test_plugin_that_raises_is_an_error_naming_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        "broken_plugin.py",
        "from brokerlab import hookimpl\n"
        "@hookimpl\n"
        "def brokerlab_entry_caches():\n"
        "    raise RuntimeError('boom')\n",
    )
    result = brokerlab("-p", "broken_plugin", "plugins", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2
    assert "broken_plugin" in result.stderr and "boom" in result.stderr


def test_internal_error_exits_1_with_traceback(tmp_path: Path) -> None:
    # A record whose aliases are not a tuple breaks the host's duplicate check: an internal error.
    write(
        tmp_path,
        "odd_plugin.py",
        "from brokerlab import EntryCacheRecord, hookimpl\n"
        "@hookimpl\n"
        "def brokerlab_entry_caches():\n"
        "    yield EntryCacheRecord(name='odd', description='d', aliases=None, factory=None)\n",
    )
    result = brokerlab("-p", "odd_plugin", "plugins", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "please report" in result.stderr


def test_show_json_reports_values_and_origins(tmp_path: Path) -> None:
    path = write(tmp_path, "p.conf", RESOLVABLE + "managedLedgerCacheSizeMB=64\n")
    result = brokerlab(
        "profile",
        "show",
        str(path),
        "--json",
        "--set",
        "dispatcherMaxReadBatchSize=7",
        env={"BROKERLAB_managedLedgerCacheSizeMB": "128"},
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["settings"]["dispatcherMaxReadBatchSize"] == 7
    assert shown["origins"]["dispatcherMaxReadBatchSize"] == "--set"
    assert shown["settings"]["managedLedgerCacheSizeMB"] == 128
    assert shown["origins"]["managedLedgerCacheSizeMB"].startswith("env")
    assert shown["plugins"]["entry_cache"] == "disabled"


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the checkout")
def test_show_real_broker_conf_and_its_unmodelled_keys() -> None:
    conf = FIXTURES / "broker.conf"
    shown = brokerlab("profile", "show", str(conf))
    assert shown.returncode == 0, shown.stderr
    assert "(lenient mode)" in shown.stdout
    assert "dispatcherMaxReadBatchSize=100" in shown.stdout
    unmodelled = brokerlab("profile", "show", str(conf), "--unmodelled")
    lines = [ln for ln in unmodelled.stdout.splitlines() if ln and not ln.startswith("#")]
    assert len(lines) > 300
    assert any(ln.startswith("brokerServicePort=") and "broker.conf:" in ln for ln in lines)


def test_a_key_wrong_only_in_case_is_ignored_with_a_warning(tmp_path: Path) -> None:
    conf = write(tmp_path, "typo.conf", "brokerShutdownTimeoutMs=1\nmanagedLedgerCacheSizeMb=64\n")
    result = brokerlab("profile", "check", str(conf))
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"brokerlab: warning: {conf}:2: key 'managedLedgerCacheSizeMb' is not modelled and is "
        "ignored, as Pulsar ignores it; did you mean 'managedLedgerCacheSizeMB'?\n"
    )


@pytest.mark.parametrize(
    ("persister", "key", "reader"),
    [
        ("range-count", "dispatcherPauseOnAckPersistentStateEnabled=false", "pip299"),
        ("pip299", "dispatcherPauseOnAckStatePersistentEnabled=true", "range-count"),
        ("range-count", "managedLedgerMaxAckStateInBytesToPersist=4096", "pip299"),
        ("pip81", "managedLedgerMaxUnackedRangesToPersist=5", "range-count"),
    ],
)
def test_a_key_of_a_persister_not_selected_is_an_error_in_a_strict_profile(
    tmp_path: Path, persister: str, key: str, reader: str
) -> None:
    """ack-state.md §0.2: the two pause switches differ only in word order, and the PIP-299 byte
    limit does nothing with the range-count persister: set, they only change the fingerprint."""
    text = RESOLVABLE.replace("unlimited", persister) + f"{key}\n"
    conf = write(tmp_path, "p.conf", text)
    one_error(
        brokerlab("profile", "check", str(conf)),
        f"{conf}:4: key '{key.split('=')[0]}'",
        f"is read only by the ack-state persister {reader!r}",
        f"this profile selects the ack-state persister {persister!r}",
    )
    shown = brokerlab("profile", "show", str(conf))  # show never fails on it: a warning
    assert shown.returncode == 0 and shown.stderr.startswith("brokerlab: warning:"), shown.stderr


def test_a_key_of_a_plugin_not_selected_is_a_warning_in_a_lenient_broker_conf(
    tmp_path: Path,
) -> None:
    text = "brokerShutdownTimeoutMs=1\nx=1\ny=1\nmanagedLedgerMaxAckStateInBytesToPersist=4096\n"
    conf = write(tmp_path, "broker.conf", text)
    result = brokerlab("profile", "check", str(conf))
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"brokerlab: warning: {conf}:4: key 'managedLedgerMaxAckStateInBytesToPersist': value "
        "'4096' is read only by the ack-state persister 'pip299', and this profile selects the "
        "ack-state persister 'range-count'\n"
    )


@pytest.mark.parametrize(
    "lines",
    [
        ["dispatcherPauseOnAckPersistentStateEnabled=false"],  # the one pip299 reads
        [  # the other at its default: it changes nothing (the reference profile sets every key)
            "dispatcherPauseOnAckPersistentStateEnabled=false",
            "dispatcherPauseOnAckStatePersistentEnabled=false",
        ],
    ],
)
def test_a_key_the_selected_plugin_reads_or_one_at_its_default_is_fine(
    tmp_path: Path, lines: list[str]
) -> None:
    text = RESOLVABLE + "".join(f"{line}\n" for line in lines)
    conf = write(tmp_path, "p.conf", text.replace("unlimited", "pip299"))
    result = brokerlab("profile", "check", str(conf))
    assert result.returncode == 0 and result.stderr == "", result.stderr


PULSAR_42 = ROOT / "profiles" / "pulsar-4.2.conf"


@pytest.mark.parametrize(
    ("setting", "fragments"),
    [
        (
            "managedLedgerMaxAckStateInBytesToPersist=4096",
            ["the ack-state persister 'pip299'", "selects the ack-state persister 'range-count'"],
        ),
        (
            "remote.log.index.file.cache.ttl.ms=1000",
            ["the kafka-tiered-storage simulator", "the workload runs on the pulsar simulator"],
        ),
        (
            "sim.pip448.draftSemantics=true",
            ["the delayed-delivery tracker factory 'topic-level'", "selects the delayed-delivery"],
        ),
    ],
    ids=["pip299-limit-with-range-count", "kafka-key-on-pulsar", "other-plugins-namespace"],
)
@pytest.mark.parametrize("command", ["run", "matrix"])
def test_a_set_that_no_selected_plugin_reads_is_refused(
    tmp_path: Path, setting: str, fragments: list[str], command: str
) -> None:
    """It was accepted silently and changed the fingerprint: a sweep over it reported identical
    configurations as different."""
    out = ["--out", str(tmp_path / "out")] if command == "matrix" else []
    result = brokerlab(
        command, "--profile", str(PULSAR_42), "--workload", "tailing", "--set", setting, *out
    )
    one_error(result, f"--set: key '{setting.split('=')[0]}'", "is read only by", *fragments)
    assert not (tmp_path / "out").exists()  # refused before Spark started


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the checkout")
def test_real_broker_confs_load_without_warnings() -> None:
    confs = [str(FIXTURES / "broker.conf"), str(FIXTURES / "standalone.conf")]
    result = brokerlab("profile", "check", *confs)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_reference_conf_is_in_sync_with_the_models() -> None:
    result = brokerlab("profile", "reference")
    assert result.returncode == 0, result.stderr
    expected = (ROOT / "profiles" / "reference.conf").read_text(encoding="utf-8")
    assert result.stdout == expected, (
        "profiles/reference.conf is stale: `brokerlab profile reference > profiles/reference.conf`"
    )


def test_metrics_doc_is_generated_from_the_registry() -> None:
    result = brokerlab("metrics", "--markdown")
    expected = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert result.stdout == expected, "docs/metrics.md is stale: `brokerlab metrics --markdown`"


BASELINE = ROOT / "profiles" / "baseline.conf"


def small_workload(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        "small.toml",
        'name = "small"\nduration_s = 2\n[[topics]]\nrate = 50\n'
        "[[topics.subscriptions]]\nconsumers = [{ rate = 100 }]\n",
    )


def test_run_json_document_and_identical_reruns(tmp_path: Path) -> None:
    workload = small_workload(tmp_path)
    args = ["run", "--profile", str(BASELINE), "--workload", str(workload), "--seed", "4", "--json"]
    first, second = brokerlab(*args), brokerlab(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    document = json.loads(first.stdout)
    assert list(document) == ["profile", "workload", "seed", "plugins", "metrics", "compiled"]
    assert set(document["compiled"]) == {*document["plugins"], "simulator"}
    assert document["seed"] == 4 and document["workload"] == "small"
    assert document["plugins"]["entry_cache"] == "disabled"
    assert document["metrics"]["delivered"] == document["metrics"]["published"] > 0


def test_run_scale_reproduces_a_scaled_matrix_cell(tmp_path: Path) -> None:
    from brokerlab import load_profile, simulate
    from brokerlab.host import PluginHost
    from brokerlab.workloads import load_workload_file

    workload = small_workload(tmp_path)
    args = ["run", "--profile", str(BASELINE), "--workload", str(workload), "--seed", "4"]
    half = brokerlab(*args, "--scale", "0.5", "--json")
    assert half.returncode == 0, half.stderr
    host = PluginHost()
    # What a matrix cell at --scale 0.5 runs (spark.cells: the simulator's scale, then simulate).
    spec = load_workload_file(workload)
    scaled = host.simulator(spec.simulator).scale(spec, 0.5)
    cell = simulate(load_profile(BASELINE, host=host), scaled, 4, host=host)
    assert json.loads(half.stdout)["metrics"] == json.loads(cell.to_json())["metrics"]
    whole = json.loads(brokerlab(*args, "--json").stdout)["metrics"]
    assert 0 < json.loads(half.stdout)["metrics"]["published"] < whole["published"]
    one_error(brokerlab(*args, "--scale", "0"), "'--scale'", "'0.0'", "0 < scale <= 1")


def test_run_table_marks_invariants(tmp_path: Path) -> None:
    result = brokerlab(
        "run", "--profile", str(BASELINE), "--workload", str(small_workload(tmp_path))
    )
    assert result.returncode == 0, result.stderr
    assert "Invariants (must be zero)" in result.stdout
    assert "lost" in result.stdout and "VIOLATED" not in result.stdout


def test_run_with_a_malformed_workload_exits_2(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.toml", 'name = "bad"\nduration_s = 5\n[[topics]]\nrate = -3\n')
    result = brokerlab("run", "--profile", str(BASELINE), "--workload", str(bad))
    assert result.returncode == 2
    assert "bad.toml:4" in result.stderr and "topics[0].rate" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_with_an_unknown_workload_name_suggests(tmp_path: Path) -> None:
    result = brokerlab("run", "--profile", str(BASELINE), "--workload", "tailng")
    assert result.returncode == 2
    assert "did you mean 'tailing'" in result.stderr


def test_workloads_lists_the_builtins() -> None:
    result = brokerlab("workloads")
    rows = [line.split()[:2] for line in result.stdout.splitlines()]
    names = [name for name, _ in rows]
    assert {name: simulator for name, simulator in rows if name.startswith("kafka-")} == {
        "kafka-leadership-change": "kafka-tiered-storage",
        "kafka-read-from-replica": "kafka-tiered-storage",
        "kafka-backfill-tail": "kafka-tiered-storage",
    }
    assert dict(rows)["tailing"] == "pulsar"
    assert names == sorted(
        [
            "kafka-leadership-change",
            "kafka-read-from-replica",
            "kafka-backfill-tail",
            "tailing",
            "catch-up-fanout",
            "key-shared-slow-consumer",
            "reconnect-storm",
            "many-topics",
            "delayed-mixed",
            "ack-holes-restart",
            "rolling-restart",
            "catch-up-shared-reads",
            "producers-vs-paused-dispatch",
            "trace-zipf",
        ]
    )
    assert dict(rows)["trace-zipf"] == "cache-trace"


def one_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2 and one ``brokerlab: error:`` line holding every fragment, no traceback."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("brokerlab: error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} missing from: {lines[0]}"


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (["run", "--workload", "tailing", "--seed", "-1"], ["'--seed'", "'-1'", ">= 0"]),
        # Seeds 0..N-1: the matrix takes a count, already refused before Spark starts.
        (["matrix", "--workload", "tailing", "--seeds", "0"], ["'--seeds'", "'0'", ">= 1"]),
    ],
)
def test_negative_seeds_are_refused(
    tmp_path: Path, command: list[str], fragments: list[str]
) -> None:
    out = ["--out", str(tmp_path / "out")] if command[0] == "matrix" else []
    result = brokerlab(*command, "--profile", str(BASELINE), *out)
    one_error(result, *fragments)


KAFKA_PROFILE = ROOT / "profiles" / "kafka-size-only.conf"
KAFKA_WORKLOADS = ROOT / "plugins" / "brokerlab_plugins" / "kafka_remote_index" / "workloads"


def endless_workloads(tmp_path: Path) -> dict[str, Path]:
    """A Pulsar and a Kafka workload that would run far beyond the subprocess timeout: a
    --timeline error that comes back at all was found before the run."""
    pulsar = small_workload(tmp_path).read_text().replace("duration_s = 2", "duration_s = 1e7")
    kafka = (KAFKA_WORKLOADS / "kafka-leadership-change.toml").read_text()
    kafka = kafka.replace("duration_s = 10800", "duration_s = 1e7")
    return {"pulsar": write(tmp_path, "p.toml", pulsar), "kafka": write(tmp_path, "k.toml", kafka)}


def test_timeline_on_a_simulator_that_records_none_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    timeline = tmp_path / "p.csv"
    workload = endless_workloads(tmp_path)["pulsar"]
    args = ["--workload", str(workload), "--timeline", str(timeline)]
    result = brokerlab("run", "--profile", str(BASELINE), *args)
    one_error(result, f"'{timeline}'", "'pulsar' simulator", "records none", "kafka-tiered-storage")
    assert not timeline.exists()


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("{tmp}", "is a directory"),
        ("{tmp}/file.txt/t.csv", "is not a directory"),
        ("/dev/null", "not a regular file"),
    ],
)
def test_timeline_path_is_checked_before_the_run(tmp_path: Path, target: str, problem: str) -> None:
    write(tmp_path, "file.txt", "not a folder")
    timeline = target.format(tmp=tmp_path)
    workload = endless_workloads(tmp_path)["kafka"]
    args = ["--workload", str(workload), "--timeline", timeline]
    result = brokerlab("run", "--profile", str(KAFKA_PROFILE), *args)
    one_error(result, "'--timeline'", f"'{timeline}'", problem, "allowed: a file path")


@pytest.mark.parametrize("command", ["run", "matrix"])
def test_a_scale_too_small_for_the_workloads_outages_is_one_clear_error(
    tmp_path: Path, command: str
) -> None:
    # It was an internal error (a pydantic traceback) when the shortened workload was validated.
    out = ["--out", str(tmp_path / "out")] if command == "matrix" else []
    args = ["--profile", str(PULSAR_42), "--workload", "rolling-restart", "--scale", "0.03"]
    result = brokerlab(command, *args, *out)
    one_error(result, "'--scale'", "'rolling-restart' too far", "at least 0.05 for this workload")
    assert not (tmp_path / "out" / "results").exists()  # refused before Spark started


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs procfs")
def test_timeline_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    # procfs takes no new files, though (as root) it looks writable: the write itself fails.
    timeline = "/proc/brokerlab-timeline.csv"
    args = ["--workload", "kafka-leadership-change", "--timeline", timeline, "--json"]
    result = brokerlab("run", "--profile", str(KAFKA_PROFILE), *args)
    one_error(result, "'--timeline'", f"'{timeline}'", "allowed: a file path")


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of the parser: ("run",), ("profile", "check"), ..."""
    import argparse

    from brokerlab.cli import _build_parser

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = [prefix]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += walk(sub, (*prefix, name))
        return found

    return walk(_build_parser(), ())


@pytest.mark.parametrize("command", _command_paths(), ids=" ".join)
def test_every_command_prints_its_help(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    # A "%" in a help text is a format code to argparse: one unescaped broke `run --help`.
    from brokerlab.cli import main

    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: brokerlab {' '.join(command)}".rstrip())


def test_python_m_brokerlab_cli_is_the_command() -> None:
    shown = brokerlab("--help", module="brokerlab.cli")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == brokerlab("--help").stdout and "usage: brokerlab" in shown.stdout
    args = ["run", "--profile", str(BASELINE), "--workload", "tailing", "--seed", "-1"]
    one_error(brokerlab(*args, module="brokerlab.cli"), "'--seed'")


def test_profile_check_refuses_a_bad_value_the_environment_covers(tmp_path: Path) -> None:
    path = write(tmp_path, "bj.conf", "sim.entryCache=pip430\nmanagedLedgerCacheSizeMB=x\n")
    result = brokerlab(
        "profile", "check", str(path), env={"BROKERLAB_managedLedgerCacheSizeMB": "8"}
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr == (
        f"brokerlab: error: {path}:2: key 'managedLedgerCacheSizeMB': value 'x' is not an "
        "integer; allowed: an integer >= 0\n"
    )


def tiny_matrix(workload: Path, out: str, *extra: str) -> list[str]:
    """One profile, one workload, one seed: a matrix of one cell."""
    return ["matrix", "--profile", str(BASELINE), "--workload", str(workload), "--seeds", "1",
            "--scale", "0.05", "--out", out, "--conf", "spark.ui.enabled=false",
            *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("{tmp}/file.txt", "exists and is not a directory"),
        ("{tmp}/file.txt/out", "is not a directory"),
        ("/proc/brokerlab-out", "cannot be"),  # procfs takes no folders, though it looks writable
    ],
)
def test_matrix_out_is_checked_before_spark_starts(
    tmp_path: Path, target: str, problem: str
) -> None:
    write(tmp_path, "file.txt", "not a folder")
    out = target.format(tmp=tmp_path)
    result = brokerlab(*tiny_matrix(small_workload(tmp_path), out))
    one_error(result, "'--out'", f"'{out}'", problem, "allowed: a folder path")


@pytest.mark.parametrize("master", ["bogus", "local[x]", "spark://nohost.invalid"])
def test_matrix_master_of_a_bad_form_is_refused_before_spark_starts(
    tmp_path: Path, master: str
) -> None:
    result = brokerlab(
        *tiny_matrix(small_workload(tmp_path), str(tmp_path / "out"), "--master", master)
    )
    one_error(result, "'--master'", f"'{master}'", "allowed: local, local[N], local[*]", "yarn")


@pytest.mark.spark
def test_matrix_master_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    # Well formed, but Spark cannot start there (no Hadoop configuration names a YARN cluster).
    result = brokerlab(
        *tiny_matrix(small_workload(tmp_path), str(tmp_path / "out"), "--master", "yarn")
    )
    assert result.returncode == 2, result.stderr
    last = result.stderr.splitlines()[-1]  # Spark's own lines before it cannot be avoided
    assert last.startswith("brokerlab: error: key '--master': value 'yarn'"), result.stderr
    assert "Spark could not start on it" in last
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def run_processes(driver: int) -> list[int]:
    """Live processes a run started: they carry its marker, ``BROKERLAB_RUN=<driver pid>-...``
    (found in /proc even after they were re-parented to init)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(f"BROKERLAB_RUN={driver}-".encode()) for v in environ):
            found.append(int(entry.name))
    return found


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("moment", ["spark-starting", "cells-running"])
def test_matrix_ctrl_c_ends_every_process_and_says_what_is_saved_in_one_line(
    tmp_path: Path, moment: str
) -> None:
    out = tmp_path / "out"
    # Cells of a few seconds each (1.5 million deliveries), one at a time: most are still to run
    # at the first progress line.
    workload = write(
        tmp_path,
        "longer.toml",
        'name = "longer"\nduration_s = 3000\n[[topics]]\nrate = 500\n'
        "[[topics.subscriptions]]\nconsumers = [{ rate = 1000 }]\n",
    )
    args = tiny_matrix(workload, str(out), "--seeds", "6", "--master", "local[1]", "--scale", "1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "brokerlab", *args], env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    lines = []
    if moment == "spark-starting":  # the JVM was launched (it takes seconds to be ready)
        deadline = time.monotonic() + 60
        while not run_processes(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        for line in process.stderr:  # the first progress line: Spark runs cells
            lines.append(line)
            if line.startswith("cells ["):
                break
    assert run_processes(process.pid), "the run started no processes"
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole process group
    interrupted = time.monotonic()
    rest = process.communicate(timeout=120)[1]
    took = time.monotonic() - interrupted
    stderr = "".join(lines) + rest
    assert process.returncode == 130, stderr
    assert took < 5, f"{took:.1f} s to end"
    assert run_processes(process.pid) == []  # no JVM or Python worker outlives the run
    said = [line for line in stderr.splitlines() if not line.startswith("cells [")]
    assert len(said) == 1, stderr  # no traceback of any process, no Java trace
    saved = re.fullmatch(
        rf"brokerlab: interrupted: (\d+) of 6 cells saved in {re.escape(str(out / 'results'))}; "
        "run the same command again to resume",
        said[0],
    )
    assert saved, stderr
    from brokerlab.spark.results import ResultStore

    assert int(saved[1]) == len(ResultStore(out).finished()) < 6
    assert (out / ".lock").read_text() == ""  # released


def test_profile_list_names_every_ready_profile_with_its_first_comment() -> None:
    """One line per ready profile (reference.conf is a template, not listed), each runnable by
    that name."""
    result = brokerlab("profile", "list")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(maxsplit=1) for line in result.stdout.splitlines())
    on_disk = {
        p.relative_to(ROOT / "profiles").with_suffix("").as_posix()
        for p in (ROOT / "profiles").rglob("*.conf")
    }
    assert set(lines) == on_disk - {"reference"}
    assert lines["pulsar-4.2"].startswith("Pulsar 4.2.x")
    checked = brokerlab("profile", "check", *lines)
    assert checked.returncode == 0, checked.stderr


HUGE = "x" * 1_000_000  # a value pasted by mistake (the issue saw 50 MB echoed in full)
LONG = "x" * 100_000  # what one command-line argument can hold (Linux: 128 KiB)


@pytest.mark.parametrize(
    ("files", "extra"),
    [
        ({"p.conf": f"sim.entryCache=disabled\nmanagedLedgerCacheSizeMB={HUGE}\n"}, []),
        ({"p.conf": f"{RESOLVABLE}sim.include={HUGE}\n"}, []),
        ({"p.conf": RESOLVABLE}, ["--set", f"managedLedgerCacheSizeMB={LONG}"]),
        ({"p.conf": RESOLVABLE}, ["--set", f"{LONG}=1"]),
    ],
    ids=["profile-value", "include", "set-value", "set-key"],
)
def test_a_huge_bad_value_is_quoted_at_most_80_characters(
    tmp_path: Path, files: dict[str, str], extra: list[str]
) -> None:
    paths = [write(tmp_path, name, text) for name, text in files.items()]
    result = brokerlab("profile", "show", str(paths[0]), *extra)
    length = f"({len(LONG if extra else HUGE):,} characters)"
    one_error(result, "x" * 80 + "...", length)
    assert len(result.stderr) < 500, result.stderr[:500]


def test_a_huge_bad_workload_value_is_quoted_at_most_80_characters(tmp_path: Path) -> None:
    workload = small_workload(tmp_path).read_text().replace('"small"', '"small"\nheadline = "')
    path = write(tmp_path, "w.toml", workload.replace('headline = "', f'headline = "{HUGE}"'))
    result = brokerlab("run", "--profile", str(BASELINE), "--workload", str(path))
    one_error(result, "w.toml", "headline", "x" * 80 + "...", "(1,000,000 characters)")
    assert len(result.stderr) < 500, result.stderr[:500]


def fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (["profile", "check", "{fifo}"], ["{fifo}", "is a FIFO (named pipe), not a profile file"]),
        (
            ["run", "--profile", "{fifo}", "--workload", "tailing"],
            ["{fifo}", "is a FIFO (named pipe), not a profile file"],
        ),
        (
            ["run", "--profile", str(BASELINE), "--workload", "{fifo}"],
            ["{fifo}", "is a FIFO (named pipe), not a workload file"],
        ),
        (
            ["run", "--profile", str(BASELINE), "--workload", "/dev/zero"],
            ["/dev/zero", "is a character device, not a workload file"],
        ),
        (["profile", "check", "/dev/null"], ["/dev/null", "is a character device"]),
    ],
    ids=["profile", "run-profile", "workload", "workload-device", "profile-device"],
)
def test_a_fifo_or_device_is_refused_at_once(
    tmp_path: Path, command: list[str], fragments: list[str]
) -> None:
    """A FIFO blocked the reader forever (nobody writes to it): the subprocess timeout of this
    test is what would catch that."""
    path = str(fifo(tmp_path, "in.conf"))
    result = brokerlab(*(part.format(fifo=path) for part in command))
    one_error(result, *(fragment.format(fifo=path) for fragment in fragments))


@pytest.mark.parametrize(
    ("include", "problem"),
    [
        ("/dev/zero", "is a character device, not a profile file"),
        ("pipe.conf", "is a FIFO (named pipe), not a profile file"),
        ("absent.conf", "does not exist"),
        (".", "is a directory, not a profile file"),
    ],
)
def test_an_include_that_is_no_regular_file_is_named_with_what_it_is(
    tmp_path: Path, include: str, problem: str
) -> None:
    fifo(tmp_path, "pipe.conf")
    conf = write(tmp_path, "p.conf", f"{RESOLVABLE}sim.include={include}\n")
    result = brokerlab("profile", "check", str(conf))
    one_error(result, f"{conf}:4", "key 'sim.include'", problem)


def one_workload(tmp_path: Path, body: str) -> Path:
    return write(tmp_path, "w.toml", f'name = "w"\nduration_s = 10\n[[topics]]\n{body}\n')


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        # Once numpy's "Unable to allocate 74.5 GiB" and "internal error ... bug", minutes in.
        (
            "count = 1000\nbacklog = 10000000\n[[topics.subscriptions]]\n",
            ["topics[0].count (1,000) x topics[0].backlog (10,000,000)", "TiB"],
        ),
        # At the documented bounds: once no estimate and no progress at all.
        (
            "rate = 1e9\n",
            ["topics[0].rate (1e+09/s) x duration_s (1e+07 s)"],
        ),
    ],
    ids=["backlog-on-1000-topics", "rate-at-the-bounds"],
)
def test_a_run_beyond_the_memory_limit_is_refused_naming_its_keys(
    tmp_path: Path, body: str, fragments: list[str]
) -> None:
    workload = one_workload(tmp_path, body)
    if "1e9" in body:
        workload.write_text(workload.read_text().replace("duration_s = 10", "duration_s = 1e7"))
    result = brokerlab("run", "--profile", str(BASELINE), "--workload", str(workload))
    one_error(result, "workload 'w' needs about", "of this machine's", "--max-memory", *fragments)


def test_max_memory_sets_the_limit_on_run_and_matrix(tmp_path: Path) -> None:
    small = small_workload(tmp_path)
    args = ["run", "--profile", str(BASELINE), "--workload", str(small)]
    run = brokerlab(*args, "--max-memory", "1M")
    one_error(run, "above the limit of 1 MiB (--max-memory)", "topics[0].rate (50/s)")
    out = tmp_path / "out"
    matrix = brokerlab(
        "matrix", "--profile", str(BASELINE), "--workload", str(small), "--seeds", "1",
        "--out", str(out), "--max-memory", "1M",
    )  # fmt: skip
    one_error(matrix, "workload 'small' needs about", "above the limit of 1 MiB")
    assert not out.exists()  # refused before Spark started
    ok = brokerlab(
        "run", "--profile", str(BASELINE), "--workload", str(small), "--max-memory", "1G", "--json"
    )
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr


BIG_KAFKA = """\
simulator = "kafka-tiered-storage"
name = "k"
duration_s = 3600
[[partitions]]
name = "p"
count = 1000000
segment_interval_s = 300
history_s = 2592000
retention_s = 2592000
index = { offset_kib = { min = 400, max = 600 }, time_kib = { min = 600, max = 900 } }
"""


def test_a_kafka_workload_beyond_the_memory_limit_is_refused_naming_its_keys(
    tmp_path: Path,
) -> None:
    """A million partitions with 30 days of 5-minute segments: 8.6 billion segment records, once
    built one by one until the kernel killed the run."""
    workload = write(tmp_path, "k.toml", BIG_KAFKA)
    args = ["--profile", str(KAFKA_PROFILE), "--workload", str(workload)]
    result = brokerlab("run", *args)
    one_error(
        result,
        "workload 'k' needs about",
        "TiB",
        "of this machine's",
        "partitions[0].count (1,000,000) x partitions[0].history_s (2.592e+06 s)",
        "segment_interval_s (300 s)",
        "fewer partitions",
    )
    out = tmp_path / "out"
    matrix = brokerlab("matrix", *args, "--seeds", "1", "--out", str(out))
    one_error(matrix, "workload 'k' needs about", "partitions[0].count (1,000,000)")
    assert not out.exists()  # refused before Spark started
    fits = brokerlab("run", *args, "--scale", "0.00001", "--max-memory", "1G", "--json")
    assert fits.returncode == 0, fits.stderr  # ten partitions


def test_a_trace_workload_beyond_the_memory_limit_is_refused_naming_its_keys(
    tmp_path: Path,
) -> None:
    """A 2.4 TB oracleGeneral trace (sparse: it costs no disk), and a max_requests above the
    limit: refused from the file's size alone, before a byte of it is read."""
    trace = tmp_path / "huge.oracleGeneral.bin"
    with trace.open("wb") as handle:
        handle.truncate(10**11 * 24)
    body = (
        f'simulator = "cache-trace"\nname = "t"\nduration_s = 3600\ntrace = "{trace.name}"\n'
        'format = "oracleGeneral"\n'
    )
    workload = write(tmp_path, "t.toml", body)
    args = ["--profile", str(BASELINE), "--workload", str(workload)]
    result = brokerlab("run", *args)
    one_error(
        result,
        "workload 't' needs about",
        "trace (huge.oracleGeneral.bin, 2.18 TiB: ~100,000,000,000 requests)",
        "a lower max_requests",
    )
    capped = write(tmp_path, "t.toml", body + "max_requests = 5000000\n")
    result = brokerlab("run", "--profile", str(BASELINE), "--workload", str(capped),
                       "--max-memory", "1G")  # fmt: skip
    one_error(result, "above the limit of 1 GiB (--max-memory)", "max_requests (5,000,000)")


@pytest.mark.parametrize("size", ["lots", "0", "-5G", "nan"])
def test_a_max_memory_that_is_no_size_is_refused(tmp_path: Path, size: str) -> None:
    small = small_workload(tmp_path)
    result = brokerlab(
        "run", "--profile", str(BASELINE), "--workload", str(small), f"--max-memory={size}"
    )
    one_error(result, "key '--max-memory'", f"value '{size}' is not a size", "8G")
