"""The ``cache-trace`` simulator: trace readers (cross-checked with libCacheSim), the workload
format and its errors, replay semantics on the simulation clock, and the differential test of
issue #4: the PIP-430 queue with both predicates off is a byte-capacity FIFO, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from test_pip430_cache import zipf_trace

from brokerlab import load_profile, simulate
from brokerlab.broker.events import EventLoop
from brokerlab.errors import WorkloadError
from brokerlab.host import PluginHost
from brokerlab.protocols import EntryCache, SimulationRequest
from brokerlab.simulation import Result, load_workload, plugin_context
from brokerlab.spark.cells import build_cells
from brokerlab.workloads import WorkloadDocument
from brokerlab_plugins.cache_trace.model import TraceWorkload
from brokerlab_plugins.cache_trace.plugin import estimated_cost, scale_trace_workload
from brokerlab_plugins.cache_trace.replay import SingleEntryRequests, TraceReplay, requests_of
from brokerlab_plugins.cache_trace.simulator import load_trace, replay_trace
from brokerlab_plugins.cache_trace.synthetic import zipf_csv
from brokerlab_plugins.cache_trace.traces import ORACLE_GENERAL, TraceLimits, read_trace
from brokerlab_plugins.legacy_cache import LegacyEntryCache

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
SHIPPED = ROOT / "plugins" / "brokerlab_plugins" / "cache_trace" / "workloads"
NO_TTL = {"managedLedgerCacheEvictionTimeThresholdMillis": str(10**9)}
# Both PIP-430 predicates off, size eviction down to the 0.98 trigger, no expiry: a FIFO.
AS_FIFO = {
    "cacheEvictionByExpectedReadCount": "false",
    "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed": "false",
    "managedLedgerCacheEvictionWatermark": "0.98",
    **NO_TTL,
}
MIB = 1 << 20

Row = tuple[float, int, int]  # time, object, size


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


def write_csv(path: Path, rows: Sequence[Row], *, header: bool = True) -> Path:
    lines = ["time,object,size"] if header else []
    lines += [f"{t:g},{obj},{size}" for t, obj, size in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_oracle_general(path: Path, rows: Sequence[Row]) -> Path:
    """oracleGeneral from its documented layout (next access unknown: -1)."""
    records = np.zeros(len(rows), dtype=ORACLE_GENERAL)
    for i, (t, obj, size) in enumerate(rows):
        records[i] = (int(t), obj, size, -1)
    records.tofile(path)
    return path


def write_workload(folder: Path, trace: str, fmt: str, **keys: object) -> Path:
    """``folder/w.toml`` replaying ``trace``; ``format`` is on line 5."""
    head = textwrap.dedent(
        f"""\
        simulator = "cache-trace"
        name = "test-trace"
        duration_s = 1e6
        trace = {json.dumps(trace)}
        format = {json.dumps(fmt)}
        """
    )
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())
    path = folder / "w.toml"
    path.write_text(head + extra, encoding="utf-8")
    return path


def run(
    host: PluginHost,
    workload: WorkloadDocument | str,
    profile: str = "pulsar-4.2.conf",
    overrides: Mapping[str, str] | None = None,
    seed: int = 0,
) -> Result:
    return simulate(
        load_profile(PROFILES / profile, overrides, host=host), workload, seed, host=host
    )


def synthetic_rows(requests: int, objects: int, seed: int, max_kib: int = 32) -> list[Row]:
    """The Zipf object sequence of the cache-level differential test, with one size per object
    (1..max_kib KiB) and 20 requests per simulated second (so requests share instants)."""
    sizes = np.random.default_rng(seed).integers(1024, max_kib * 1024, size=objects).tolist()
    trace = zipf_trace(requests, objects, 0.9, seed)
    return [(i // 20, obj, sizes[obj]) for i, obj in enumerate(trace)]


# ---- readers --------------------------------------------------------------------------------


def test_csv_with_and_without_header_reads_the_same(tmp_path: Path) -> None:
    rows: list[Row] = [(10, 7, 100), (10.5, 3, 200), (12, 7, 100), (13, 9, 50)]
    limits = TraceLimits(duration_s=1e6)
    with_header = read_trace(write_csv(tmp_path / "a.csv", rows), "csv", limits)
    without = read_trace(write_csv(tmp_path / "b.csv", rows, header=False), "csv", limits)
    for trace in (with_header, without):
        assert trace.times_ns.tolist() == [0, 500_000_000, 2_000_000_000, 3_000_000_000]
        assert trace.objects.tolist() == [0, 1, 0, 2]  # first-request order
        assert trace.sizes.tolist() == [100, 200, 100, 50]


def test_oracle_general_written_by_layout_is_what_libcachesim_reads(tmp_path: Path) -> None:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev-only GPL oracle) missing")
    rows: list[Row] = [(5, 2**40 + 1, 4096), (5, 17, 1), (9, 2**40 + 1, 4096), (2**31, 3, 2**31)]
    path = write_oracle_general(tmp_path / "t.oracleGeneral", rows)
    assert path.stat().st_size == 24 * len(rows)
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    assert [(r.clock_time, r.obj_id, r.obj_size) for r in reader] == rows
    ours = read_trace(path, "oracleGeneral", TraceLimits(duration_s=1e10))
    assert ours.times_ns.tolist() == [0, 0, 4 * 10**9, (2**31 - 5) * 10**9]
    assert ours.objects.tolist() == [0, 1, 0, 2]
    assert ours.sizes.tolist() == [4096, 1, 4096, 2**31]


def test_oracle_general_written_by_libcachesim_reads_like_its_csv(tmp_path: Path) -> None:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev-only GPL oracle) missing")
    rows = synthetic_rows(3_000, 300, seed=3)
    source = write_csv(tmp_path / "t.csv", rows)
    params = lcs.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",")
    params.time_field, params.obj_id_field, params.obj_size_field = 1, 2, 3
    reader = lcs.TraceReader(str(source), lcs.TraceType.CSV_TRACE, params)
    converted = tmp_path / "t.oracleGeneral"
    lcs.Util.convert_to_oracleGeneral(reader._reader, str(converted))
    limits = TraceLimits(duration_s=1e6)
    binary = read_trace(converted, "oracleGeneral", limits)
    text = read_trace(source, "csv", limits)
    assert len(binary) == len(rows)
    for a, b in zip(
        (binary.times_ns, binary.objects, binary.sizes),
        (text.times_ns, text.objects, text.sizes),
        strict=True,
    ):
        assert a.tolist() == b.tolist()


def test_limits_cut_the_trace_while_reading(tmp_path: Path) -> None:
    rows: list[Row] = [(100, 1, 10), (101, 2, 0), (103, 3, 10), (102, 1, 10), (104, 4, 10)]
    path = write_csv(tmp_path / "t.csv", rows)
    everything = read_trace(path, "csv", TraceLimits(duration_s=1e6))
    assert everything.skipped == 1  # the zero-size request, as libCacheSim skips it
    # Time never goes back: 102 after 103 is replayed at 103.
    assert everything.times_ns.tolist() == [0, 3 * 10**9, 3 * 10**9, 4 * 10**9]
    # duration_s: requests before first + 3.5 s; max_requests: the first n of those.
    assert len(read_trace(path, "csv", TraceLimits(duration_s=3.5))) == 3
    assert len(read_trace(path, "csv", TraceLimits(duration_s=3.0))) == 1
    assert len(read_trace(path, "csv", TraceLimits(duration_s=1e6, max_requests=2))) == 2
    # The time column counted in milliseconds.
    millis = read_trace(path, "csv", TraceLimits(duration_s=0.0035, time_unit_s=0.001))
    assert millis.times_ns.tolist() == [0, 3_000_000, 3_000_000]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("time,object,size\n1,a,10\n2,b,ten\n", 3, "value 'ten' in column 'size'"),
        ("1,a,10\n\n2,b\n", 3, "has 2 columns"),
        ("time,object,size\n1,a,10\nsoon,b,10\n", 3, "value 'soon' in column 'time'"),
        ("1,a,-4\n", 1, "whole number of bytes >= 0"),
    ],
)
def test_a_bad_csv_line_is_named_by_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WorkloadError) as caught:
        read_trace(path, "csv", TraceLimits(duration_s=1e6))
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}:") and fragment in message


def test_unreadable_traces_are_workload_errors(tmp_path: Path) -> None:
    limits = TraceLimits(duration_s=1e6)
    cases = {
        tmp_path / "missing.csv": ("csv", "no such trace file"),
        (tmp_path / "partial").with_suffix(".bin"): ("oracleGeneral", "24-byte records"),
        tmp_path / "empty.csv": ("csv", "holds no request"),
        tmp_path / "binary.csv": ("csv", "not a UTF-8 text file"),
    }
    (tmp_path / "partial.bin").write_bytes(bytes(30))
    (tmp_path / "empty.csv").write_text("time,object,size\n1,a,0\n", encoding="utf-8")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00\x01" * 10)
    for path, (fmt, fragment) in cases.items():
        with pytest.raises(WorkloadError, match=fragment) as caught:
            read_trace(path, fmt, limits)  # type: ignore[arg-type]
        assert str(caught.value).startswith(str(path))


def test_the_shipped_trace_is_the_generators_output_and_small() -> None:
    shipped = SHIPPED / "trace-zipf.csv"
    assert shipped.stat().st_size < 200 * 1024
    assert shipped.read_text(encoding="utf-8") == zipf_csv()


# ---- the workload document ------------------------------------------------------------------


def test_a_relative_trace_path_is_taken_from_the_workload_files_folder(
    tmp_path: Path, host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "workloads"
    folder.mkdir()
    write_csv(folder / "t.csv", [(0, 1, 10), (1, 1, 10)])
    toml = write_workload(folder, "t.csv", "csv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    workload = load_workload(host, str(toml))
    assert isinstance(workload, TraceWorkload)
    assert workload.trace == str(folder.resolve() / "t.csv")
    assert run(host, workload).metrics["trace_hits"] == 1
    # A document read back from JSON (as a Spark executor does) keeps the absolute path.
    assert TraceWorkload.model_validate_json(workload.model_dump_json()) == workload


def test_unknown_keys_and_formats_are_refused_with_their_line(
    tmp_path: Path, host: PluginHost
) -> None:
    toml = write_workload(tmp_path, "t.csv", "parquet")
    with pytest.raises(WorkloadError, match=r"w\.toml:5: key 'format'.*'oracleGeneral' or 'csv'"):
        load_workload(host, str(toml))
    toml = write_workload(tmp_path, "t.csv", "csv", admision="add")
    with pytest.raises(WorkloadError, match="did you mean 'admission'"):
        load_workload(host, str(toml))


# ---- the command line -----------------------------------------------------------------------


def brokerlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    return subprocess.run(
        [sys.executable, "-m", "brokerlab", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


def test_cli_reports_a_bad_trace_line_with_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("time,object,size\n0,a,10\n1,b,x\n", encoding="utf-8")
    toml = write_workload(tmp_path, "bad.csv", "csv")
    done = brokerlab("run", "--profile", "profiles/pulsar-4.2.conf", "--workload", str(toml))
    assert done.returncode == 2, done.stderr
    assert f"{tmp_path / 'bad.csv'}:3:" in done.stderr and "column 'size'" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_json_is_identical_for_the_same_seed() -> None:
    args = ("run", "--profile", "profiles/pulsar-4.2.conf", "--workload", "trace-zipf", "--json")
    first, second = brokerlab(*args, "--seed", "7"), brokerlab(*args, "--seed", "7")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert '"trace_hit_ratio"' in first.stdout and '"entry_cache": "pip430"' in first.stdout


# ---- replay semantics -----------------------------------------------------------------------


def test_the_disabled_cache_never_hits(host: PluginHost) -> None:
    metrics = run(host, "trace-zipf", "baseline.conf").metrics
    assert metrics["trace_hits"] == 0
    assert metrics["trace_misses"] == metrics["trace_requests"] == 8_000


@pytest.mark.parametrize("profile", ["pulsar-4.2.conf", "pulsar-4.0-legacy.conf"])
@pytest.mark.parametrize(("ttl_ms", "hit"), [(1_000, False), (10_000, True)])
def test_trace_time_drives_the_caches_ttl(
    tmp_path: Path, host: PluginHost, profile: str, ttl_ms: int, hit: bool
) -> None:
    write_csv(tmp_path / "t.csv", [(0, 1, 100), (5, 1, 100)])
    workload = load_workload(host, str(write_workload(tmp_path, "t.csv", "csv")))
    settings = {"managedLedgerCacheEvictionTimeThresholdMillis": str(ttl_ms)}
    assert run(host, workload, profile, settings).metrics["trace_hits"] == int(hit)


def test_admission_paths(tmp_path: Path, host: PluginHost) -> None:
    """The add path makes every broker cache a read-through cache. On the storage-read path the
    legacy cache caches nothing (its readers do not cache reads by default), while PIP-430 in
    expected-read mode behaves exactly as on the add path."""
    write_csv(tmp_path / "t.csv", synthetic_rows(2_000, 200, seed=5))
    by_path = {}
    for admission in ("add", "storage-read"):
        toml = write_workload(tmp_path, "t.csv", "csv", admission=admission)
        workload = load_workload(host, str(toml))
        by_path[admission] = {
            profile: run(host, workload, profile, NO_TTL).metrics["trace_hits"]
            for profile in ("pulsar-4.2.conf", "pulsar-4.0-legacy.conf")
        }
    assert by_path["add"]["pulsar-4.0-legacy.conf"] > 0
    assert by_path["storage-read"]["pulsar-4.0-legacy.conf"] == 0
    assert by_path["storage-read"]["pulsar-4.2.conf"] == by_path["add"]["pulsar-4.2.conf"] > 0


def byte_fifo_hits(rows: Sequence[Row], capacity: int) -> list[bool]:
    """A byte-capacity FIFO as libCacheSim's: evict the oldest insert until the new one fits."""
    order: deque[tuple[int, int]] = deque()
    held: set[int] = set()
    used = 0
    hits = []
    for _, obj, size in rows:
        hits.append(obj in held)
        if obj in held or size > capacity:
            continue
        while used + size > capacity:
            old, old_size = order.popleft()
            held.discard(old)
            used -= old_size
        order.append((obj, size))
        held.add(obj)
        used += size
    return hits


