"""The cache-trace workload format: which trace to replay and how its objects become entries.

A document with ``simulator = "cache-trace"`` names a standard cache trace and how much of it to
replay through the profile's entry cache::

    simulator = "cache-trace"
    name = "my-trace"
    duration_s = 3600              # replay the first hour of trace time
    trace = "traces/cluster52.oracleGeneral"   # relative to this file's folder
    format = "oracleGeneral"       # or "csv": time,object,size (header optional)
    max_requests = 1_000_000       # optional: stop after this many requests

The replay semantics (one reader, the add path on a miss, the object -> position mapping) are
described in ``docs/workloads.md`` ("Replaying cache traces").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from brokerlab.workloads import WorkloadDocument

__all__ = ["SIMULATOR", "TraceWorkload"]

SIMULATOR: Literal["cache-trace"] = "cache-trace"

# Built-in records name their document "builtin:NAME (PATH)"; a file's origin is its path.
_BUILTIN_ORIGIN = re.compile(r"builtin:\S+ \((?P<path>.+)\)")


class TraceWorkload(WorkloadDocument):
    """One trace replayed through the entry cache by a single reader.

    ``duration_s`` is the span of trace time replayed, counted from the first request: requests
    at or after ``first + duration_s`` are not replayed (a shorter trace ends the run at its last
    request). ``time_unit_s`` is the length of one unit of the trace's time column in seconds
    (libCacheSim's traces count seconds). ``entries_per_ledger`` places the k-th distinct object
    at entry ``k % n`` of ledger ``k // n`` (default: the profile's
    ``managedLedgerMaxEntriesPerLedger``). ``admission`` picks how a miss reaches the cache:
    ``add`` inserts the object on the add path (every broker cache admits it while its reader is
    active), ``storage-read`` reports it as read from storage (the broker's own read path, which
    only some caches and settings cache).
    """

    simulator: Literal["cache-trace"] = SIMULATOR
    trace: str = Field(min_length=1)
    format: Literal["oracleGeneral", "csv"]
    max_requests: Annotated[int, Field(ge=1)] | None = None
    time_unit_s: Annotated[float, Field(gt=0)] = 1.0
    entries_per_ledger: Annotated[int, Field(ge=1)] | None = None
    admission: Literal["add", "storage-read"] = "add"

    @field_validator("trace")
    @classmethod
    def _resolve(cls, value: str, info: ValidationInfo) -> str:
        """A relative path is taken from the workload file's folder when the loader says which
        file it reads (its validation context carries the origin), else from the current one.

        The result is absolute, so a document copied to an executor keeps pointing at the file.
        """
        path = Path(value).expanduser()
        if path.is_absolute():
            return str(path)
        origin = (info.context or {}).get("origin")
        folder = _folder_of(origin) if isinstance(origin, str) else None
        return str((folder or Path.cwd()) / path)


def _folder_of(origin: str) -> Path | None:
    """The folder of the file a document came from, when ``origin`` names one."""
    match = _BUILTIN_ORIGIN.fullmatch(origin)
    candidate = Path(match.group("path") if match else origin)
    return candidate.parent.resolve() if candidate.is_file() else None
