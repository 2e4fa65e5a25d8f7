"""The Parquet result store reads folders written by other brokerlab versions."""

from __future__ import annotations

from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

from brokerlab.spark.results import ResultStore  # noqa: E402
from brokerlab.spark.schema import METRIC_COLUMNS, RESULT_SCHEMA  # noqa: E402


def row(cell_id: str, workload: str, **metrics: float) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
    values.update(
        cell_id=cell_id,
        workload=workload,
        status="ok",
        finished_at="2026-11-26T00:00:00+00:00",
        **metrics,
    )
    return values


def test_rows_of_an_older_schema_load_with_the_missing_metrics_null(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    newest = METRIC_COLUMNS[-1]
    # An "older" file: the same schema without the newest metric column.
    older_schema = pa.schema([f for f in RESULT_SCHEMA if f.name != newest])
    older = row("old", "w", delivered=5.0)
    del older[newest]
    store.write(pa.Table.from_pylist([older], schema=older_schema))
    alone = store.load()
    assert list(alone.columns) == list(RESULT_SCHEMA.names)
    assert alone[newest].isna().all()
    store.write(pa.Table.from_pylist([row("new", "w", delivered=7.0, **{newest: 3.0})],
                                     schema=RESULT_SCHEMA))  # fmt: skip
    frame = store.load().set_index("cell_id")
    assert list(frame.reset_index().columns) == list(RESULT_SCHEMA.names)
    assert frame.loc["old", "delivered"] == 5.0 and frame.loc["new", "delivered"] == 7.0
    assert frame.loc["new", newest] == 3.0
    assert frame.loc["old", newest] is None or frame.loc["old", newest] != frame.loc["old", newest]


def test_per_broker_metrics_round_trip_and_one_broker_files_keep_the_old_schema(
    tmp_path: Path,
) -> None:
    """A wave of one-broker rows is written without the per_broker column (the file a version
    without it wrote); a cluster's rows keep theirs; both load, resume and summarize together."""
    import pyarrow.parquet as pq

    from brokerlab.spark.results import summarize

    store = ResultStore(tmp_path)
    store.write(pa.Table.from_pylist([row("one", "w1", delivered=5.0)], schema=RESULT_SCHEMA))
    (one_file,) = (tmp_path / "results" / "workload=w1").glob("*.parquet")
    old_columns = [n for n in RESULT_SCHEMA.names if n not in ("workload", "per_broker")]
    assert pq.read_schema(one_file).names == old_columns

    brokers = [{"delivered": 3.0, "topic_moves": 0.0}, {"delivered": 4.0, "topic_moves": 2.0}]
    cluster = row("three", "w3", delivered=7.0)
    cluster["per_broker"] = brokers
    store.write(pa.Table.from_pylist([cluster], schema=RESULT_SCHEMA))
    (three_file,) = (tmp_path / "results" / "workload=w3").glob("*.parquet")
    assert pq.read_schema(three_file).names == [*old_columns, "per_broker"]

    frame = store.load().set_index("cell_id")
    assert frame.loc["three", "per_broker"] == brokers
    assert frame.loc["one", "per_broker"] is None
    assert store.finished() == {"one", "three"}
    assert set(summarize(frame.reset_index())["workload"]) == {"w1", "w3"}