@pytest.mark.parametrize("size_mb", [1, 3])
def test_differential_pip430_without_predicates_is_a_byte_fifo(
    tmp_path: Path, host: PluginHost, size_mb: int
) -> None:
    """Issue #4: the PIP-430 queue with both predicates off, on a trace, gives the same hits as
    a byte-capacity FIFO (of the 0.98 trigger's capacity), request by request, end to end."""
    rows = synthetic_rows(6_000, 500, seed=11)
    path = write_oracle_general(tmp_path / "t.oracleGeneral", rows)
    workload = load_workload(host, str(write_workload(tmp_path, path.name, "oracleGeneral")))
    assert isinstance(workload, TraceWorkload)
    settings = {**AS_FIFO, "managedLedgerCacheSizeMB": str(size_mb)}
    profile = load_profile(PROFILES / "pulsar-4.2.conf", settings, host=host)
    choices = host.resolve(profile)
    assert choices.names()["eviction_predicates"] == ""
    _, hits, _ = replay_trace(SimulationRequest(profile, choices, workload, 0))
    capacity = int(size_mb * MIB * 0.98)
    assert hits.tolist() == byte_fifo_hits(rows, capacity)
    assert run(host, workload, overrides=settings).metrics["trace_hits"] == int(hits.sum())

    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev-only GPL oracle) missing")
    oracle = lcs.FIFO(cache_size=capacity, hashpower=16)
    expected = [bool(oracle.get(lcs.Request(obj_size=s, obj_id=o + 1))) for _, o, s in rows]
    assert hits.tolist() == expected
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, _ = lcs.FIFO(cache_size=capacity, hashpower=16).process_trace(reader)
    assert round((1 - miss_ratio) * len(rows)) == int(hits.sum())


