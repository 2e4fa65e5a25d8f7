"""The resource estimate of a workload and the progress shown with it (#27)."""

from __future__ import annotations

import io

import pytest

from brokerlab.textui import ProgressBar
from brokerlab.workloads import WorkloadSpec, parse_workload
from brokerlab.workloads.resources import estimate, format_bytes, parse_bytes


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
