"""The driver JVM's class-data-sharing archive, with a real java: claimed, dumped, mapped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brokerlab.spark import session
from brokerlab.spark.jvm_archive import (
    SETTLED_SECONDS,
    ArchivePlan,
    archive_folder,
    java_binary,
    plan_archive,
)

JAVA = java_binary()
pytestmark = pytest.mark.skipif(JAVA is None, reason="needs a java binary")
OPTIONS = "-XX:+UseSerialGC"


def plan(folder: Path, options: str = OPTIONS) -> ArchivePlan:
    assert JAVA is not None
    return plan_archive(folder, JAVA, folder / "jars", options)


def run_java(options: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    assert JAVA is not None
    command = [JAVA, *OPTIONS.split(), *options.split(), *extra, "-version"]
    return subprocess.run(command, capture_output=True, timeout=120, check=False)


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "jars").mkdir()
    return tmp_path / "cache"


def test_the_first_run_claims_the_dump_and_a_concurrent_one_goes_without(folder: Path) -> None:
    first = plan(folder)
    assert first.dump is not None and first.dump.stat().st_size == 0
    assert first.options.startswith(f"-XX:ArchiveClassesAtExit={first.dump} ")
    second = plan(folder)
    assert second.dump is None and "Archive" not in second.options


def test_a_settled_dump_is_checked_renamed_and_mapped_from_then_on(folder: Path) -> None:
    first = plan(folder)
    assert first.dump is not None
    assert run_java(first.options).returncode == 0  # the JVM writes the archive as it exits
    first.release()  # the run ended
    assert first.dump.stat().st_size > 0

    assert "SharedArchiveFile" not in plan(folder).options  # still fresh: maybe being written
    age(first.dump, SETTLED_SECONDS + 5)
    later = plan(folder)
    ready = first.dump.with_suffix(".jsa")
    assert later.dump is None and later.options.startswith(f"-XX:SharedArchiveFile={ready} ")
    assert ready.is_file() and not first.dump.exists()
    # -Xshare:on refuses to start when the archive cannot be mapped.
    assert run_java(later.options, "-Xshare:on").returncode == 0


def test_a_truncated_dump_is_dropped_and_the_dump_claimed_again(folder: Path) -> None:
    first = plan(folder)
    assert first.dump is not None and run_java(first.options).returncode == 0
    first.release()  # the run ended
    data = first.dump.read_bytes()
    first.dump.chmod(0o644)
    first.dump.write_bytes(data[: len(data) // 3])  # a JVM killed while it was dumping
    age(first.dump, SETTLED_SECONDS + 5)
    again = plan(folder)
    assert not first.dump.with_suffix(".jsa").exists()
    assert again.dump == first.dump and first.dump.stat().st_size == 0  # a new claim


def test_a_live_claim_is_respected_and_a_dead_claimants_taken_over_at_once(
    folder: Path,
) -> None:
    """The claim lives as long as the process holding it (a driver, or the JVM it passed the
    claim to): a run killed before its JVM dumped leaves an empty dump, claimed again at once."""
    assert JAVA is not None
    claimant = subprocess.Popen(
        [sys.executable, "-c", CLAIM, str(folder), JAVA, OPTIONS],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert claimant.stdout is not None
    dump = Path(claimant.stdout.readline().strip())
    assert dump.stat().st_size == 0
    assert plan(folder).dump is None  # its JVM may still be running: go without
    assert f"pid {claimant.pid} on " in dump.with_suffix(".claim").read_text()
    claimant.kill()  # as kill -9: no chance to clean up
    claimant.wait()
    later = plan(folder)
    assert later.dump == dump and later.claim is not None
    later.release()


# A driver claiming the dump, then waiting to be killed.
CLAIM = """
import sys, time
from pathlib import Path
from brokerlab.spark.jvm_archive import plan_archive
folder, java, options = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
print(plan_archive(folder, java, folder / "jars", options).dump, flush=True)
time.sleep(600)
"""


def test_other_options_get_an_archive_of_their_own(folder: Path) -> None:
    assert plan(folder).dump is not None
    assert plan(folder, "-XX:+UseParallelGC").dump is not None


def test_the_archive_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert archive_folder() == tmp_path / "brokerlab" / "jvm"
    options, claimed = session._driver_java_options()
    assert "ArchiveClassesAtExit" in options
    claimed.release()
    monkeypatch.setenv("BROKERLAB_JVM_ARCHIVE", "off")
    assert archive_folder() is None
    assert session._driver_java_options()[0] == session._DRIVER_JAVA_OPTIONS
