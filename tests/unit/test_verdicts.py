"""Verdicts, metric selection, configuration descriptions and number formats, on synthetic result
rows (no Spark: the rows are what a matrix writes, built by hand)."""

from __future__ import annotations

import csv
import html
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

from brokerlab.cli import main  # noqa: E402
from brokerlab.errors import WorkloadError  # noqa: E402
from brokerlab.report import build_report  # noqa: E402
from brokerlab.report.configs import describe_configurations  # noqa: E402
from brokerlab.report.numbers import format_metric, format_percent  # noqa: E402
from brokerlab.report.verdicts import (  # noqa: E402
    paired_difference,
    select_metrics,
    verdicts,
)
from brokerlab.spark.results import ResultStore, write_profile_order  # noqa: E402
from brokerlab.spark.schema import RESULT_SCHEMA  # noqa: E402
from brokerlab.workloads import parse_workload  # noqa: E402

MIB = 1024 * 1024
PIP430 = {"entry_cache": "pip430", "ack_state_persister": "range-count"}
LEGACY = {"entry_cache": "legacy", "ack_state_persister": "range-count"}
SETTINGS = {
    "managedLedgerCacheSizeMB": 64,
    "sim.maxDirectMemoryMB": 4096,
    "managedLedgerMaxUnackedRangesToPersist": 10000,
    "sim.include": [],
}


def row(
    profile: str,
    seed: int,
    *,
    workload: str = "w",
    overrides: dict[str, str] | None = None,
    plugins: dict[str, str] | None = None,
    settings: dict[str, object] | None = None,
    status: str = "ok",
    **metrics: float,
) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
    sets = json.dumps(overrides or {})
    values.update(
        cell_id=f"{profile}-{sets}-{workload}-{seed}",
        profile=profile,
        overrides=sets,
        workload=workload,
        seed=seed,
        scale=0.1,
        status=status,
        profile_fingerprint=f"{profile}{sets}",
        plugins=json.dumps(plugins or PIP430),
        plugin_versions=json.dumps(dict.fromkeys(plugins or PIP430, "brokerlab 0.1.0")),
        settings=json.dumps(settings if settings is not None else SETTINGS),
        brokerlab_version="0",
        finished_at="2026-11-26T00:00:00+00:00",
    )
    values.update(metrics)
    return values


def frame(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(RESULT_SCHEMA.names))


def reads(profile: str, values: Sequence[float], **extra: object) -> list[dict[str, object]]:
    """One row per seed with these storage reads (and a cache that filled: size evictions)."""
    metrics = {"cache_peak_bytes": 64.0 * MIB, "cache_evictions_size": 10.0}
    metrics.update({k: v for k, v in extra.items() if isinstance(v, float)})
    options = {k: v for k, v in extra.items() if not isinstance(v, float)}
    return [
        row(profile, seed, storage_entries_read=value, **options, **metrics)  # type: ignore[arg-type]
        for seed, value in enumerate(values)
    ]


# ---- the paired comparison ------------------------------------------------------------------


def test_paired_interval_is_the_t_interval_of_per_seed_differences() -> None:
    # Differences 10, 12, 14: mean 12, sd 2, t(2) = 4.303: half-width 4.303 * 2 / sqrt(3).
    difference = paired_difference({0: 110, 1: 212, 2: 314}, {0: 100, 1: 200, 2: 300}, "ref")
    assert difference is not None
    half = 4.303 * 2 / 3**0.5
    assert difference.mean == pytest.approx(12)
    assert (difference.low, difference.high) == pytest.approx((12 - half, 12 + half))
    assert difference.percent == pytest.approx(6.0)  # 12 of the reference mean 200
    assert difference.distinguishable is True
    # Unpaired, the two configurations' own spreads (sd 100) would hide the difference.


def test_clear_winner_is_ranked_first_and_beyond_noise() -> None:
    rows = reads("legacy", [1000.0, 1100.0, 900.0], plugins=LEGACY) + reads(
        "pip430", [500.0, 560.0, 440.0]
    )
    [verdict] = verdicts(frame(rows), profiles=["legacy", "pip430"])
    assert verdict.metric == "storage_entries_read" and not verdict.higher_is_better
    assert [(s.label, s.rank) for s in verdict.standings] == [("pip430", 1), ("legacy", 2)]
    assert verdict.baseline == "legacy"
    winner = verdict.standings[0].vs_baseline
    assert winner is not None and winner.percent == pytest.approx(-50.0)
    assert winner.distinguishable is True
    line = verdict.line()
    assert line.startswith(
        "w: storage_entries_read (entries, lower is better, 3 seeds; against legacy): "
    )
    assert re.search(
        r"1\. pip430 500, -50% \[-\d+(\.\d+)?%, -\d+(\.\d+)?%\] beyond seed noise; "
        r"2\. legacy 1,000 \(baseline\)\.$",
        line,
    )
    assert "never reached" not in line  # the caches filled


