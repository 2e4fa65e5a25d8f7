"""One run at a time per ``--out`` folder: an advisory lock file naming its holder.

``DIR/.lock`` is locked with ``flock`` for as long as a matrix (or a report) writes into ``DIR``,
and holds the holder's PID, host and command. The kernel releases the lock when its holder exits,
however it exits; a clean release also empties the file, so a file that still names a holder
whose lock is gone was left by a run that was killed: the next run takes it over with a warning.
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from brokerlab.errors import OutputError

__all__ = ["LOCK_FILE", "holding"]

LOCK_FILE = ".lock"


@contextmanager
def holding(out: Path, command: str, warn: Callable[[str], None]) -> Iterator[None]:
    """Hold ``out``'s lock for the ``with`` block; raises :class:`OutputError` naming the holder
    when another process holds it. ``out`` must exist."""
    path = out / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot open the lock file {path}: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd) or "a process that has not written its name yet"
            raise OutputError(
                f"{out} is in use by another brokerlab run ({holder}); wait for it to end or "
                "choose another --out"
            ) from None
        previous = _read(fd)
        if previous:
            warn(
                f"took over the lock of {out} from a run that ended without releasing it "
                f"({previous})"
            )
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        me = f"pid {os.getpid()} on {socket.gethostname()}, brokerlab {command} since {stamp}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, me.encode() + b"\n", 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # released cleanly: no stale holder left to report
    finally:
        os.close(fd)


def _read(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()
