"""Print the table of docs/workloads.md "Replaying cache traces": the broker entry caches on the
built-in Zipf trace beside libCacheSim's LRU, FIFO and S3-FIFO of the same byte capacity.

    python docs/scripts/trace_comparison.py [--size-mb 819 --size-mb 256]

Each broker cache runs under its ready profile twice: as configured (a 1 s TTL) and with the TTL
lifted (``managedLedgerCacheEvictionTimeThresholdMillis`` = one day), which leaves only the size
limit. libCacheSim (GPL-3.0-or-later) is a dev-only oracle: only this script and the tests import
it; it reads the same CSV file with its own reader.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import libcachesim as lcs  # type: ignore[import-untyped]

from brokerlab import load_profile, make_host, simulate
from brokerlab.host import PluginHost
from brokerlab.simulation import load_workload

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = "trace-zipf"
NO_TTL = {"managedLedgerCacheEvictionTimeThresholdMillis": str(24 * 3600 * 1000)}
# Both PIP-430 predicates off and the watermark at the 0.98 trigger: a byte-capacity FIFO.
AS_FIFO = {
    "cacheEvictionByExpectedReadCount": "false",
    "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed": "false",
    "managedLedgerCacheEvictionWatermark": "0.98",
}
BROKER_ROWS: tuple[tuple[str, str, Mapping[str, str]], ...] = (
    ("legacy (pulsar-4.0-legacy.conf)", "pulsar-4.0-legacy.conf", {}),
    ("pip430 (pulsar-4.2.conf)", "pulsar-4.2.conf", {}),
    ("pip430 (pulsar-5.0.conf)", "pulsar-5.0.conf", {}),
    ("pip430, predicates off, watermark 0.98", "pulsar-4.2.conf", AS_FIFO),
)
GENERIC = (("LRU", lcs.LRU), ("FIFO", lcs.FIFO), ("S3-FIFO", lcs.S3FIFO))


def broker_ratios(
    host: PluginHost, profile: str, overrides: Mapping[str, str], size_mb: int
) -> tuple[float, float]:
    settings = {**overrides, "managedLedgerCacheSizeMB": str(size_mb)}
    result = simulate(load_profile(ROOT / "profiles" / profile, settings, host=host), WORKLOAD)
    return result.metrics["trace_hit_ratio"], result.metrics["trace_byte_hit_ratio"]


def generic_ratios(policy: type, trace: str, capacity: int) -> tuple[float, float]:
    params = lcs.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",")
    params.time_field, params.obj_id_field, params.obj_size_field = 1, 2, 3
    reader = lcs.TraceReader(trace, lcs.TraceType.CSV_TRACE, params)
    miss, byte_miss = policy(cache_size=capacity).process_trace(reader)
    return 1 - miss, 1 - byte_miss


def table(host: PluginHost, trace: str, size_mb: int) -> list[str]:
    capacity = size_mb << 20
    lines = [
        f"Capacity {size_mb} MiB ({capacity:,} bytes): managedLedgerCacheSizeMB={size_mb}",
        "",
        "| cache | hit ratio, 1 s TTL | hit ratio, no TTL | byte hit ratio, no TTL |",
        "|---|---|---|---|",
    ]
    for label, profile, overrides in BROKER_ROWS:
        with_ttl, _ = broker_ratios(host, profile, overrides, size_mb)
        hits, byte_hits = broker_ratios(host, profile, {**overrides, **NO_TTL}, size_mb)
        lines.append(f"| {label} | {with_ttl:.3f} | {hits:.3f} | {byte_hits:.3f} |")
    for label, policy in GENERIC:
        hits, byte_hits = generic_ratios(policy, trace, capacity)
        lines.append(f"| libCacheSim {label} | - | {hits:.3f} | {byte_hits:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, action="append", help="cache sizes (MiB)")
    sizes = parser.parse_args().size_mb or [819, 256]
    host = make_host()
    workload = load_workload(host, WORKLOAD)
    trace = getattr(workload, "trace")  # noqa: B009 - a TraceWorkload; no plugin import here
    result = simulate(load_profile(None, host=host), workload)
    requests, objects = result.metrics["trace_requests"], result.metrics["trace_objects"]
    print(
        f"{WORKLOAD}: {requests:,.0f} requests, {objects:,.0f} objects; no cache can hit more "
        f"than {1 - objects / requests:.3f} of the requests (each object's first is a miss)\n"
    )
    for size_mb in sizes:
        print("\n".join(table(host, trace, size_mb)) + "\n")


if __name__ == "__main__":
    main()