def test_tie_within_noise_is_called_a_tie() -> None:
    # Per-seed differences +1, -2, +3: their interval includes zero.
    rows = reads("a", [100.0, 110.0, 90.0]) + reads("b", [101.0, 108.0, 93.0])
    [verdict] = verdicts(frame(rows), profiles=["a", "b"])
    assert [s.label for s in verdict.standings] == ["a", "b"]
    assert verdict.standings[1].vs_best is not None
    assert verdict.standings[1].vs_best.distinguishable is False
    assert verdict.tied_with_best() == ["b"]
    line = verdict.line()
    assert "no configuration differs beyond seed noise; 1. a 100 (baseline); 2. b 101," in line
    assert line.endswith("within seed noise, tied with the best.")


def test_higher_is_better_for_a_hit_ratio_headline() -> None:
    rows = [
        row(p, seed, workload="t", trace_hit_ratio=value, trace_requests=10.0)
        for p, values in (("small", [0.5, 0.52]), ("big", [0.8, 0.79]))
        for seed, value in enumerate(values)
    ]
    [verdict] = verdicts(frame(rows), profiles=["small", "big"])
    assert verdict.metric == "trace_hit_ratio" and verdict.higher_is_better
    assert verdict.best.label == "big"


def test_a_cache_that_never_filled_is_named() -> None:
    rows = reads("legacy", [10.0, 11.0], plugins=LEGACY) + [
        row("pip430", seed, storage_entries_read=10.0, cache_peak_bytes=2.5 * MIB,
            cache_evictions_size=0.0, cache_inserts_refused=0.0)
        for seed in range(2)
    ]  # fmt: skip
    [verdict] = verdicts(frame(rows), profiles=["legacy", "pip430"])
    assert set(verdict.not_bound) == {"pip430"}  # the legacy cache evicted for size
    assert [m.detail for m in verdict.not_bound["pip430"]] == [
        "cache peak 2.5 MiB below the cache size 64 MiB (managedLedgerCacheSizeMB), "
        "no size eviction",
    ]
    assert verdict.line().endswith(
        "The cache size (managedLedgerCacheSizeMB) was never reached (peak at most 2.5 MiB of "
        "64 MiB) in pip430."
    )


def test_ack_limits_and_pause_that_never_bound_are_named() -> None:
    settings = {**SETTINGS, "dispatcherPauseOnAckStatePersistentEnabled": True}
    rows = [
        row(p, seed, plugins={"entry_cache": "disabled", "ack_state_persister": persister},
            settings=settings, headline="redelivered_after_restart",
            redelivered_after_restart=5.0 + seed, ack_ranges_dropped=0.0,
            ack_max_ranges=771.0, dispatch_paused_ms=0.0)
        for p, persister in (("limited", "range-count"), ("unlimited", "unlimited"))
        for seed in range(2)
    ]  # fmt: skip
    [verdict] = verdicts(frame(rows), profiles=["limited", "unlimited"])
    assert {k: [m.detail for m in v] for k, v in verdict.not_bound.items()} == {
        "limited": [
            "ack ranges peaked at 771 below managedLedgerMaxUnackedRangesToPersist 10,000, "
            "no range dropped",
            "dispatch never paused (dispatcherPauseOnAckStatePersistentEnabled=true)",
        ]
    }
    assert verdict.line().endswith(
        "The ack range limit (managedLedgerMaxUnackedRangesToPersist) was never reached (peak "
        "at most 771 of 10,000) in limited. Dispatch never paused in limited."
    )


