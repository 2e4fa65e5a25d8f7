"""The ready profiles brokerlab ships, found by name (``pulsar-4.2``) wherever a path is taken.

A source checkout keeps them in ``profiles/`` at its root; a wheel carries the same files as
``brokerlab/ready_profiles`` (``pyproject.toml`` maps one onto the other). A name is the file's
path below that folder without ``.conf``: ``pulsar-4.2``, ``diagnostics/pip448-draft``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ready_folder", "ready_profile", "ready_profile_beside", "ready_profiles"]

_HERE = Path(__file__).resolve()
# reference.conf lists every key with its default: a template to copy from, not a profile to run.
_NOT_READY = frozenset({"reference"})


def ready_folder() -> Path | None:
    """Where the ready profiles are: inside the installed package, else the checkout's folder."""
    for folder in (_HERE.parents[1] / "ready_profiles", _HERE.parents[3] / "profiles"):
        if folder.is_dir():
            return folder
    return None


def ready_profiles() -> dict[str, Path]:
    """Every ready profile by name, sorted."""
    folder = ready_folder()
    if folder is None:
        return {}
    found = {
        path.relative_to(folder).with_suffix("").as_posix(): path for path in folder.rglob("*.conf")
    }
    return {name: found[name] for name in sorted(found) if name not in _NOT_READY}


def ready_profile(text: str | Path) -> Path | None:
    """The ready profile ``text`` names (with or without ``.conf``), or ``None``.

    Only a name that is not an existing file counts, so a file of that name in the current folder
    always wins.
    """
    name = str(text)
    if len(name) > 255 or _exists(Path(name)):  # no ready profile has a longer name
        return None
    return ready_profiles().get(name.removesuffix(".conf"))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long for the file system, say: no such file
        return False


def ready_profile_beside(path: Path, name: str) -> Path:
    """``path`` (an include resolved beside its includer) unless no such file exists and
    ``name`` is a ready profile's name; then that profile."""
    if _exists(path):
        return path
    return ready_profile(name) or path
