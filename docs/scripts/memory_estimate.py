"""Compare the resource estimate with real runs: peak RSS and events of each built-in workload.

Each run is a fresh process (``ru_maxrss`` is a high-water mark), so the numbers are those of
``brokerlab run``. The constants of each simulator's estimate (``brokerlab/workloads/
resources.py`` for Pulsar, ``resources.py`` of the ``kafka_remote_index`` and ``cache_trace``
plugins) were set from this table and from synthetic workloads (many topics, a large backlog, a
high rate; many partitions and segments; long traces); run it again after a change to what a
simulator keeps per entry, topic, segment or request::

    python docs/scripts/memory_estimate.py [--profile P] [--kafka-profile K] [WORKLOAD ...]

A workload is a built-in name or a file. Kafka tiered-storage workloads run under
``--kafka-profile`` (default ``profiles/kafka-size-only.conf``), the others under ``--profile``
(default ``profiles/pulsar-4.2.conf``). It prints one Markdown row per workload: estimated and
measured peak memory and events.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, resource, sys
from brokerlab._api import load_profile, make_host
from brokerlab.simulation import load_workload, simulate
host = make_host()
profile = load_profile(sys.argv[1], host=host)
workload = load_workload(host, sys.argv[2])
found = host.simulator(workload.simulator).estimate(workload)
result = simulate(profile, workload, 0, host=host)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
print(json.dumps({"estimate": found.peak_bytes, "events_estimate": found.events,
                  "peak": peak, "events": result.events}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=str(ROOT / "profiles" / "pulsar-4.2.conf"))
    parser.add_argument("--kafka-profile", default=str(ROOT / "profiles" / "kafka-size-only.conf"))
    parser.add_argument("workloads", nargs="*")
    args = parser.parse_args()
    from brokerlab._api import make_host
    from brokerlab.simulation import load_workload

    host = make_host()
    names = args.workloads or [reg.record.name for reg in host.records("workload")]
    print(
        "| workload | simulator | estimated peak | measured peak | ratio | estimated events "
        "| events |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        simulator = load_workload(host, name).simulator
        profile = args.kafka_profile if simulator == "kafka-tiered-storage" else args.profile
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, profile, name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        row = json.loads(out.splitlines()[-1])
        mib = 2**20
        print(
            f"| {name} | {simulator} | {row['estimate'] / mib:.0f} MiB | "
            f"{row['peak'] / mib:.0f} MiB | "
            f"{row['estimate'] / row['peak']:.2f} | {row['events_estimate']:.3g} | "
            f"{row['events']:.3g} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
