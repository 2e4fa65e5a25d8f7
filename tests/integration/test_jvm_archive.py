"""The driver JVM's class-data-sharing archive, with a real java: claimed, dumped, mapped."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from brokerlab.spark import session
from brokerlab.spark.jvm_archive import (
    ABANDONED_SECONDS,
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
    data = first.dump.read_bytes()
    first.dump.chmod(0o644)
    first.dump.write_bytes(data[: len(data) // 3])  # a JVM killed while it was dumping
    age(first.dump, SETTLED_SECONDS + 5)
    again = plan(folder)
    assert not first.dump.with_suffix(".jsa").exists()
    assert again.dump == first.dump and first.dump.stat().st_size == 0  # a new claim


def test_an_abandoned_claim_is_taken_over(folder: Path) -> None:
    first = plan(folder)
    assert first.dump is not None
    age(first.dump, ABANDONED_SECONDS - 60)
    assert plan(folder).dump is None  # a long matrix may still hold it
    age(first.dump, ABANDONED_SECONDS + 60)
    assert plan(folder).dump == first.dump


def test_other_options_get_an_archive_of_their_own(folder: Path) -> None:
    assert plan(folder).dump is not None
    assert plan(folder, "-XX:+UseParallelGC").dump is not None


def test_the_archive_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert archive_folder() == tmp_path / "brokerlab" / "jvm"
    assert "ArchiveClassesAtExit" in session._driver_java_options()
    monkeypatch.setenv("BROKERLAB_JVM_ARCHIVE", "off")
    assert archive_folder() is None
    assert session._driver_java_options() == session._DRIVER_JAVA_OPTIONS