def test_a_limit_no_configuration_studies_is_not_warned_about() -> None:
    # On a cache workload the ack-state limits are another concern: not warned about, even
    # where the configurations' persisters differ, unless a --set key sets them.
    other = {"entry_cache": "pip430", "ack_state_persister": "unlimited"}
    rows = [
        row(p, seed, plugins=plugins, storage_entries_read=float(10 + seed),
            cache_peak_bytes=64.0 * MIB, cache_evictions_size=1.0, ack_ranges_dropped=0.0,
            ack_max_ranges=5.0)
        for p, plugins in (("legacy", LEGACY), ("pip430", PIP430), ("other", other))
        for seed in range(2)
    ]  # fmt: skip
    [verdict] = verdicts(frame(rows), profiles=["legacy", "pip430", "other"])
    assert verdict.not_bound == {}
    swept = [
        {**r, "overrides": json.dumps({"managedLedgerMaxUnackedRangesToPersist": "10000"})}
        for r in rows
        if r["profile"] == "legacy"
    ]
    [verdict] = verdicts(frame(rows + swept), profiles=["legacy", "pip430", "other"])
    assert [
        m.limit for m in verdict.not_bound["legacy [managedLedgerMaxUnackedRangesToPersist=10000]"]
    ] == ["the ack range limit (managedLedgerMaxUnackedRangesToPersist)"]


def test_configurations_with_the_same_results_are_named_together() -> None:
    # pip430 and its copy give the same reads on every seed: one place in the ranking. The
    # copy's cache memory differs beyond noise although its reads do not: the verdict says so.
    rows = (
        reads("legacy", [100.0, 110.0, 90.0], plugins=LEGACY)
        + reads("pip430", [50.0, 55.0, 45.0])
        + reads("copy", [50.0, 55.0, 45.0])
        + reads("noisy", [100.0, 112.0, 89.0], plugins=LEGACY, cache_peak_bytes=32.0 * MIB)
    )
    [verdict] = verdicts(frame(rows), profiles=["legacy", "pip430", "copy", "noisy"])
    assert verdict.same == (("pip430", "copy"),)
    line = verdict.line()
    assert "1. pip430 = copy 50, -50% [" in line
    assert "2. legacy 100 (baseline); 3. noisy 100, +0.333% [" in line
    assert line.endswith("Beyond seed noise all the same: noisy: cache_peak_bytes -50%.")


def test_a_disabled_plugin_is_said_so_beside_its_value() -> None:
    rows = reads("legacy", [100.0, 110.0], plugins=LEGACY) + reads(
        "none", [120.0, 130.0], plugins={"entry_cache": "disabled"}
    )
    [verdict] = verdicts(frame(rows), profiles=["legacy", "none"])
    assert "2. none 125 (entry_cache disabled), +19" in verdict.line()


def test_a_single_seed_has_no_interval() -> None:
    rows = reads("a", [100.0]) + reads("b", [80.0])
    [verdict] = verdicts(frame(rows), profiles=["a", "b"])
    difference = verdict.standings[0].vs_baseline
    assert difference is not None and difference.distinguishable is None
    assert difference.percent_interval is None
    assert "1. b 80, -20% (1 seed: no interval); 2. a 100 (baseline)." in verdict.line()
    assert "beyond seed noise" not in verdict.line()
    assert "within seed noise" not in verdict.line()


def test_baseline_by_profile_name_and_unknown_baseline() -> None:
    rows = reads("a", [100.0, 101.0]) + reads("b", [80.0, 82.0]) + reads("c", [90.0, 95.0])
    [verdict] = verdicts(frame(rows), baseline="c", profiles=["a", "b", "c"])
    assert verdict.baseline == "c"
    with pytest.raises(WorkloadError, match="--baseline"):
        verdicts(frame(rows), baseline="nope")


def test_zero_reference_mean_gives_an_absolute_difference() -> None:
    rows = reads("a", [2000.0, 2400.0]) + reads("b", [0.0, 0.0])
    [verdict] = verdicts(frame(rows), profiles=["b", "a"])
    loser = verdict.standings[1]
    assert loser.vs_best is not None and loser.vs_best.percent is None
    assert loser.vs_best.text("storage_entries_read").startswith("+2,200 entries [")


# ---- the metrics the data singles out -------------------------------------------------------


def test_metrics_are_sorted_into_shown_within_noise_and_unchanged() -> None:
    rows = [
        row(p, seed, storage_entries_read=base + seed, cache_evictions_size=evictions,
            cache_eviction_work=0.0, delayed_index_bytes=0.0, latency_p99_ms=float(seed % 2),
            published=1000.0, cache_hits=hits + seed)
        for p, base, evictions, hits in (("a", 100.0, 5.0, 10.0), ("b", 50.0, 5.0, 70.0))
        for seed in range(3)
    ]  # fmt: skip
    selection = select_metrics(frame(rows), "storage_entries_read")
    assert selection.shown[0] == "storage_entries_read"
    # Explaining metrics of the cache group stay beside it unless zero everywhere; cache_hits
    # differs beyond noise.
    assert "cache_evictions_size" in selection.shown and "cache_hits" in selection.shown
    assert "cache_eviction_work" not in selection.shown
    assert selection.within_noise == ("latency_p99_ms",)
    assert {"delayed_index_bytes", "published", "cache_eviction_work"} <= set(selection.unchanged)


