"""report.html as a person sees it: rendered by headless Chromium, every image loads, nothing is
wider than the window, and the verdicts are on the page.

The page is a real report (:func:`brokerlab.report.build_report` over result rows written as a
matrix writes them: a two-key size sweep, a key that applied to one profile only, a failed cell
with its traceback). A copy gets one script that, once the page has loaded, writes what the
browser measured into the DOM; ``--dump-dom`` prints it. Debian's ``chromium`` package provides
the browser (``.ci/run`` installs it when missing).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

from brokerlab.report import build_report  # noqa: E402
from brokerlab.spark.results import ResultStore, write_profile_order  # noqa: E402
from brokerlab.spark.schema import RESULT_SCHEMA  # noqa: E402

CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on PATH: install Debian's chromium package (apt-get install chromium), "
    "as .ci/run does",
)

SIZE, TTL = "managedLedgerCacheSizeMB", "managedLedgerCacheEvictionTimeThresholdMillis"
WHEEL = "sim.pip448.timerWheel"
MIB = 1024 * 1024

# Runs after the load event (images decoded) and writes its measurements into the page.
MEASURE = """
<script>
window.addEventListener("load", () => {
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({
    images: [...document.images].map(i => ({alt: i.alt, width: i.naturalWidth,
                                             complete: i.complete})),
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    tables: [...document.querySelectorAll(".wide")].map(d => d.scrollWidth - d.clientWidth),
    verdicts: [...document.querySelectorAll("li.verdict")].map(li => li.textContent),
  });
  document.body.appendChild(out);
});
</script>
"""


# A real setting whose value is one long word: the configurations table must wrap it.
TRACKER = {
    "pip448": {
        "delayedDeliveryTrackerFactoryClassName": "org.apache.pulsar.broker.delayed."
        "InMemoryTopicDelayedDeliveryTrackerFactory"
    }
}
TRACKER.update({name: {} for name in ("legacy", "pip430", "in-memory")})


def result(
    profile: str, seed: int, overrides: dict[str, str], **metrics: object
) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
    sets = json.dumps(overrides)
    values.update(
        cell_id=f"{profile}-{sets}-{seed}",
        profile=profile,
        overrides=sets,
        workload="cache",
        seed=seed,
        scale=0.2,
        status="ok",
        profile_fingerprint=f"{profile}{sets}",
        plugins=json.dumps({"entry_cache": profile, "ack_state_persister": "range-count"}),
        plugin_versions=json.dumps({"entry_cache": "brokerlab 0.1.0"}),
        settings=json.dumps(
            {SIZE: int(overrides.get(SIZE, 64)), "sim.maxDirectMemoryMB": 4096, **TRACKER[profile]}
        ),
        brokerlab_version="0.1.0",
        finished_at="2026-11-28T00:00:00+00:00",
    )
    values.update(metrics)
    return values


def rows() -> list[dict[str, object]]:
    found = []
    for profile, gain in (("pip430", 0.3), ("legacy", 0.1)):
        for size in ("64", "256", "1024"):
            for ttl in ("100", "10000"):
                for seed in range(3):
                    hit = min(0.95, 0.4 + gain * ("64", "256", "1024").index(size) + 0.001 * seed)
                    found.append(
                        result(profile, seed, {SIZE: size, TTL: ttl}, cache_hit_ratio=hit,
                               storage_entries_read=10000 * (1 - hit), cache_peak_bytes=64.0 * MIB,
                               cache_evictions_size=10.0 + seed)
                    )  # fmt: skip
    for profile, overrides in (("pip448", {WHEEL: "true"}), ("pip448", {WHEEL: "false"})):
        for seed in range(3):
            row = result(profile, seed, overrides, delayed_index_bytes=1000.0 + seed)
            found.append({**row, "workload": "delayed", "headline": "delayed_index_bytes"})
    for seed in range(3):
        row = result("in-memory", seed, {}, delayed_index_bytes=90000.0 + seed)
        found.append({**row, "workload": "delayed", "headline": "delayed_index_bytes"})
    failed = result("legacy", 9, {SIZE: "64"}, status="failed", error="Traceback: " + "x" * 600)
    found.append({**failed, "workload": "cache"})
    return found


def measure(page: Path, tmp_path: Path, width: int) -> dict[str, object]:
    """Open a copy of ``page`` in headless Chromium at ``width`` pixels; what it measured."""
    copy = tmp_path / f"seen-{width}.html"
    copy.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={width},900",
            "--virtual-time-budget=10000",
            "--dump-dom",
            copy.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = re.search(r'<pre id="measured">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, f"no measurements (Chromium exit {done.returncode}): {done.stderr[-2000:]}"
    measured: dict[str, object] = json.loads(html.unescape(found.group(1)))
    return measured


@pytest.mark.parametrize("width", [1280, 800])
def test_the_report_renders_whole_in_a_browser(tmp_path: Path, width: int) -> None:
    out = tmp_path / "out"
    store = ResultStore(out)
    store.write(pa.Table.from_pylist(rows(), schema=RESULT_SCHEMA))
    reason = f"{WHEEL} is a setting of plugin pip448_delayed_delivery (topic-level), which "
    write_profile_order(
        out, ["legacy", "pip430", "in-memory", "pip448"], {"in-memory": {WHEEL: reason + "no"}}
    )
    report = build_report(out)
    measured = measure(report.path, tmp_path, width)

    images = measured["images"]
    assert isinstance(images, list)
    # Per workload its bars; the cache workload also its two sweeps and the miss-ratio curve.
    assert len(images) == 6, [i["alt"] for i in images]
    assert all(i["complete"] and i["width"] > 0 for i in images), images
    assert measured["scrollWidth"] <= measured["innerWidth"], measured  # no sideways scrolling
    tables = measured["tables"]
    assert isinstance(tables, list) and tables
    if width >= 1280:  # wide enough for every table: none scrolls sideways inside its box
        assert all(extra == 0 for extra in tables), tables
    shown = measured["verdicts"]
    assert isinstance(shown, list)
    assert [" ".join(text.split()) for text in shown] == [v.line() for v in report.verdicts]
    assert any("the key did not apply, in-memory ran once" in text for text in shown)
    assert any(f"{SIZE}: the smallest value within 1 point" in text for text in shown)