_ENTRY_CACHE_MEMBERS = frozenset(n for n in vars(EntryCache) if not n.startswith("_"))


class _ThroughTheProtocol:
    """A cache the replay can reach only through the ``EntryCache`` protocol: it forwards the
    protocol's members to the real cache, and nothing else (no one-entry methods)."""

    def __init__(self, cache: EntryCache) -> None:
        self._cache = cache

    def __getattr__(self, name: str) -> object:
        if name not in _ENTRY_CACHE_MEMBERS:
            raise AttributeError(name)
        return getattr(self._cache, name)


@pytest.mark.parametrize("admission", ["add", "storage-read"])
def test_the_single_entry_path_replays_exactly_as_the_protocol_does(
    tmp_path: Path, host: PluginHost, admission: str
) -> None:
    """The replay finds the PIP-430 cache's one-entry methods (``SingleEntryCache``); through the
    plain protocol the same trace gives the same hits, peak and counters (time and size evictions
    included)."""
    write_csv(tmp_path / "t.csv", synthetic_rows(4_000, 300, seed=3))
    toml = write_workload(tmp_path, "t.csv", "csv", admission=admission)
    workload = load_workload(host, str(toml))
    assert isinstance(workload, TraceWorkload)
    # 5 s of trace time (100 requests, 1.6 MiB) outgrows the cache: both kinds of eviction run.
    settings = {
        "managedLedgerCacheSizeMB": "1",
        "managedLedgerCacheEvictionTimeThresholdMillis": "5000",
    }
    profile = load_profile(PROFILES / "pulsar-4.2.conf", settings, host=host)
    choices = host.resolve(profile)
    trace = load_trace(workload)
    outcomes = []
    for direct in (True, False):
        loop = EventLoop()
        cache = choices.entry_cache.record.factory(plugin_context(profile, choices, loop, 0))
        assert isinstance(requests_of(cache, "add"), SingleEntryRequests)
        assert not isinstance(requests_of(_ThroughTheProtocol(cache), "add"), SingleEntryRequests)
        replay = TraceReplay(
            cache if direct else _ThroughTheProtocol(cache),  # type: ignore[arg-type]
            choices.cursor_container.record.factory(),
            loop,
            eviction_interval_ns=10**9,
            entries_per_ledger=50,
            admission=workload.admission,
        )
        hits = replay.run(trace)
        outcomes.append((hits.tolist(), replay.peak_bytes, dict(cache.stats())))
    assert outcomes[0] == outcomes[1]
    stats = outcomes[0][2]
    assert stats["cache_evictions_time"] > 0 and stats["cache_evictions_size"] > 0
    assert 0 < sum(outcomes[0][0]) < len(trace)