# ---- configurations, described -------------------------------------------------------------


def test_configurations_show_plugins_and_only_the_settings_that_differ() -> None:
    other = {**SETTINGS, "managedLedgerCacheSizeMB": None, "sim.include": ["x.conf"]}
    rows = [
        row("legacy", 0, plugins=LEGACY),
        row("pip430", 0, settings=other, plugins={**PIP430, "eviction_predicates": "a,b"}),
    ]
    first, second = describe_configurations(frame(rows), ["legacy", "pip430"])
    assert first.difference_line() == "no setting differs"
    assert second.difference_line() == "managedLedgerCacheSizeMB=(empty)"  # sim.include: not
    assert second.plugin_line() == (
        "entry_cache=pip430, ack_state_persister=range-count, eviction_predicates=a,b"
    )
    assert second.source_line() == (
        "brokerlab 0.1.0 (entry_cache, ack_state_persister, eviction_predicates)"
    )


def test_rows_without_settings_fall_back_to_their_set_values() -> None:
    rows = [row("p", 0, settings={}), row("p", 0, settings={}, overrides={"k": "2"})]
    rows[0]["settings"] = rows[1]["settings"] = None  # results written before the column
    described = describe_configurations(frame(rows), ["p", "p [k=2]"])
    assert described[1].difference_line() == "--set k=2=2 (other settings not recorded)".replace(
        "k=2=2", "k=2"
    )


# ---- numbers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value", "shown"),
    [
        ("storage_entries_read", 9155.67, "9,156"),
        ("storage_entries_read", 10200.0, "10,200"),
        ("storage_entries_read", 2.3333, "2.33"),
        ("cache_hit_ratio", 0.9178436, "0.918"),
        ("cache_hit_ratio", 1.0, "1"),
        ("cache_peak_bytes", 2541705.0, "2.42 MiB"),
        ("cache_peak_bytes", 512.0, "512 B"),
        ("cache_peak_bytes", float(1024**3), "1 GiB"),
        ("cache_peak_bytes", 1536.0, "1.5 KiB"),
        ("latency_p99_ms", 1234.5678, "1,235"),
        ("latency_p99_ms", 0.012345, "0.0123"),
    ],
)
def test_numbers_have_one_format_per_kind(metric: str, value: float, shown: str) -> None:
    assert format_metric(metric, value) == shown


def test_percentages_are_signed() -> None:
    assert [format_percent(v) for v in (12.345, -0.5, 0.0, -100.0)] == [
        "+12.3%",
        "-0.5%",
        "0%",
        "-100%",
    ]


# ---- the report and the CLI -----------------------------------------------------------------


def write_results(out: Path, rows: Sequence[dict[str, object]]) -> None:
    store = ResultStore(out)
    store.write(pa.Table.from_pylist(list(rows), schema=RESULT_SCHEMA))


def test_report_opens_with_verdicts_and_writes_verdicts_csv(tmp_path: Path) -> None:
    rows = reads("legacy", [1000.0, 1100.0, 900.0], plugins=LEGACY) + reads(
        "pip430", [500.0, 560.0, 440.0]
    )
    write_results(tmp_path, rows)
    write_profile_order(tmp_path, ["legacy", "pip430"])
    report = build_report(tmp_path)
    page = report.path.read_text(encoding="utf-8")
    line = report.verdicts[0].line()
    first = re.search(r"<li class='verdict'>(.*?)</li>", page)
    assert first is not None and first.start() < page.index("<h2 id='w'>")  # at the top
    assert " ".join(html.unescape(re.sub(r"<[^>]+>", "", first.group(1))).split()) == line
    assert "0 failed" in page and "<span class='failed'>0 failed" not in page
    assert "{&quot;entry_cache&quot;" not in page and "entry_cache=pip430" in page
    with (tmp_path / "verdicts.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [(r["configuration"], r["rank"], r["distinguishable_baseline"]) for r in table] == [
        ("pip430", "1", "yes"),
        ("legacy", "2", "no"),
    ]
    assert float(table[0]["diff_baseline_pct"]) == pytest.approx(-50.0)


