"""The processes a run starts (the Spark JVM, its Python workers), found and ended on any exit.

Every process the run starts inherits ``BROKERLAB_RUN=<id>`` in its environment, so the run finds
them in ``/proc`` even after they were re-parented; the JVM starts in a session of its own, so a
Ctrl-C in the terminal reaches the driver alone, which ends the rest itself (and the workers
print no ``KeyboardInterrupt`` of their own).
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

__all__ = ["MARKER", "end_marked", "interrupt_once", "mark_run", "marked"]

MARKER = "BROKERLAB_RUN"


def mark_run() -> str:
    """Give the processes this run starts from now on a marker of their own (``<pid>-<random>``,
    never an inherited one: that would be another run's); returns it."""
    marker = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.environ[MARKER] = marker
    return marker


def marked(marker: str) -> list[int]:
    """PIDs of the live processes carrying ``marker`` (other than this one): none where there is
    no ``/proc``."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            continue  # ended meanwhile, or another user's
    return found


def end_marked(marker: str) -> None:
    """Kill every process carrying ``marker``, with its process group (the JVM's session holds
    spark-submit, the JVM and the Python workers). SIGKILL: they hold nothing the run needs, as
    the driver writes the results."""
    for _ in range(3):  # a worker forked while we looked is caught on the next pass
        pids = marked(marker)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if group != os.getpgrp():
                    os.killpg(group, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def interrupt_once() -> Iterator[None]:
    """The first Ctrl-C raises :class:`KeyboardInterrupt`; later ones are ignored until the
    process exits, so cleaning up is never cut short by a second traceback."""
    interrupted = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        if not interrupted:
            signal.signal(signal.SIGINT, previous)