def test_same_seed_same_result_and_seeds_do_not_change_a_trace(host: PluginHost) -> None:
    first = run(host, "trace-zipf", seed=3)
    assert run(host, "trace-zipf", seed=3).to_json() == first.to_json()
    assert run(host, "trace-zipf", seed=4).metrics == first.metrics


# ---- why PIP-430 trails the legacy cache at a 1 s TTL -----------------------------------------


PULSAR_CACHES = ("pulsar-4.0-legacy.conf", "pulsar-4.2.conf", "pulsar-5.0.conf")


def replay_hits(host: PluginHost, workload: WorkloadDocument, profile: str) -> list[bool]:
    """Whether each request of ``workload`` hit under ``profile``, request by request."""
    loaded = load_profile(PROFILES / profile, host=host)
    request = SimulationRequest(loaded, host.resolve(loaded), workload, 0)
    hits: list[bool] = replay_trace(request)[1].tolist()
    return hits


@pytest.mark.parametrize("readmitted", [True, False])
def test_a_lower_position_admitted_again_keeps_legacy_entries_past_their_ttl(
    tmp_path: Path, host: PluginHost, readmitted: bool
) -> None:
    """The legacy expiry (pre-4.1 ``RangeCache.evictLEntriesBeforeTimestamp``) walks one
    ledger cache in position order and stops at the first entry that has not expired. A trace
    object missed again is admitted at its old position with a new timestamp, so an object of a
    lower position admitted again blocks the expiry of every older entry above it (PIP-430's
    motivation: the walk assumes position order is time order). PIP-430's removal queue is in
    insertion order and honours the TTL, with or without the recently-accessed requeue (the
    entry is not read within its TTL).

    A is at position 0, B at position 1 (admitted at 0.25 s, expired at 1.25 s). A re-admitted
    at 1.1 s keeps B in the legacy cache until A expires at 2.1 s: B's request at 1.9 s hits
    there, 1.65 s after it was admitted. Without A's re-admission it misses everywhere."""
    a, b = 7, 3
    rows: list[Row] = [(0.0, a, 100), (0.25, b, 100)]
    rows += [(1.1, a, 100)] if readmitted else []
    rows += [(1.9, b, 100)]
    write_csv(tmp_path / "t.csv", rows)
    workload = load_workload(host, str(write_workload(tmp_path, "t.csv", "csv")))
    legacy = replay_hits(host, workload, "pulsar-4.0-legacy.conf")
    assert legacy[-1] is readmitted
    assert not any(legacy[:-1])
    for profile in ("pulsar-4.2.conf", "pulsar-5.0.conf"):
        assert not any(replay_hits(host, workload, profile)), profile