# Metrics every configuration reports and that differ: each gets a panel with its labels.
PANELS = ("storage_entries_read", "cache_hit_ratio", "cache_peak_bytes", "delayed_index_bytes",
          "redelivered_after_restart", "dispatch_paused_ms", "latency_p99_ms")  # fmt: skip


def test_two_set_keys_with_long_values_keep_the_bars_visible(tmp_path: Path) -> None:
    rows = [
        row("pulsar-4.0-legacy", seed, overrides={
                "managedLedgerCacheEvictionTimeThresholdMillis": str(ttl),
                "managedLedgerMaxUnackedRangesToPersistInMetadataStore": str(ranges)},
            **{m: float(ttl + ranges + seed) for m in PANELS})
        for ttl in (100, 1000, 10000)
        for ranges in (1000, 100000)
        for seed in range(2)
    ]  # fmt: skip
    write_results(tmp_path, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib: "axes sizes collapsed to zero"
        build_report(tmp_path)
    from matplotlib.image import imread

    image = imread(tmp_path / "plots" / "w.png")
    # Bars are drawn in #4477aa: a collapsed panel would leave (nearly) none of that colour.
    blue = (abs(image[..., 0] - 0x44 / 255) < 0.02) & (abs(image[..., 2] - 0xAA / 255) < 0.02)
    assert blue.sum() > 2000


def test_report_command_prints_a_verdict_per_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        *reads("a", [100.0, 101.0]),
        *reads("b", [50.0, 52.0]),
        *[row("a", 0, workload="other", storage_entries_read=1.0, status="failed")],
    ]
    rows += [{**r, "workload": "w2", "cell_id": f"{r['cell_id']}-2"} for r in rows[:4]]
    write_results(tmp_path, rows)
    assert main(["report", str(tmp_path), "--baseline", "b"]) == 0
    printed = capsys.readouterr().out.splitlines()
    verdict_lines = [line.strip() for line in printed if line.startswith("  ")]
    assert [line.split(":")[0] for line in verdict_lines] == ["w", "w2"]
    expected = r"; against b\): 1\. b 51 \(baseline\); 2\. a 100, \+9\d"
    assert all(re.search(expected, line) for line in verdict_lines)
    assert main(["report", str(tmp_path), "--baseline", "c"]) == 2


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_verdicts_wrap_on_a_terminal_and_stay_one_line_when_piped(tmp_path: Path) -> None:
    rows = [*reads("a", [100.0, 101.0]), *reads("b", [50.0, 52.0])]
    write_results(tmp_path, rows)
    command = [sys.executable, "-m", "brokerlab", "report", str(tmp_path)]
    env = {**os.environ, "COLUMNS": "60"}
    piped = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    [line] = [x for x in piped.stdout.splitlines() if x.startswith("  ")]
    assert len(line) > 60
    leader, follower = os.openpty()  # the output is far below the terminal's buffer
    done = subprocess.run(command, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the follower is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert done.returncode == 0
    wrapped = shown.replace("\r\n", "\n").split("verdicts:\n")[1].splitlines()
    assert len(wrapped) > 1 and all(len(x) <= 59 for x in wrapped)
    assert all(x.startswith("      ") for x in wrapped[1:])
    assert " ".join(x.strip() for x in wrapped) == line.strip()


def test_a_workload_may_declare_its_headline() -> None:
    text = 'name = "x"\nduration_s = 1\nheadline = "delayed_index_bytes"\n[[topics]]\nname = "t"\n'
    assert parse_workload(text, "x.toml").headline == "delayed_index_bytes"
    with pytest.raises(WorkloadError, match="not a metric of simulator 'pulsar'"):
        parse_workload(text.replace("delayed_index_bytes", "trace_hit_ratio"), "x.toml")
    rows = [
        row(p, seed, storage_entries_read=1.0, delayed_index_bytes=value + seed)
        for p, value in (("a", 100.0), ("b", 10.0))
        for seed in range(2)
    ]
    for one in rows:
        one["headline"] = "delayed_index_bytes"
    [verdict] = verdicts(frame(rows))
    assert verdict.metric == "delayed_index_bytes" and verdict.best.label == "b"


# ---- sweeps ---------------------------------------------------------------------------------

SIZE, TTL = "managedLedgerCacheSizeMB", "managedLedgerCacheEvictionTimeThresholdMillis"
# Hit ratio by profile, TTL and cache size: pip430 levels off at 256 MB with a long TTL (0.905
# is within a point of 0.912), at 1024 MB with a short one; legacy keeps gaining.
HITS = {
    ("pip430", "100"): {"64": 0.50, "256": 0.80, "1024": 0.85},
    ("pip430", "10000"): {"64": 0.60, "256": 0.905, "1024": 0.912},
    ("legacy", "100"): {"64": 0.40, "256": 0.50, "1024": 0.60},
    ("legacy", "10000"): {"64": 0.45, "256": 0.55, "1024": 0.70},
}


def two_key_sweep() -> list[dict[str, object]]:
    return [
        row(profile, seed, overrides={SIZE: size, TTL: ttl},
            plugins=PIP430 if profile == "pip430" else LEGACY,
            cache_hit_ratio=hit + 0.001 * seed, storage_entries_read=1000 * (1 - hit) + seed,
            cache_peak_bytes=64.0 * MIB, cache_evictions_size=10.0)
        for (profile, ttl), by_size in HITS.items()
        for size, hit in by_size.items()
        for seed in range(3)
    ]  # fmt: skip


def test_a_two_key_sweep_ranks_every_combination_and_finds_each_knee() -> None:
    [verdict] = verdicts(frame(two_key_sweep()), profiles=["legacy", "pip430"])
    assert len(verdict.standings) == 12  # 2 profiles x 3 sizes x 2 TTLs: one configuration each
    assert verdict.best.label == f"pip430 [{SIZE}=1024, {TTL}=10000]"
    assert verdict.baseline == f"legacy [{SIZE}=64, {TTL}=100]"  # the first in sweep order
    [note] = verdict.sweep_notes  # the size key's knees; the TTL is no size
    assert note.startswith(f"{SIZE}: the smallest value within 1 point of the best cache_hit_ratio")
    # One knee per profile and value of the other key, each in its own series.
    assert f"pip430 [{TTL}=10000] 256 (0.906; best 0.913 at 1024)" in note
    assert f"pip430 [{TTL}=100] 1024 (the best, 0.851)" in note
    assert f"legacy [{TTL}=100] 1024" in note and f"legacy [{TTL}=10000] 1024" in note
    assert note in verdict.line()


def test_a_key_that_applies_to_one_profile_only_is_said_so() -> None:
    key = "sim.pip448.timerWheel"
    reason = f"{key} is a setting of plugin pip448_delayed_delivery (topic-level), which legacy "
    reason += "does not select"
    rows = [
        row("pip448", seed, overrides={key: wheel}, delayed_index_bytes=1000.0 + 10 * seed + n,
            storage_entries_read=5.0)
        for n, wheel in enumerate(("true", "false"))
        for seed in range(2)
    ] + [
        row("legacy", seed, delayed_index_bytes=9000.0 + seed, storage_entries_read=5.0)
        for seed in range(2)
    ]  # fmt: skip
    for one in rows:
        one["headline"] = "delayed_index_bytes"
    [verdict] = verdicts(
        frame(rows), profiles=["legacy", "pip448"], not_applied={"legacy": {key: reason}}
    )
    # legacy ran once: one configuration, not one per value with identical results.
    assert [s.label for s in verdict.standings] == [
        f"pip448 [{key}=true]",
        f"pip448 [{key}=false]",
        "legacy",
    ]
    assert verdict.sweep_notes == (f"{reason}: the key did not apply, legacy ran once.",)
    assert verdict.line().endswith(verdict.sweep_notes[0])
    # Without the matrix's record (an older folder) nothing is claimed.
    [older] = verdicts(frame(rows), profiles=["legacy", "pip448"])
    assert older.sweep_notes == ()


def test_a_two_key_size_sweep_draws_small_multiples_and_the_miss_ratio_curve(
    tmp_path: Path,
) -> None:
    write_results(tmp_path, two_key_sweep())
    write_profile_order(tmp_path, ["legacy", "pip430"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib: "axes sizes collapsed to zero"
        report = build_report(tmp_path)
    page = report.path.read_text(encoding="utf-8")
    for title in (f"against {SIZE}", f"miss-ratio curve against {SIZE}", f"against {TTL}"):
        assert f"<h3>w: {title}</h3>" in page
    from matplotlib.image import imread

    # Two panels side by side (one per TTL), each as tall as a single one: not collapsed.
    curve = imread(tmp_path / "plots" / f"w--miss-ratio_curve_against_{SIZE}.png")
    single = imread(tmp_path / "plots" / f"w--against_{TTL}.png")  # three panels: one per size
    assert curve.shape[1] > 700 and curve.shape[0] > 300
    assert single.shape[1] > curve.shape[1]
