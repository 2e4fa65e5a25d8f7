"""Writing files so that a crash never leaves half of one behind.

A rename is atomic, but without an fsync of the file before it and of the folder after it, a power
cut may leave the new name pointing at an empty file: both are synced here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_path",
    "fsync_file",
    "fsync_folder",
    "replace_durably",
    "unwritable_folder_reason",
    "unwritable_reason",
]


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path`` in one step.

    An :class:`OSError` of the write (a full disk) names ``path``, not the temporary file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600; results are for sharing
        replace_durably(temporary, path)
    except OSError as exc:
        if exc.filename in (None, name):
            exc.filename = str(path)
        raise
    finally:
        temporary.unlink(missing_ok=True)


def fsync_file(path: Path) -> None:
    """Flush ``path``'s data to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(path: Path) -> None:
    """Flush ``path``'s entries (a rename into it) to the disk; a no-op where folders cannot be
    opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse it; the rename still holds
            os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(temporary: Path, path: Path) -> None:
    """Rename the finished ``temporary`` onto ``path``: synced before, and its folder after."""
    fsync_file(temporary)
    os.replace(temporary, path)
    fsync_folder(path.parent)


def unwritable_reason(path: Path) -> str | None:
    """Why :func:`atomic_path` cannot write ``path``, or ``None`` if it looks writable.

    For checking an output before the work that produces it; the write itself may still fail
    (as root every folder looks writable), so callers handle :class:`OSError` there too.
    """
    if path.exists() and not path.is_file():
        # os.replace would fail on a folder, and replace a device node such as /dev/null.
        return "is a directory" if path.is_dir() else "exists and is not a regular file"
    return _uncreatable_reason(path.parent)


def unwritable_folder_reason(path: Path) -> str | None:
    """Why ``path`` cannot be a folder to write files in, or ``None`` once it is one.

    Creates ``path`` (with missing parents) and a file in it, then removes the file: only trying
    shows what a permission check cannot (procfs, a read-only mount, as root).
    """
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    problem = _uncreatable_reason(path)
    if problem is not None:
        return problem
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".probe.", dir=path)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    return None


def _uncreatable_reason(folder: Path) -> str | None:
    """Why ``folder`` cannot be a writable folder: its nearest existing ancestor is not one."""
    while not folder.exists() and folder != folder.parent:  # missing folders are created
        folder = folder.parent
    if not folder.is_dir():
        return f"cannot be created: {str(folder)!r} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot be created: {str(folder)!r} is not writable"
    return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
