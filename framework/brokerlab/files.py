"""Writing files so that a crash never leaves half of one behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "unwritable_reason"]


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path`` in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600; results are for sharing
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def unwritable_reason(path: Path) -> str | None:
    """Why :func:`atomic_path` cannot write ``path``, or ``None`` if it looks writable.

    For checking an output before the work that produces it; the write itself may still fail
    (as root every folder looks writable), so callers handle :class:`OSError` there too.
    """
    if path.exists() and not path.is_file():
        # os.replace would fail on a folder, and replace a device node such as /dev/null.
        return "is a directory" if path.is_dir() else "exists and is not a regular file"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:  # atomic_path creates missing folders
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
