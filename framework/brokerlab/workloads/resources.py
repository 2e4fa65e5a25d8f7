"""What one run of a workload will cost, estimated from the validated document alone.

Each simulator estimates its own workloads (``SimulatorRecord.estimate``); this module holds the
Pulsar model's estimate, the :class:`Estimate` they all return and the check against the limit.

A run keeps every entry it writes (each ledger's fields in a flat int list), a managed ledger with
its cursors per topic, and a dispatcher and ack state per subscription; a backlog is drawn as
numpy arrays for the whole ``[[topics]]`` table before it is copied into the ledgers. So the peak
memory grows with topics x subscriptions x consumers, and with the entries: backlog plus rate x
publishing time, over ``batch_size``. The constants below were measured (peak RSS of real runs,
``docs/scripts/memory_estimate.py``) and rounded up: the estimate is meant to err high.

A run above the limit is refused before it starts (exit 2), naming the keys that drive it: a
backlog of 10^7 entries on 1,000 topics once ended, after minutes, in numpy's "Unable to allocate
74.5 GiB" and an internal error.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from brokerlab.errors import WorkloadError
from brokerlab.workloads.model import WorkloadSpec

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "Estimate",
    "check_memory",
    "default_memory_limit",
    "estimate",
    "format_bytes",
    "no_bigger_than",
    "parse_bytes",
]

# Measured on the built-in workloads and on synthetic ones (docs/scripts/memory_estimate.py).
BASE_BYTES = 64 * 2**20  # the interpreter, numpy, pydantic, the plugins
TOPIC_BYTES = 6 * 2**10  # a managed ledger, its cache, its producers' state
SUBSCRIPTION_BYTES = 8 * 2**10  # a cursor, its dispatcher, its ack-state persister
CONSUMER_BYTES = 2 * 2**10  # a consumer's receiver queue and permits
ENTRY_BYTES = 360  # an entry's five fields, its share of the backlog arrays, its cache slot
HOLE_BYTES = 120  # an unacknowledged message in a subscription's ack state
DELAYED_BYTES = 480  # a delayed message in a subscription's delivery tracker

DEFAULT_MEMORY_FRACTION = 0.8
"""The default limit: this share of the memory the machine (or its cgroup) has."""


@dataclass(frozen=True)
class Estimate:
    """A run's peak memory and number of events, and the keys behind the memory, biggest first."""

    peak_bytes: float
    events: float
    drivers: tuple[tuple[str, float], ...]
    """``(what drives it, in keys and values, bytes it costs)``, biggest first."""
    smaller: str = (
        "a smaller workload (fewer topics or subscriptions, a smaller backlog, a lower rate or a "
        "shorter duration_s, or --scale)"
    )
    """How to make the workload smaller, for the error that refuses it."""

    def line(self) -> str:
        """One line for people: ``estimate: peak memory ~1.2 GiB, ~3.4e+08 events``."""
        return f"estimate: peak memory ~{format_bytes(self.peak_bytes)}, ~{self.events:.2g} events"


