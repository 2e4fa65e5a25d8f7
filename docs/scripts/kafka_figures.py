"""Regenerate the figures and the table of docs/kafka.md.

    python docs/scripts/kafka_figures.py

Runs each Kafka workload under kafka-size-only.conf and kafka-ttl.conf with both size policies
(seed 0; a run is a pure function of its inputs, so the figures are reproducible), writes
docs/results/kafka-*.png and prints the markdown table that docs/kafka.md shows.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from brokerlab import load_profile, make_host, simulate

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "results"
PROFILES = ("kafka-size-only", "kafka-ttl")
POLICIES = ("w-tinylfu", "lru")
WORKLOADS = ("kafka-leadership-change", "kafka-read-from-replica", "kafka-backfill-tail")
MIB = 1024 * 1024
COLUMNS = (
    ("index_cache_hit_ratio", "hit ratio", 1, "{:.3f}"),
    ("remote_index_fetches", "remote fetches", 1, "{:,.0f}"),
    ("index_cache_stale_bytes_peak", "stale peak MiB", MIB, "{:,.0f}"),
    ("index_cache_stale_bytes_end", "stale at end MiB", MIB, "{:,.0f}"),
    ("index_cache_stale_residence_mean_s", "stale for (mean s)", 1, "{:,.0f}"),
    ("index_cache_evictions_size", "size evictions", 1, "{:,.0f}"),
    ("index_cache_evictions_expired", "TTL evictions", 1, "{:,.0f}"),
)


def main() -> None:
    host = make_host()
    OUT.mkdir(parents=True, exist_ok=True)
    print("| workload | profile | policy | " + " | ".join(c[1] for c in COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    for workload in WORKLOADS:
        figure, axis = plt.subplots(figsize=(7, 3.2))
        for profile_name in PROFILES:
            for policy in POLICIES:
                profile = load_profile(
                    ROOT / "profiles" / f"{profile_name}.conf",
                    [f"sim.kafka.indexCachePolicy={policy}"],
                    host=host,
                )
                result = simulate(profile, workload, 0, host=host)
                cells = [
                    fmt.format(result.metrics[name] / scale) for name, _, scale, fmt in COLUMNS
                ]
                print(f"| {workload} | {profile_name} | {policy} | " + " | ".join(cells) + " |")
                if policy == "w-tinylfu" or workload == "kafka-backfill-tail":
                    series = "stale_bytes" if workload != "kafka-backfill-tail" else "live_bytes"
                    axis.plot(
                        [s["t_s"] / 3600 for s in result.timeline],
                        [s[series] / MIB for s in result.timeline],
                        label=f"{profile_name}, {policy}",
                        linestyle="-" if profile_name == "kafka-ttl" else "--",
                    )
        what = "cached bytes" if workload == "kafka-backfill-tail" else "stale bytes held"
        axis.set_title(f"{workload}: {what}", fontsize=10)
        axis.set_xlabel("simulated hours")
        axis.set_ylabel("MiB")
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(OUT / f"{workload}.png", dpi=110)
        plt.close(figure)


if __name__ == "__main__":
    main()