def admitted_ages_s(workload: WorkloadDocument, hits: Sequence[bool]) -> list[float]:
    """For each hit, seconds since its object was last admitted (its latest miss)."""
    assert isinstance(workload, TraceWorkload)
    objects, times, _ = load_trace(workload).columns()
    admitted: dict[int, int] = {}
    ages = []
    for obj, t, hit in zip(objects, times, hits, strict=True):
        if hit:
            ages.append((t - admitted[obj]) / 1e9)
        else:
            admitted[obj] = t
    return ages


def test_on_trace_zipf_only_the_legacy_cache_keeps_entries_past_the_ttl(
    host: PluginHost,
) -> None:
    """Why the legacy cache beats every PIP-430 profile on trace-zipf at the 1 s TTL: on this
    trace its expiry is blocked (see the test above) and it fills to its size limit, while
    pulsar-5.0 is an exact 1 s TTL and pulsar-4.2 keeps only entries read within their TTL.
    Lifting the TTL reverses the order. Figures in docs/workloads.md ("The built-in Zipf
    trace")."""
    workload = load_workload(host, "trace-zipf")
    limit = load_profile(PROFILES / "pulsar-4.2.conf", host=host).settings.cache_size_bytes
    result = {p: run(host, workload, p).metrics for p in PULSAR_CACHES}
    ratio = {p: m["trace_hit_ratio"] for p, m in result.items()}
    assert ratio["pulsar-4.0-legacy.conf"] > ratio["pulsar-4.2.conf"] > ratio["pulsar-5.0.conf"]
    # pulsar-5.0: no hit on an entry older than the TTL and one eviction interval.
    five = admitted_ages_s(workload, replay_hits(host, workload, "pulsar-5.0.conf"))
    assert max(five) <= 1.0 + 0.01
    # legacy: most hits are on entries admitted more than a TTL earlier; it fills up.
    legacy = admitted_ages_s(workload, replay_hits(host, workload, "pulsar-4.0-legacy.conf"))
    assert sum(age > 1.0 for age in legacy) > len(legacy) / 2
    assert result["pulsar-4.0-legacy.conf"]["trace_peak_cache_bytes"] > 0.9 * limit
    for profile in ("pulsar-4.2.conf", "pulsar-5.0.conf"):
        assert result[profile]["trace_peak_cache_bytes"] < 0.25 * limit
    # The TTL isolates it: without one, pulsar-4.2 is well ahead of the legacy cache.
    no_ttl = {p: run(host, workload, p, NO_TTL).metrics["trace_hit_ratio"] for p in ratio}
    assert no_ttl["pulsar-4.2.conf"] > no_ttl["pulsar-4.0-legacy.conf"] + 0.2


