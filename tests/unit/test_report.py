"""summary.csv and report.html of a results folder holding several matrices (no Spark needed)."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

from brokerlab.report import build_report  # noqa: E402
from brokerlab.report.plots import config_label  # noqa: E402
from brokerlab.spark.results import ResultStore  # noqa: E402
from brokerlab.spark.schema import RESULT_SCHEMA  # noqa: E402

FINGERPRINT_A, FINGERPRINT_B = "a" * 64, "b" * 64


def row(
    seed: int, value: float, *, fingerprint: str = FINGERPRINT_A, scale: float = 0.05, **sets: str
) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
    values.update(
        cell_id=f"{fingerprint[:4]}-{scale}-{seed}-{sorted(sets.items())}",
        profile="baseline",
        overrides=json.dumps(sets),
        workload="w",
        seed=seed,
        scale=scale,
        status="ok",
        profile_fingerprint=fingerprint,
        brokerlab_version="0",
        finished_at="2026-11-26T00:00:00+00:00",
        storage_entries_read=value,
    )
    return values


def report_of(tmp_path: Path, rows: list[dict[str, object]]) -> tuple[list[dict[str, str]], str]:
    """Each matrix run writes its own wave files, as two runs into one --out do."""
    store = ResultStore(tmp_path)
    for one in rows:
        store.write(pa.Table.from_pylist([one], schema=RESULT_SCHEMA))
    page = build_report(tmp_path).path.read_text(encoding="utf-8")
    with (tmp_path / "summary.csv").open() as handle:
        summary = [r for r in csv.DictReader(handle) if r["metric"] == "storage_entries_read"]
    return summary, page


def table_rows(page: str) -> dict[str, str]:
    """Label -> seeds of each configuration row of the report's table."""
    found = re.findall(r"<tr><td>([^<]*)</td><td>(\d+)</td>", page)
    labels = [html.unescape(label) for label, _ in found]
    assert len(labels) == len(set(labels)), labels  # no two rows (or bars) share a label
    return dict(zip(labels, (seeds for _, seeds in found), strict=True))


def test_runs_with_different_settings_are_not_merged(tmp_path: Path) -> None:
    # Two matrices into one folder: the same profile and --set values, but other effective
    # settings the second time (BROKERLAB_<key>=..., an edited profile).
    first = [row(seed, 10.0) for seed in range(2)]
    second = [row(seed, 30.0, fingerprint=FINGERPRINT_B) for seed in range(2)]
    summary, page = report_of(tmp_path, first + second)
    assert sorted((r["profile_fingerprint"], r["n"], r["mean"]) for r in summary) == [
        (FINGERPRINT_A, "2", "10.0"),
        (FINGERPRINT_B, "2", "30.0"),
    ]
    assert table_rows(page) == {
        "baseline (settings aaaaaaaa)": "2",
        "baseline (settings bbbbbbbb)": "2",
    }


def test_each_scale_gets_its_own_row(tmp_path: Path) -> None:
    rows = [row(seed, 10.0 + seed, scale=scale) for scale in (0.05, 0.1) for seed in range(3)]
    summary, page = report_of(tmp_path, rows)
    assert sorted((r["scale"], r["n"]) for r in summary) == [("0.05", "3"), ("0.1", "3")]
    assert table_rows(page) == {"baseline (scale 0.05)": "3", "baseline (scale 0.1)": "3"}


def test_labels_keep_the_whole_key(tmp_path: Path) -> None:
    key = "remote.log.index.file.cache.ttl.ms"
    assert config_label("kafka", json.dumps({key: "-1"})) == f"kafka [{key}=-1]"
    rows = [row(0, 1.0, **{key: "-1"}), row(0, 2.0, fingerprint=FINGERPRINT_B, **{key: "600"})]
    _, page = report_of(tmp_path, rows)
    assert set(table_rows(page)) == {f"baseline [{key}=-1]", f"baseline [{key}=600]"}
    assert f"against {key}" in page
