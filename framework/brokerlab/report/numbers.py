"""How the report writes numbers: one format per kind of number, in the HTML, the PNGs and
``verdicts.csv`` alike.

* counts (entries, messages, writes...): thousands separators, whole numbers from 100 up (a mean
  over seeds of 9,155.67 entries is shown as 9,156), 3 significant digits below;
* ratios: 3 significant digits (0.918, not 0.9178436);
* bytes: B, KiB, MiB, GiB, TiB with 3 significant digits;
* differences: a signed percentage with 3 significant digits (``+12.3%``).
"""

from __future__ import annotations

import math

from brokerlab.metrics import METRICS

__all__ = [
    "format_bytes",
    "format_count",
    "format_metric",
    "format_percent",
    "format_ratio",
    "unit_header",
]

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")


def _significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits and thousands separators, no exponent."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    if "." in text:  # 3 significant digits may need no trailing zeros: 0.500 -> 0.5
        text = text.rstrip("0").rstrip(".")
    return text


def format_count(value: float) -> str:
    """A count (or a mean of counts): ``9,156``; below 100, 3 significant digits (``2.33``)."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100 or float(value).is_integer():
        return f"{round(value):,}"
    return _significant(value)


def format_ratio(value: float) -> str:
    """A ratio with 3 significant digits: ``0.918``, ``1``, ``12.3``."""
    return _significant(value)


def format_bytes(value: float) -> str:
    """Bytes in binary units with 3 significant digits: ``512 B``, ``2.34 MiB``, ``1 GiB``."""
    if not math.isfinite(value):
        return str(value)
    scaled, unit = float(value), _BINARY[0]
    for unit in _BINARY:
        if abs(scaled) < 1024 or unit == _BINARY[-1]:
            break
        scaled /= 1024
    shown = f"{round(scaled):,}" if unit == "B" else _significant(scaled)
    return f"{shown} {unit}"


def format_percent(value: float) -> str:
    """A signed difference in percent with 3 significant digits: ``+12.3%``, ``-0.5%``, ``0%``."""
    if value == 0:
        return "0%"
    return ("+" if value > 0 else "-") + _significant(abs(value)) + "%"


def format_metric(name: str, value: float) -> str:
    """``value`` of the registered metric ``name``, in the format of its unit and kind (its unit
    appended only for bytes, whose unit the format chooses)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    metric = METRICS.get(name)
    if metric is not None and metric.unit == "bytes" and metric.kind != "ratio":
        return format_bytes(value)
    if metric is not None and metric.kind in ("counter", "gauge") and metric.unit != "s":
        return format_count(value)
    return format_ratio(value)  # ratios, latencies, seconds, bytes per ack: 3 digits


def unit_header(name: str) -> str:
    """The unit shown in a table header or axis label (bytes: the values carry their unit)."""
    metric = METRICS.get(name)
    if metric is None:
        return ""
    return "" if metric.unit == "bytes" and metric.kind != "ratio" else metric.unit
