"""Reading the files a user names (profiles, their includes, workloads): regular files only.

A FIFO would block the reader until some other process writes to it, and a device such as
``/dev/zero`` never ends: both are refused before anything is read. The file is opened without
blocking and checked on the open descriptor, so nothing can swap it in between.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["InputFileError", "input_file_problem", "read_input_file"]

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (named pipe)"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)


class InputFileError(Exception):
    """Why a named input file cannot be read; ``missing`` when there is no such file."""

    def __init__(self, problem: str, *, missing: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.missing = missing


def read_input_file(path: Path, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``.

    ``what`` names the expected kind in problems (``"is a FIFO (named pipe), not a profile
    file"``). Raises :class:`InputFileError` when ``path`` is missing, not a regular file or
    cannot be read.
    """
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileError("does not exist", missing=True) from None
    except IsADirectoryError:
        raise InputFileError(f"is a directory, not a {what}") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO on some systems
            raise InputFileError(f"is not a regular file, not a {what}") from None
        raise InputFileError(f"cannot be read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        for test, kind in _KINDS:
            if test(mode):
                raise InputFileError(f"{kind}, not a {what}")
        if not stat.S_ISREG(mode):
            raise InputFileError(f"is not a regular file, not a {what}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError as exc:
        raise InputFileError(f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def input_file_problem(path: Path, what: str = "file") -> str | None:
    """Why ``path`` cannot be read as a regular file, or ``None`` when it can (a quick check that
    opens nothing: for a path to name in an error before reading it)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    for test, kind in _KINDS:
        if test(mode):
            return f"{kind}, not a {what}"
    return None if stat.S_ISREG(mode) else f"is not a regular file, not a {what}"