class _UnblockedExpiry(_ThroughTheProtocol):
    """The legacy cache with a counterfactual expiry that removes every expired entry wherever it
    sits, instead of stopping at the first live position (a wrapper: the cache may be
    compiled, and a compiled class cannot be patched or subclassed)."""

    def __init__(self, cache: LegacyEntryCache) -> None:
        super().__init__(cache)
        self._legacy = cache

    def evict_expired(self) -> None:
        cache = self._legacy
        max_ts = cache._clock.now_ns() - cache.limits.ttl_ns
        for ledger in cache._caches.values():
            doomed = [key for key, (_, ts) in ledger.entries.items() if ts <= max_ts]
            freed = sum(ledger.entries.pop(key)[0] for key in doomed)
            ledger.size -= freed  # the keys stay in the position heap, as remove_ledger leaves them
            cache._removed(freed)


def test_legacy_expiry_unblocked_loses_its_lead_on_trace_zipf(host: PluginHost) -> None:
    """The counterfactual: with an expiry that is never blocked, the legacy cache is an exact
    1 s TTL on this trace, level with pulsar-5.0 and behind pulsar-4.2. Its lead over PIP-430
    is the head-of-line blocking and nothing else."""
    workload = load_workload(host, "trace-zipf")
    assert isinstance(workload, TraceWorkload)
    ratio = {p: run(host, workload, p).metrics["trace_hit_ratio"] for p in PULSAR_CACHES}
    profile = load_profile(PROFILES / "pulsar-4.0-legacy.conf", host=host)
    choices = host.resolve(profile)
    loop = EventLoop()
    cache = choices.entry_cache.record.factory(plugin_context(profile, choices, loop, 0))
    assert isinstance(cache, LegacyEntryCache)
    replay = TraceReplay(
        _UnblockedExpiry(cache),  # type: ignore[arg-type]
        choices.cursor_container.record.factory(),
        loop,
        eviction_interval_ns=profile.settings.cache_eviction_interval_ms * 1_000_000,
        entries_per_ledger=profile.settings.managed_ledger_max_entries_per_ledger,
    )
    unblocked = float(replay.run(load_trace(workload)).mean())
    assert ratio["pulsar-4.0-legacy.conf"] - unblocked > 0.1
    assert abs(unblocked - ratio["pulsar-5.0.conf"]) < 0.005
    assert unblocked < ratio["pulsar-4.2.conf"]


# ---- the simulator record -------------------------------------------------------------------


def test_scale_replays_the_first_part_and_cost_estimates_requests(host: PluginHost) -> None:
    workload = load_workload(host, "trace-zipf")
    assert isinstance(workload, TraceWorkload)
    assert scale_trace_workload(workload, 1.0) is workload
    quarter = scale_trace_workload(workload, 0.25)
    assert quarter.max_requests == 2_000
    assert run(host, quarter).metrics["trace_requests"] == 2_000
    assert 7_000 < estimated_cost(workload) < 9_000
    assert estimated_cost(quarter) == 2_000


def test_the_matrix_pairs_trace_workloads_with_pulsar_profiles_only(host: PluginHost) -> None:
    pulsar = load_profile(PROFILES / "pulsar-4.2.conf", host=host)
    cells = build_cells([pulsar], [], ["trace-zipf"], 2, host, scale=0.5)
    assert [c.workload for c in cells] == ["trace-zipf", "trace-zipf"]
    assert all('"max_requests":4000' in c.workload_json for c in cells)
    kafka = load_profile(PROFILES / "kafka-ttl.conf", host=host)
    with pytest.raises(WorkloadError, match="none of the workloads"):
        build_cells([kafka], [], ["trace-zipf"], 1, host)
