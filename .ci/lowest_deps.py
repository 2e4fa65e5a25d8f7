"""Print pip requirements pinning dependencies to the lowest versions pyproject.toml allows.

    python .ci/lowest_deps.py [--extra NAME]... [--except NAME]... [--out FILE]

Every runtime dependency (``[project] dependencies``), and every dependency of each ``--extra``
but those named with ``--except``, must have a ``>=`` lower bound; it is printed as
``name==version``. Installing these over an environment checks that the project works with the
bounds it declares (tox -e lowest, and .ci/run).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BOUND = re.compile(r"\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,.*)?")


def pins(project: Mapping[str, Any], extras: list[str], skip: set[str]) -> list[str]:
    """``name==lower`` for the runtime dependencies and those of ``extras``, minus ``skip``."""
    dependencies: list[str] = list(project["dependencies"])
    optional: Mapping[str, list[str]] = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise SystemExit(f"pyproject.toml has no extra {extra!r} (it has {sorted(optional)})")
        dependencies += optional[extra]
    out = []
    for dependency in dependencies:
        match = BOUND.fullmatch(dependency)
        if match is None:
            raise SystemExit(f"pyproject.toml: no '>=' lower bound to pin in {dependency!r}")
        if match.group(1) not in skip:
            out.append(f"{match.group(1)}=={match.group(2)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", action="append", default=[], help="also pin this extra's")
    parser.add_argument("--except", dest="skip", action="append", default=[], help="never pin")
    parser.add_argument("--out", type=Path, help="write the requirements here (default stdout)")
    args = parser.parse_args()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = "\n".join(pins(project, args.extra, set(args.skip))) + "\n"
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