def estimate(spec: WorkloadSpec) -> Estimate:
    """The estimated peak memory and events of one run of ``spec`` (already scaled)."""
    drivers: list[tuple[str, float]] = []
    events = 0.0
    for index, topic in enumerate(spec.topics):
        at = f"topics[{index}]"
        topics = topic.topic_count
        count = f"{at}.count ({topic.count:,})" + (
            f" x {at}.partitions ({topic.partitions:,})" if topic.partitions else ""
        )
        per = f"{count} x " if topics > 1 else ""
        until = spec.duration_s if topic.publish_until_s is None else topic.publish_until_s
        backlog = math.ceil(topic.backlog_per_topic / topic.batch_size)
        published = topic.rate_per_topic * until
        subscriptions = sum(s.count for s in topic.subscriptions)
        consumers = sum(s.count * sum(c.count for c in s.consumers) for s in topic.subscriptions)
        holes = sum(
            s.count * max((c.ack_hole_probability for c in s.consumers), default=0.0)
            for s in topic.subscriptions
        )
        delayed = sum(d.fraction for d in topic.delays) * subscriptions
        messages = topic.backlog_per_topic + published
        drivers.append((count, topics * TOPIC_BYTES))
        if subscriptions:
            drivers.append(
                (
                    f"{per}{at}.subscriptions.count ({subscriptions:,})",
                    topics * (subscriptions * SUBSCRIPTION_BYTES + consumers * CONSUMER_BYTES),
                )
            )
        if backlog:
            drivers.append(
                (f"{per}{at}.backlog ({topic.backlog:,})", topics * backlog * ENTRY_BYTES)
            )
        if published:
            rate = f"{at}.rate ({topic.rate:g}/s)"
            time = f"duration_s ({until:g} s)"
            if topic.publish_until_s is not None:
                time = f"{at}.publish_until_s ({until:g} s)"
            drivers.append(
                (f"{per}{rate} x {time}", topics * published / topic.batch_size * ENTRY_BYTES)
            )
        if holes or delayed:
            drivers.append(
                (
                    f"{per}{at} ack holes and delays",
                    topics * messages * (holes * HOLE_BYTES + delayed * DELAYED_BYTES),
                )
            )
        # An entry is sent, then read and acknowledged once per subscription.
        events += topics * (1 + subscriptions) * (1 + backlog + published / topic.batch_size)
    drivers.sort(key=lambda item: -item[1])
    peak = BASE_BYTES + sum(cost for _, cost in drivers)
    return Estimate(peak, events, tuple(drivers))


def no_bigger_than(found: Estimate, name: str, limit: int, limit_text: str) -> Estimate:
    """``found``, the estimate of workload ``name``; raises :class:`WorkloadError` when its memory
    is above ``limit`` (``limit_text`` says where the limit comes from), naming the keys that
    drive it."""
    if found.peak_bytes <= limit:
        return found
    # The keys behind most of it: the biggest, and any other worth a tenth of the total.
    top = [
        f"{what}: ~{format_bytes(cost)}"
        for rank, (what, cost) in enumerate(found.drivers[:3])
        if rank == 0 or cost >= found.peak_bytes / 10
    ]
    raise WorkloadError(
        f"workload {name!r} needs about {format_bytes(found.peak_bytes)} of memory for one "
        f"run, above the limit of {limit_text}; most of it for {'; '.join(top)}",
        allowed=f"{found.smaller}, or a higher --max-memory",
    )


def check_memory(spec: WorkloadSpec, limit: int, limit_text: str) -> Estimate:
    """The estimate of the Pulsar workload ``spec``, refused above ``limit`` as
    :func:`no_bigger_than` refuses it."""
    return no_bigger_than(estimate(spec), spec.name, limit, limit_text)


def default_memory_limit() -> tuple[int, str]:
    """:data:`DEFAULT_MEMORY_FRACTION` of the machine's memory (its cgroup's, if lower), and how
    to say so."""
    total = _machine_memory()
    limit = int(total * DEFAULT_MEMORY_FRACTION)
    return limit, (
        f"{format_bytes(limit)} ({DEFAULT_MEMORY_FRACTION:.0%} of this machine's "
        f"{format_bytes(total)}; --max-memory to change it)"
    )


def _machine_memory() -> int:
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int:
    """``"8G"``, ``"512MiB"``, ``"1.5GB"`` or a number of bytes; sizes are binary (G = 2^30).

    Raises :class:`ValueError` for anything else, or a size not above zero.
    """
    stripped = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = stripped[-1:] if stripped[-1:] in _UNITS else ""
    number = stripped[: len(stripped) - len(unit)].strip()
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(text) from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return int(value)


def format_bytes(count: float) -> str:
    """``1.2 GiB``, ``340 MiB``: two or three significant digits."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} bytes"
