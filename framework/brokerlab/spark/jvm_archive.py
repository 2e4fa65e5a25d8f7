"""A class-data-sharing (AppCDS) archive for the driver JVM.

A Spark driver loads thousands of classes from some 280 jars at start-up; mapped from one archive
they load in a fraction of the time (a cold session here: ~8 s without, ~3 s with). The JVM writes
such an archive itself when it exits (``-XX:ArchiveClassesAtExit``), so the archive of a JDK and
Spark pair comes from the first run that uses them:

1. no archive yet: the first run claims the dump (it locks ``KEY.claim``, which names it, and
   creates an empty ``KEY.dump``), and its JVM writes the archive there when it exits; runs
   meanwhile go without. The lock is held by the driver and inherited by its JVM, so the kernel
   releases it when both have exited, however they exit: the claim of a run that was killed is
   taken over by the next run at once;
2. a later run finds a dump that has not changed for a minute, checks that a JVM starts with it (a
   dump cut short by a killed JVM is truncated, and a truncated archive crashes the JVM that maps
   it), and renames it to ``KEY.jsa``;
3. runs from then on map it (a rename never changes a file a running JVM has mapped).

The key names the java binary (path and modification time), the Spark jars folder and the JVM
options, so another JDK, another Spark or other options get an archive of their own. The archive
(~110 MB) lives in ``$XDG_CACHE_HOME/brokerlab/jvm`` (``~/.cache`` by default);
``BROKERLAB_JVM_ARCHIVE=off`` turns it off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ArchivePlan", "archive_folder", "java_binary", "plan_archive"]

# Quiet: the dump lists every class it skips, and a mismatched archive is simply not used.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# A JVM writes its dump in a second or two when it exits; older unchanged files are finished.
SETTLED_SECONDS = 60.0


@dataclass(frozen=True)
class ArchivePlan:
    """What this run's driver JVM does with the archive: the options to add, the file it dumps
    to at exit (``None`` when it maps a ready archive or the archive is off), and the locked
    descriptor of the claim (pass it on to the JVM; close it with :meth:`release`)."""

    options: str
    dump: Path | None = None
    claim: int | None = None

    def release(self) -> None:
        """Close this process's hold on the claim (the JVM's own copy lasts as long as it)."""
        if self.claim is not None:
            with contextlib.suppress(OSError):
                os.close(self.claim)


def archive_folder() -> Path | None:
    """Where archives live, or ``None`` when ``BROKERLAB_JVM_ARCHIVE`` turns them off."""
    if os.environ.get("BROKERLAB_JVM_ARCHIVE", "").lower() in ("0", "off", "false", "no"):
        return None
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "brokerlab" / "jvm"


def java_binary() -> str | None:
    """The java Spark's launcher runs: ``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def plan_archive(folder: Path, java: str, spark_jars: Path, jvm_options: str) -> ArchivePlan:
    """The archive options for a driver JVM started with ``jvm_options``."""
    key = _key(java, spark_jars, jvm_options)
    ready, dump = folder / f"{key}.jsa", folder / f"{key}.dump"
    if not ready.is_file() and _size(dump):
        _settle(dump, ready, java, jvm_options)
    if ready.is_file():
        return ArchivePlan(f"-XX:SharedArchiveFile={ready} {_QUIET}")
    # One run per key dumps, so a test suite starting ten JVMs at once writes one archive.
    claim = _claim(folder / f"{key}.claim")
    if claim is None:
        return ArchivePlan("")  # a live run is dumping, or the cache is read-only
    if _size(dump):  # written since we looked: a JVM that exited just now; settled next time
        os.close(claim)
        return ArchivePlan("")
    try:
        # An empty dump left here is the claim of a run that ended before its JVM dumped.
        os.close(os.open(dump, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644))
    except OSError:
        os.close(claim)
        return ArchivePlan("")
    return ArchivePlan(f"-XX:ArchiveClassesAtExit={dump} {_QUIET}", dump, claim)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _claim(path: Path) -> int | None:
    """A descriptor holding the lock on ``path`` (naming this process), or ``None`` if another
    live process holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    except OSError:
        os.close(fd)
        return None
    return fd


def _key(java: str, spark_jars: Path, jvm_options: str) -> str:
    real = Path(java).resolve()
    parts = [str(real), str(real.stat().st_mtime_ns), str(spark_jars.resolve()), jvm_options]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _settle(dump: Path, ready: Path, java: str, options: str) -> None:
    """Promote a finished dump, drop a broken one, leave one being written."""
    try:
        info = dump.stat()
    except FileNotFoundError:
        return  # another run settled it meanwhile
    age = time.time() - info.st_mtime
    if info.st_size == 0 or age <= SETTLED_SECONDS:
        return
    if _starts_with(java, options, dump):
        os.replace(dump, ready)
    else:
        dump.unlink(missing_ok=True)


def _starts_with(java: str, options: str, archive: Path) -> bool:
    """Whether a JVM with ``options`` starts and exits cleanly mapping ``archive``."""
    command = [java, *options.split(), f"-XX:SharedArchiveFile={archive}", *_QUIET.split()]
    # A bad archive crashes this JVM: no crash report or core file in the user's folder.
    command += ["-XX:ErrorFile=/dev/null", "-XX:-CreateCoredumpOnCrash", "-version"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
