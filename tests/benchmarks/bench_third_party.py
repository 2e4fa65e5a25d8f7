"""What a third-party plugin costs on the built-ins' own call path (#26 item 2).

Run: ``python tests/benchmarks/bench_third_party.py [--turns N]`` (about 10 s). Two tables,
each row timed in CPU time in interleaved turns (best turn kept), so the ratios between rows of
one run hold on a shared machine:

* **per decision**: one time pass of the PIP-430 removal queue over 100,000 expired entries, with a
  one-predicate chain: ``recently-accessed`` built in, its interpreted copy (the same source,
  with the optional protocols) and a copy on the plain protocol (``brokerlab_copies``,
  ``tests/support``). Per entry the queue asks the predicate once ("abstains": unread entries) or
  twice ("requeues": read entries, requeued once, then removed). A row with no predicate gives
  the queue's own cost, which is subtracted: the ns per decision are the predicate's share.
* **per request**: the ``trace-zipf`` trace replayed through the pip430 cache (storage-read
  admission: every miss asks the cursor container's rank query), built in; with the copied
  sorted-list container; behind a third-party wrapper with the ``SingleEntryCache`` one-entry
  calls; behind one with the ``EntryCache`` calls only.

The built-ins run compiled when the install compiled them (the last line says how many modules
did); ``BROKERLAB_PURE_PYTHON=1`` measures their Python sources. The copies always run as Python.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "framework"), str(ROOT / "plugins"), str(ROOT / "tests" / "support")]

from brokerlab import PluginHost, load_profile  # noqa: E402
from brokerlab._native import summary  # noqa: E402
from brokerlab.broker.events import EventLoop  # noqa: E402
from brokerlab.host import PluginChoices  # noqa: E402
from brokerlab.simulation import load_workload, plugin_context  # noqa: E402
from brokerlab_plugins.cache_trace.model import TraceWorkload  # noqa: E402
from brokerlab_plugins.cache_trace.replay import TraceReplay  # noqa: E402
from brokerlab_plugins.cache_trace.simulator import load_trace  # noqa: E402
from brokerlab_plugins.cache_trace.traces import Trace  # noqa: E402

HOST = PluginHost(modules=["brokerlab_copies"])
PROFILE = load_profile(ROOT / "profiles" / "pulsar-4.2.conf", None, host=HOST)
CHOICES = HOST.resolve(PROFILE)
ENTRIES = 100_000
MS = 1_000_000


def with_predicates(*names: str) -> PluginChoices:
    chain = tuple(HOST.select("eviction_predicate", name) for name in names)
    return dataclasses.replace(CHOICES, eviction_predicates=chain)


def pass_time(choices: PluginChoices, read: bool) -> Callable[[], float]:
    """A timer of one time pass over ``ENTRIES`` expired entries, filled fresh each time."""

    def timed() -> float:
        loop = EventLoop()
        cache = choices.entry_cache.record.factory(plugin_context(PROFILE, choices, loop, 0))
        cursors = choices.cursor_container.record.factory()
        cache.open_ledger("t", cursors)
        for entry_id in range(ENTRIES):
            cache.put("t", (0, entry_id), 100, None)  # type: ignore[attr-defined]
        if read:
            cache.read("t", 0, 0, ENTRIES - 1, "r")
        loop.run_until(10**12)
        gc.disable()  # a collection inside one row's pass would count against it
        start = time.process_time()
        cache.queue.evict_before(loop.now_ns() + 1)  # type: ignore[attr-defined]
        took = time.process_time() - start
        gc.enable()
        assert cache.size_bytes() == 0
        return took

    return timed


def best(timers: dict[str, Callable[[], float]], turns: int) -> dict[str, float]:
    """The best of ``turns`` interleaved runs of each timer."""
    found = dict.fromkeys(timers, float("inf"))
    for _ in range(turns):
        for name, timer in timers.items():
            found[name] = min(found[name], timer())
    return found


def decisions(turns: int) -> None:
    rows = {
        "none (the queue alone)": (),
        "built-in recently-accessed": ("recently-accessed",),
        "copy, optional protocols": ("copy-recently-accessed",),
        "copy, plain protocol": ("plain-recently-accessed",),
    }
    print("per decision: one time pass of the removal queue, ns per decision")
    print(f"{'chain':28} {'abstains':>10} {'ratio':>6} {'requeues':>10} {'ratio':>6}")
    results = {}
    for read, per_entry in ((False, 1), (True, 2)):
        timers = {row: pass_time(with_predicates(*names), read) for row, names in rows.items()}
        found = best(timers, turns)
        base = found["none (the queue alone)"]
        results[read] = {
            row: (found[row] - base) / (ENTRIES * per_entry) * 1e9 for row in rows if rows[row]
        }
    built_in = {read: results[read]["built-in recently-accessed"] for read in results}
    for row in results[False]:
        cells = [
            f"{results[read][row]:10.0f} {results[read][row] / built_in[read]:6.2f}"
            for read in (False, True)
        ]
        print(f"{row:28} {' '.join(cells)}")


def replay_time(trace: Trace, workload: TraceWorkload, choices: PluginChoices) -> float:
    loop = EventLoop()
    cache = choices.entry_cache.record.factory(plugin_context(PROFILE, choices, loop, 0))
    replay = TraceReplay(
        cache,
        choices.cursor_container.record.factory(),
        loop,
        eviction_interval_ns=PROFILE.settings.cache_eviction_interval_ms * MS,
        entries_per_ledger=PROFILE.settings.managed_ledger_max_entries_per_ledger,
        admission=workload.admission,
    )
    gc.collect()
    start = time.process_time()
    replay.run(trace)
    return time.process_time() - start


def requests(turns: int) -> None:
    workload = load_workload(HOST, "trace-zipf")
    assert isinstance(workload, TraceWorkload)
    workload = workload.model_copy(update={"admission": "storage-read"})
    trace = load_trace(workload)

    def cache(name: str) -> PluginChoices:
        return dataclasses.replace(CHOICES, entry_cache=HOST.select("entry_cache", name))

    rows = {
        "built-in pip430, sorted-list": CHOICES,
        "copied sorted-list container": dataclasses.replace(
            CHOICES, cursor_container=HOST.select("cursor_container", "copy-sorted-list")
        ),
        "wrapped cache, SingleEntryCache": cache("wrapped-pip430-single"),
        "wrapped cache, EntryCache only": cache("wrapped-pip430"),
    }
    timers = {row: (lambda c=c: replay_time(trace, workload, c)) for row, c in rows.items()}
    found = best(timers, turns)
    base = found["built-in pip430, sorted-list"]
    print(f"\nper request: trace-zipf replay ({len(trace):,} requests, storage-read admission)")
    print(f"{'cache, container':34} {'us/request':>10} {'ratio':>6}")
    for row, took in found.items():
        print(f"{row:34} {took / len(trace) * 1e6:10.2f} {took / base:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=7)
    args = parser.parse_args()
    decisions(args.turns)
    requests(args.turns)
    pure = os.environ.get("BROKERLAB_PURE_PYTHON", "0") not in ("", "0")
    print(f"\n{summary()}{' (BROKERLAB_PURE_PYTHON is set)' if pure else ''}")


if __name__ == "__main__":
    main()
