"""Shorten a Pulsar workload along its time axis (``matrix --scale``) and estimate its cost."""

from __future__ import annotations

import math
from itertools import pairwise

from pydantic import ValidationError

from brokerlab.errors import WorkloadError
from brokerlab.workloads.model import WorkloadSpec

__all__ = ["check_scale", "estimated_cost", "scale_workload", "smallest_scale"]


def check_scale(factor: float) -> None:
    """Refuse a ``--scale`` outside ``0 < scale <= 1`` (shared by every simulator's ``scale``)."""
    if not 0 < factor <= 1:
        raise WorkloadError(
            "is out of range", key="--scale", value=factor, allowed="0 < scale <= 1"
        )


def scale_workload(spec: WorkloadSpec, factor: float) -> WorkloadSpec:
    """``spec`` with its time axis multiplied by ``factor`` (a shortened run of the same scenario).

    Every time of the scenario scales: ``duration_s``, ``drain_s``, event times, consumer
    connect/disconnect times, ``publish_until_s``, delayed-delivery delays and nack redelivery
    delays; so does each topic's ``backlog``, which stands for messages published before the run.
    Rates, sizes, keys and counts of topics, subscriptions and consumers stay, so the load per
    second is that of the full workload and a run simulates ``factor`` times fewer messages.
    What does not scale: the profile's own time settings (cache TTLs, flush intervals) and the
    workload's ``[storage]``, so a shortened run is a preview of the full one, not a copy of it.
    """
    check_scale(factor)
    if factor == 1.0:
        return spec
    data = spec.model_dump(mode="python")

    def seconds(value: float | None) -> float | None:
        return None if value is None else value * factor

    def millis(value: int) -> int:
        return round(value * factor)

    data["duration_s"] = spec.duration_s * factor
    data["drain_s"] = spec.drain_s * factor
    for event in data["events"]:
        event["at_s"] *= factor
    for topic in data["topics"]:
        topic["backlog"] = round(topic["backlog"] * factor)
        topic["publish_until_s"] = seconds(topic["publish_until_s"])
        for delay in topic["delays"]:
            delay["min_ms"], delay["max_ms"] = millis(delay["min_ms"]), millis(delay["max_ms"])
        for subscription in topic["subscriptions"]:
            for consumer in subscription["consumers"]:
                consumer["connect_at_s"] *= factor
                consumer["disconnect_at_s"] = seconds(consumer["disconnect_at_s"])
                consumer["nack_redelivery_delay_ms"] = millis(consumer["nack_redelivery_delay_ms"])
    try:
        return WorkloadSpec.model_validate(data)
    except ValidationError as error:
        # Outages keep their length (a broker takes as long to restart in a shortened run), so
        # a small enough factor moves one event into the outage of the one before it.
        reason = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        reason = reason.removesuffix("; move it after the outage")
        smallest = smallest_scale(spec)
        raise WorkloadError(
            f"shortens workload {spec.name!r} too far: {reason}",
            key="--scale",
            value=factor,
            allowed=f"at least {smallest:g} for this workload" if smallest > factor else None,
        ) from None


def smallest_scale(spec: WorkloadSpec) -> float:
    """The smallest factor that keeps every restart or unload of ``spec`` after the outage of
    the one before it, rounded up to 2 significant digits (0 when it has fewer than two)."""
    outages = sorted((e.at_s, e.outage_s) for e in spec.events if e.kind in ("restart", "unload"))
    needed = max(
        (
            outage / (next_at - at)
            for (at, outage), (next_at, _) in pairwise(outages)
            if next_at > at
        ),
        default=0.0,
    )
    if needed <= 0:
        return 0.0
    digits = 1 - math.floor(math.log10(needed))
    return math.ceil(needed * 10.0**digits) / 10.0**digits


def estimated_cost(spec: WorkloadSpec) -> float:
    """A rough relative cost (deliveries + dispatch rounds) used to start long cells first."""
    cost = 0.0
    for topic in spec.topics:
        until = spec.duration_s if topic.publish_until_s is None else topic.publish_until_s
        messages = topic.count * (topic.rate * until + topic.backlog)
        readers = sum(s.count for s in topic.subscriptions) or 1
        cost += messages * (1 + readers) + topic.topic_count * (spec.duration_s + spec.drain_s) * 50
    return cost
