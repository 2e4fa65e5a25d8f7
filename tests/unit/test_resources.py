"""The resource estimate of a workload and the progress shown with it (#27)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from brokerlab._api import make_host
from brokerlab.simulation import load_workload
from brokerlab.textui import ProgressBar
from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab.workloads.resources import estimate, format_bytes, parse_bytes
from brokerlab_plugins.cache_trace.model import TraceWorkload
from brokerlab_plugins.cache_trace.resources import estimate_trace
from brokerlab_plugins.kafka_remote_index.model import KafkaWorkload
from brokerlab_plugins.kafka_remote_index.resources import estimate_kafka


def spec(body: str, duration: float = 10) -> WorkloadSpec:
    text = f'name = "w"\nduration_s = {duration}\n[[topics]]\n{body}\n'
    document = parse_workload(text, "w.toml")
    assert isinstance(document, WorkloadSpec)
    return document


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8G", 8 * 2**30),
        ("512M", 512 * 2**20),
        ("1.5GiB", 3 * 2**29),
        ("2gb", 2 * 2**30),
        ("4096", 4096),
        (" 1 T ", 2**40),
        ("10k", 10 * 2**10),
    ],
)
def test_sizes_are_binary(text: str, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "G", "lots", "0", "-1M", "inf", "nan", "1X"])
def test_what_is_no_size_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_bytes(text)


def test_format_bytes() -> None:
    assert format_bytes(3 * 2**29) == "1.5 GiB"
    assert format_bytes(100) == "100 bytes"


def test_memory_grows_with_each_count_and_the_biggest_driver_comes_first() -> None:
    base = estimate(spec("rate = 100\n[[topics.subscriptions]]\n"))
    for body in (
        "rate = 100\ncount = 100\n[[topics.subscriptions]]\n",
        "rate = 100\nbacklog = 100000\n[[topics.subscriptions]]\n",
        "rate = 10000\n[[topics.subscriptions]]\n",
        "rate = 100\n[[topics.subscriptions]]\ncount = 100\n",
        "rate = 100\ndelays = [{ fraction = 1, min_ms = 1, max_ms = 2 }]\n"
        "[[topics.subscriptions]]\ncount = 10\n",
    ):
        assert estimate(spec(body)).peak_bytes > base.peak_bytes, body
    found = estimate(spec("count = 10\nbacklog = 1000000\n[[topics.subscriptions]]\n"))
    assert found.drivers[0][0] == "topics[0].count (10) x topics[0].backlog (1,000,000)"
    assert found.line().startswith("estimate: peak memory ~3.")


def test_batches_divide_the_entries() -> None:
    one = estimate(spec("rate = 10000\n"))
    batched = estimate(spec("rate = 10000\nbatch_size = 100\n"))
    assert batched.peak_bytes < one.peak_bytes and batched.events < one.events / 50


def test_progress_off_a_terminal_is_one_line_now_and_then_with_the_estimate() -> None:
    """A run in the background once showed neither estimate nor progress."""
    stream = io.StringIO()
    bar = ProgressBar(stream, "w seed 0", after_s=0, note="estimate: x", every_s=3600)
    bar.update(0.25)
    bar.update(0.5)  # within every_s of the first line: nothing
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("w seed 0: 25% after 0 s")
    assert lines[0].endswith("(estimate: x)")


def test_the_matrix_progress_shows_the_estimate_of_its_largest_cell() -> None:
    from brokerlab.spark.progress import MatrixProgress

    stream = io.StringIO()
    progress = MatrixProgress(stream, 2, note="largest cell, w: peak memory ~1 GiB")
    progress.update(2)
    assert stream.getvalue().rstrip().endswith("(largest cell, w: peak memory ~1 GiB)")


# ---- the other simulators: Kafka tiered storage and cache traces -------------------------------

KAFKA = """\
simulator = "kafka-tiered-storage"
name = "k"
duration_s = {duration}
[[partitions]]
name = "p"
count = {count}
segment_interval_s = {interval}
history_s = {history}
retention_s = 7200
index = {{ offset_kib = {{ min = 1, max = 2 }}, time_kib = {{ min = 1, max = 2 }} }}
[[consumers]]
name = "c"
partitions = "p"
from_age_s = {from_age}
at_end = "loop"
fetch_rate = {rate}
"""


def kafka(
    count: int = 4,
    history: float = 3600,
    interval: float = 300,
    duration: float = 3600,
    rate: float = 1.0,
) -> KafkaWorkload:
    text = KAFKA.format(
        count=count,
        history=history,
        from_age=history + 1,
        interval=interval,
        duration=duration,
        rate=rate,
    )
    document = parse_workload(text, "k.toml", HOST.workload_models())
    assert isinstance(document, KafkaWorkload)
    return document


def trace(path: Path, size: int, max_requests: int | None = None) -> TraceWorkload:
    """An oracleGeneral trace of ``size`` bytes: sparse, so a huge one costs no disk."""
    with path.open("wb") as handle:
        handle.truncate(size)
    limit = "" if max_requests is None else f"max_requests = {max_requests}\n"
    text = (
        f'simulator = "cache-trace"\nname = "t"\nduration_s = 60\ntrace = "{path}"\n'
        f'format = "oracleGeneral"\n{limit}'
    )
    document = parse_workload(text, "t.toml", HOST.workload_models())
    assert isinstance(document, TraceWorkload)
    return document


HOST = make_host()


def test_every_built_in_simulator_estimates_its_workloads() -> None:
    """No workload escapes the memory limit for want of an estimate."""
    for reg in HOST.records("workload"):
        workload = load_workload(HOST, reg.record.name)
        estimator = HOST.simulator(workload.simulator).estimate
        assert estimator is not None, workload.simulator
        found = estimator(workload)
        assert 64 * 2**20 <= found.peak_bytes < 2**30 and found.events > 0, reg.record.name


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 1_000_000),
    history=st.floats(0, 1e8),
    interval=st.floats(1e-3, 1e6),
    duration=st.floats(1, 1e7),
    rate=st.floats(1e-3, 1e3),
    grow=st.sampled_from(["count", "history", "interval", "duration", "rate"]),
    factor=st.floats(1.01, 1000),
)
def test_the_kafka_estimate_grows_with_each_driving_count(
    count: int,
    history: float,
    interval: float,
    duration: float,
    rate: float,
    grow: str,
    factor: float,
) -> None:
    """More partitions, a longer history or run, shorter segments or more fetches never cost
    less, and more partitions or a longer history always cost more."""
    keys = {
        "count": count, "history": history, "interval": interval, "duration": duration,
        "rate": rate,
    }  # fmt: skip
    bigger = dict(keys)
    if grow == "count":
        bigger["count"] = min(1_000_000, max(count + 1, round(count * factor)))
    elif grow == "interval":
        bigger["interval"] = interval / factor  # shorter segments: more of them
    else:
        bigger[grow] = keys[grow] * factor
    assume(bigger["count"] > count or grow != "count")
    assume(bigger["history"] <= 3.15e9 and bigger["duration"] <= 1e7)
    assume(bigger["rate"] <= 1e9)
    base = estimate_kafka(kafka(**keys))  # type: ignore[arg-type]
    more = estimate_kafka(kafka(**bigger))  # type: ignore[arg-type]
    assert more.peak_bytes >= base.peak_bytes
    assert more.events >= base.events
    if grow == "count":
        assert more.peak_bytes > base.peak_bytes


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    # Up to 2.4 TB (sparse): within what common file systems allow a file.
    records=st.integers(1, 10**9),
    factor=st.integers(2, 100),
    limit=st.one_of(st.none(), st.integers(1, 10**11)),
)
def test_the_trace_estimate_grows_with_the_requests(
    tmp_path: Path, records: int, factor: int, limit: int | None
) -> None:
    """A longer trace (or a higher max_requests) never costs less; nothing is read from it."""
    path = tmp_path / "t.bin"
    small = estimate_trace(trace(path, records * 24, limit))
    big = estimate_trace(trace(path, records * factor * 24, limit))
    assert big.peak_bytes >= small.peak_bytes and big.events >= small.events
    if limit is None or limit >= records * factor:
        assert big.peak_bytes > small.peak_bytes
    raised = estimate_trace(trace(path, records * 24, (limit or records) * factor))
    assert raised.peak_bytes >= estimate_trace(trace(path, records * 24, limit)).peak_bytes
