"""Read a cache trace into arrays: libCacheSim's oracleGeneral binary, or a CSV of
``time,object,size``.

Both readers feed blocks of requests to one cutter, which applies the workload's limits while the
file is read (so a short replay of a long trace reads only its start):

* requests of size 0 are skipped, as libCacheSim skips them by default;
* time never goes back: a timestamp below an earlier one is replayed at the earlier time;
* only requests less than ``duration_s`` of trace time after the first are replayed, and at most
  ``max_requests`` of them.

Objects are renumbered 0, 1, 2, ... in the order they are first requested.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from brokerlab.errors import Origin, WorkloadError

__all__ = ["ORACLE_GENERAL", "Trace", "TraceLimits", "count_requests", "read_trace"]

ORACLE_GENERAL = np.dtype(
    [("time", "<u4"), ("object", "<u8"), ("size", "<u4"), ("next_access", "<i8")]
)
"""One oracleGeneral record: 24 packed little-endian bytes (libCacheSim's oracleGeneralBin.h)."""

_BLOCK = 1 << 16  # requests handed to the cutter at a time
_NS = 1_000_000_000
_MAX_NS = float(2**61)  # 73 years; a longer span is clipped to it
_HEADER = ("time", "object", "size")

Int64s = npt.NDArray[np.int64]
Format = Literal["oracleGeneral", "csv"]


@dataclass(frozen=True)
class TraceLimits:
    """What to replay: ``duration_s`` of trace time, at most ``max_requests`` requests, with one
    unit of the time column lasting ``time_unit_s`` seconds."""

    duration_s: float
    time_unit_s: float = 1.0
    max_requests: int | None = None


@dataclass(frozen=True)
class Trace:
    """Requests ready to replay, in trace order.

    ``times_ns`` counts from the first request and never decreases; ``objects`` are dense ids in
    first-request order; ``sizes`` are positive; ``skipped`` counts the zero-size requests left
    out.
    """

    times_ns: Int64s
    objects: Int64s
    sizes: Int64s
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.objects)

    @property
    def object_count(self) -> int:
        return int(self.objects.max()) + 1 if len(self.objects) else 0

    def columns(self) -> tuple[list[int], list[int], list[int]]:
        """Objects, times and sizes as lists of ints, which a compiled replay loop indexes
        cheaply (an array is a generic object to it)."""
        return self.objects.tolist(), self.times_ns.tolist(), self.sizes.tolist()


def read_trace(path: str | Path, fmt: Format, limits: TraceLimits) -> Trace:
    """The requests of the trace at ``path`` that ``limits`` selects.

    Raises :class:`WorkloadError` naming the file (and, for a CSV, the line) when the file is
    missing, malformed or has no request to replay.
    """
    file = Path(path)
    if not file.is_file():
        problem = "is a directory, not a trace file" if file.is_dir() else "no such trace file"
        raise WorkloadError(problem, origin=Origin.file(file))
    cutter = _Cutter(limits)
    if fmt == "oracleGeneral":
        _read_oracle_general(file, cutter)
    else:
        _read_csv(file, cutter)
    trace = cutter.trace()
    if not len(trace):
        raise WorkloadError(
            "holds no request of a size above 0 to replay", origin=Origin.file(file)
        )
    return trace


def count_requests(path: str | Path, fmt: Format, limits: TraceLimits) -> int:
    """How many requests ``read_trace`` would replay."""
    return len(read_trace(path, fmt, limits))


# ---- the readers ----------------------------------------------------------------------------


def _read_oracle_general(file: Path, cutter: _Cutter) -> None:
    size = file.stat().st_size
    if size % ORACLE_GENERAL.itemsize:
        raise WorkloadError(
            f"is not an oracleGeneral trace: its {size} bytes are not a whole number of "
            f"{ORACLE_GENERAL.itemsize}-byte records",
            origin=Origin.file(file),
        )
    if size == 0:
        return
    records = np.memmap(file, dtype=ORACLE_GENERAL, mode="r")  # pages in only what is read
    try:
        for start in range(0, len(records), _BLOCK):
            block = records[start : start + _BLOCK]
            more = cutter.feed(
                block["time"].astype(np.float64),
                block["object"].astype(np.uint64),
                block["size"].astype(np.int64),
            )
            if not more:
                break
    finally:
        del records


