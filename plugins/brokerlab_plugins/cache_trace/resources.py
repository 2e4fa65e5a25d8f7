"""What one replay of a cache trace will cost, from the validated document and the trace file's
size alone.

A replay holds the requests it replays three times over: the reader's blocks and the arrays it
joins them into, the trace's time, object and size columns, and those columns as lists of Python
ints for the replay loop, with a hit flag per request. Per distinct object it holds a CSV's
object id and, at most, one cached entry. Without reading the trace, the requests are
``max_requests``, or what the file's size says (an oracleGeneral record is 24 bytes; a CSV line
is as long as its first lines), whichever is fewer; every request may name a new object. The
constants below were measured (peak RSS of real runs, ``docs/scripts/memory_estimate.py``) and
rounded up: the estimate errs high. Nothing here reads more than the first 64 KiB of the trace.
"""

from __future__ import annotations

import stat
from pathlib import Path

from brokerlab.workloads.resources import BASE_BYTES, Estimate, format_bytes
from brokerlab_plugins.cache_trace.model import TraceWorkload
from brokerlab_plugins.cache_trace.traces import ORACLE_GENERAL

__all__ = ["estimate_trace", "requests_in"]

REQUEST_BYTES = 100  # the columns as arrays, as lists of ints, the hit flag, the reader's blocks
OBJECT_BYTES = 250  # an entry in the cache and its index
CSV_OBJECT_BYTES = 150  # a CSV's object id and its number
_DEFAULT_EVICTION_INTERVAL_MS = 10  # managedLedgerCacheEvictionIntervalMs
_SAMPLE_BYTES = 1 << 16  # what a CSV's estimate reads to learn its line length

_SMALLER = "a smaller workload (a lower max_requests, a shorter trace, or --scale)"


def requests_in(workload: TraceWorkload) -> tuple[float, int | None]:
    """About how many requests the trace file holds (an upper bound for oracleGeneral), and its
    size in bytes; ``(0, None)`` when it is no regular file (the run reports it)."""
    path = Path(workload.trace)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read below
            return 0.0, None
        if workload.format == "oracleGeneral":
            return info.st_size / ORACLE_GENERAL.itemsize, info.st_size
        with path.open("rb") as handle:
            sample = handle.read(_SAMPLE_BYTES)
    except OSError:
        return 0.0, None
    return info.st_size / max(1, len(sample)) * max(1, sample.count(b"\n")), info.st_size


def estimate_trace(workload: TraceWorkload) -> Estimate:
    """The estimated peak memory and events of one replay of ``workload`` (already scaled)."""
    assert isinstance(workload, TraceWorkload)
    in_file, size = requests_in(workload)
    requests = in_file if size is not None else float(workload.max_requests or 0)
    name = Path(workload.trace).name
    what = f"trace ({name}, {format_bytes(size or 0)}: ~{in_file:,.0f} requests)"
    if workload.max_requests is not None and (size is None or workload.max_requests < in_file):
        requests = float(workload.max_requests)
        what = f"max_requests ({workload.max_requests:,})"
    object_bytes = OBJECT_BYTES + (CSV_OBJECT_BYTES if workload.format == "csv" else 0)
    drivers = (
        (f"{what} replayed", requests * REQUEST_BYTES),
        (f"{what}, each a new object at most", requests * object_bytes),
    )
    peak = BASE_BYTES + sum(cost for _, cost in drivers)
    # A request is one event, and so is each run of the cache's periodic eviction.
    events = requests + workload.duration_s * 1000 / _DEFAULT_EVICTION_INTERVAL_MS
    return Estimate(peak, events, drivers, smaller=_SMALLER)
