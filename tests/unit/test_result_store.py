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


# ---- one row per cell, and files that cannot be read -------------------------------------------


def wave(*rows: dict[str, object]) -> object:
    return pa.Table.from_pylist(list(rows), schema=RESULT_SCHEMA)


def parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix == ".parquet")


def test_a_retry_replaces_the_cells_row_and_the_failed_one_moves_to_attempts(
    tmp_path: Path,
) -> None:
    import pandas as pd

    store = ResultStore(tmp_path)
    failed = {**row("a", "w"), "status": "failed", "error": "boom"}
    store.write(wave(failed, row("b", "w", delivered=1.0)))
    retried = {**row("a", "w", delivered=2.0), "finished_at": "2026-11-27T00:00:00+00:00"}
    store.write(wave(retried))
    # The query docs/spark.md documents: one row per cell, the retry's.
    users = pd.read_parquet(tmp_path / "results")
    assert sorted(users["cell_id"]) == ["a", "b"]
    assert users.set_index("cell_id").loc["a", "status"] == "ok"
    history = pd.read_parquet(tmp_path / "attempts")
    assert list(history["cell_id"]) == ["a"] and list(history["error"]) == ["boom"]
    assert list(history["workload"]) == ["w"]
    # A fresh store (another run) replaces too: it finds the old row on disk.
    again = ResultStore(tmp_path)
    again.write(wave({**retried, "finished_at": "2026-11-28T00:00:00+00:00"}))
    assert sorted(pd.read_parquet(tmp_path / "results")["cell_id"]) == ["a", "b"]
    assert len(pd.read_parquet(tmp_path / "attempts")) == 2
    assert not list((tmp_path / ".tmp").iterdir())  # no temporaries left behind


def test_compact_keeps_the_latest_row_of_a_cell_written_twice(tmp_path: Path) -> None:
    """Two files holding one cell: a run cut short between writing a retry and retiring the
    old row, or a folder written before results were kept one row per cell."""
    import pandas as pd
    import pyarrow.parquet as pq

    store = ResultStore(tmp_path)
    store.write(wave({**row("a", "w"), "status": "failed"}, row("b", "w")))
    (first,) = parts(tmp_path / "results")
    newer = {**row("a", "w", delivered=3.0), "finished_at": "2026-11-29T00:00:00+00:00"}
    pq.write_table(wave(newer).drop_columns(["workload"]), first.with_name("part-z.parquet"))
    assert len(pd.read_parquet(tmp_path / "results")) == 3
    assert ResultStore(tmp_path).compact() == 1
    users = pd.read_parquet(tmp_path / "results").set_index("cell_id")
    assert sorted(users.index) == ["a", "b"] and users.loc["a", "delivered"] == 3.0


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def _random_bytes(path: Path) -> None:
    path.write_bytes(__import__("os").urandom(5000))


def _seed_as_text(path: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    index = table.schema.get_field_index("seed")
    pq.write_table(table.set_column(index, "seed", pa.array(["0"] * table.num_rows)), path)


def _a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside.parquet").write_bytes(b"x")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_zero_bytes, "Parquet"),
        (_truncated, "Parquet"),
        (_random_bytes, "Parquet"),
        (_seed_as_text, "column 'seed' is string, not int64"),
        (_a_folder, "a folder"),
    ],
)
def test_an_unreadable_part_is_moved_aside_and_its_cells_count_as_not_run(
    tmp_path: Path, damage: object, reason: str
) -> None:
    import pandas as pd

    warnings: list[str] = []
    store = ResultStore(tmp_path, warn=warnings.append)
    store.write(wave(row("good", "w1", delivered=1.0)))
    store.write(wave(row("bad", "w2", delivered=2.0)))
    (bad,) = parts(tmp_path / "results" / "workload=w2")
    damage(bad)  # type: ignore[operator]

    fresh = ResultStore(tmp_path, warn=warnings.append)
    assert fresh.finished() == {"good"}  # resume runs "bad" again
    (line,) = warnings
    target = tmp_path / "quarantine" / "workload=w2" / bad.name
    assert line.startswith(f"{bad} is not a result file (") and reason in line
    assert f"moved it to {target}" in line and "\n" not in line
    assert target.exists() and not bad.exists()
    assert list(fresh.load()["cell_id"]) == ["good"]
    assert list(pd.read_parquet(tmp_path / "results")["cell_id"]) == ["good"]
    assert len(warnings) == 1  # moved once: the next read finds nothing to warn about
    fresh.write(wave(row("bad", "w2", delivered=2.0)))
    assert fresh.finished() == {"good", "bad"}