def _read_csv(file: Path, cutter: _Cutter) -> None:
    ids: dict[str, int] = {}
    times: list[float] = []
    objects: list[int] = []
    sizes: list[int] = []
    try:
        with file.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            first = True
            for row in reader:
                if not row or all(not field.strip() for field in row):
                    continue
                line = reader.line_num
                if len(row) != len(_HEADER):
                    raise WorkloadError(
                        f"has {len(row)} columns; a trace CSV has 3: time,object,size",
                        origin=Origin.file(file, line),
                    )
                if first:
                    first = False
                    if _is_header(row):
                        continue
                times.append(_time(row[0], file, line))
                objects.append(ids.setdefault(_object(row[1], file, line), len(ids)))
                sizes.append(_size(row[2], file, line))
                if len(times) == _BLOCK:
                    if not cutter.feed(np.array(times), np.array(objects), np.array(sizes)):
                        return
                    times, objects, sizes = [], [], []
    except UnicodeDecodeError as exc:
        raise WorkloadError(
            f"is not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x}); is it an "
            'oracleGeneral trace (format = "oracleGeneral")?',
            origin=Origin.file(file),
        ) from None
    except csv.Error as exc:
        raise WorkloadError(f"is not valid CSV: {exc}", origin=Origin.file(file)) from None
    if times:
        cutter.feed(np.array(times), np.array(objects), np.array(sizes))


def _is_header(row: list[str]) -> bool:
    """A first row whose time and size are both not numbers names the columns."""
    return not _is_number(row[0]) and not _is_number(row[2])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _time(text: str, file: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise _bad_field(file, line, "time", text, "a finite number")
    return value


def _object(text: str, file: Path, line: int) -> str:
    name = text.strip()
    if not name:
        raise _bad_field(file, line, "object", text, "an object id")
    return name


def _size(text: str, file: Path, line: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise _bad_field(file, line, "size", text, "a whole number of bytes >= 0")
    return value


def _bad_field(file: Path, line: int, column: str, text: str, wanted: str) -> WorkloadError:
    return WorkloadError(
        f"in column '{column}' is not {wanted}", origin=Origin.file(file, line), value=text
    )


# ---- applying the limits --------------------------------------------------------------------


class _Cutter:
    """Collects blocks of requests until a limit is reached; ``feed`` says whether to go on."""

    def __init__(self, limits: TraceLimits) -> None:
        self._ns_per_unit = limits.time_unit_s * _NS
        self._limit_ns = round(min(limits.duration_s * _NS, 2 * _MAX_NS))
        self._left = limits.max_requests
        self._first: float | None = None
        self._latest = -math.inf
        self._parts: list[tuple[Int64s, npt.NDArray[np.generic], Int64s]] = []
        self._skipped = 0

    def feed(
        self, times: npt.NDArray[np.float64], objects: npt.NDArray[np.generic], sizes: Int64s
    ) -> bool:
        if not len(times):
            return True
        if self._first is None:
            self._first = float(times[0])
        times = np.maximum.accumulate(np.maximum(times, self._latest))
        self._latest = float(times[-1])
        # Clipped so that no span, however long, overflows int64 nanoseconds.
        nanos = np.minimum(np.round((times - self._first) * self._ns_per_unit), _MAX_NS)
        offsets = nanos.astype(np.int64)
        end = int(np.searchsorted(offsets, self._limit_ns, side="left"))
        more = end == len(times)
        kept = np.flatnonzero(sizes[:end] > 0)
        stop = end
        if self._left is not None and len(kept) >= self._left:
            kept = kept[: self._left]
            stop = int(kept[-1]) + 1 if len(kept) else 0
            more = False
        if self._left is not None:
            self._left -= len(kept)
        self._skipped += stop - len(kept)
        self._parts.append((offsets[kept], objects[kept], sizes[kept].astype(np.int64)))
        return more

    def trace(self) -> Trace:
        if not self._parts:
            empty = np.zeros(0, np.int64)
            return Trace(empty, empty, empty, skipped=self._skipped)
        times = np.concatenate([p[0] for p in self._parts])
        raw = np.concatenate([p[1] for p in self._parts])
        sizes = np.concatenate([p[2] for p in self._parts])
        return Trace(times, _first_seen_ids(raw), sizes, skipped=self._skipped)


def _first_seen_ids(raw: npt.NDArray[np.generic]) -> Int64s:
    """Dense ids 0, 1, ... numbering objects in the order of their first request."""
    if not len(raw):
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    ids: Int64s = rank[inverse.reshape(-1)]
    return ids
