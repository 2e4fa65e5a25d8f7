"""Verdicts: per workload, which configuration wins on its headline metric, by how much, and
whether the difference is larger than the seed-to-seed noise.

Pure functions over the result rows of a matrix (one row per cell, as
:meth:`brokerlab.spark.results.ResultStore.load` gives them); no plotting, no files.

* The **headline** metric of a workload is the one its document declares (``headline = ...``),
  else its simulator's default in :data:`DEFAULT_HEADLINES`. Its registry entry says which way is
  better (:attr:`brokerlab.metrics.Metric.higher_is_better`).
* Differences are **paired**: two configurations ran the same workload with the same seeds, so
  the per-seed differences cancel what the seed decides (arrivals, keys, sizes) and leave what the
  configuration changes. The 95% interval is Student's t over those per-seed differences; a
  percentage divides by the reference configuration's mean over the same seeds (a fixed
  denominator: the interval is that of the absolute difference, rescaled). A difference is
  *distinguishable from seed noise* when its interval excludes zero; with one seed there is no
  interval, and the verdict says so.
* A **limit that did not bind** (the cache never full, no ack range dropped, no dispatch pause)
  is named in the verdict: "no difference" is then the run's size talking, not the strategies.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from brokerlab.errors import WorkloadError
from brokerlab.metrics import METRICS, metrics_of
from brokerlab.profiles.model import cache_size_bytes
from brokerlab.report.configs import config_labels, ordered_labels
from brokerlab.report.numbers import (
    format_bytes,
    format_count,
    format_metric,
    format_percent,
    format_ratio,
    unit_header,
)
from brokerlab.report.sweeps import (
    SIZE_KEYS,
    hit_ratio_metric,
    knee_note,
    knees,
    not_applied_notes,
    sweep_values,
    swept_keys,
)
from brokerlab.spark.results import t_quantile_975
from brokerlab.spark.schema import STATUS_OK

__all__ = [
    "DEFAULT_HEADLINES",
    "EXPLAINING_METRICS",
    "Difference",
    "MetricSelection",
    "Miss",
    "Standing",
    "WorkloadVerdict",
    "headline_of",
    "paired_difference",
    "select_metrics",
    "verdicts",
]

DEFAULT_HEADLINES: dict[str, str] = {
    "pulsar": "storage_entries_read",  # what an entry cache saves: reads from BookKeeper
    "kafka-tiered-storage": "remote_index_fetches",  # what the index cache saves
    "cache-trace": "trace_hit_ratio",  # comparable with other cache simulators' hit ratio
}
"""The headline metric of a workload that declares none, by simulator. A simulator not listed
here ranks on its first registered metric."""

EXPLAINING_METRICS: dict[str, tuple[str, ...]] = {
    "cache": (
        "cache_hit_ratio",
        "cache_peak_bytes",
        "cache_evictions_size",
        "cache_evictions_time",
        "cache_evictions_invalidation",
        "cache_eviction_work",
    ),
    "ack_state": (
        "delivered",  # what a dispatch pause costs
        "ack_ranges_dropped",
        "ack_bytes_dropped",
        "dispatch_paused_ms",
        "ack_persisted_bytes",
        "redelivered_after_restart",
    ),
    "delayed": ("delayed_index_bytes", "delayed_subscription_state_bytes"),
    "kafka_index_cache": (
        "index_cache_hit_ratio",
        "index_cache_evictions_size",
        "index_cache_evictions_expired",
        "index_cache_stale_bytes_peak",
        "index_cache_resident_bytes_peak",
    ),
    "cache_trace": ("trace_byte_hit_ratio", "trace_miss_bytes", "trace_peak_cache_bytes"),
}
"""Per metric group, the metrics that explain a headline result; shown beside the headline when
the group is the headline's or differs between configurations, unless zero everywhere."""

SeedValues = Mapping[int, float]


@dataclass(frozen=True)
class Difference:
    """A configuration's metric minus a reference configuration's, paired by seed."""

    reference: str
    seeds: int
    mean: float
    """Mean per-seed difference, in the metric's unit."""
    low: float | None
    high: float | None
    """95% t interval of ``mean``; ``None`` with one seed."""
    reference_mean: float
    """The reference's mean over the paired seeds: the denominator of the percentages."""

    def _percent(self, value: float) -> float | None:
        if self.reference_mean == 0:
            return 0.0 if value == 0 else None
        return 100 * value / abs(self.reference_mean)

    @property
    def percent(self) -> float | None:
        """``mean`` in percent of the reference's mean; ``None`` when that mean is zero."""
        return self._percent(self.mean)

    @property
    def percent_interval(self) -> tuple[float, float] | None:
        """The interval in percent; ``None`` with one seed or a zero reference mean."""
        if self.low is None or self.high is None:
            return None
        low, high = self._percent(self.low), self._percent(self.high)
        return None if low is None or high is None else (low, high)

    @property
    def distinguishable(self) -> bool | None:
        """Whether the interval excludes zero; ``None`` with one seed (no interval)."""
        if self.low is None or self.high is None:
            return None
        return self.low > 0 or self.high < 0

    def short(self, metric: str) -> str:
        """``-39.1%``, ``12.3x`` past +1,000%, or ``+31,675 ms`` when the reference mean is zero:
        no interval."""
        percent = self.percent
        if percent is not None and percent > 1000:
            return f"{format_ratio(1 + percent / 100)}x"
        if percent is not None:
            return format_percent(percent)
        return _signed(metric, self.mean, unit=True)

    def text(self, metric: str) -> str:
        """``+12.3% [+10.1%, +14.5%]``; absolute values when the reference mean is zero."""
        percent = self.percent
        if percent is not None:
            shown = format_percent(percent)
            interval = self.percent_interval
            if interval is not None:
                return f"{shown} [{format_percent(interval[0])}, {format_percent(interval[1])}]"
        else:  # a zero reference: the difference in the metric's own unit
            shown = _signed(metric, self.mean, unit=True)
            if self.low is not None and self.high is not None:
                return f"{shown} [{_signed(metric, self.low)}, {_signed(metric, self.high)}]"
        return f"{shown} (1 seed: no interval)" if self.seeds < 2 else shown


def _signed(metric: str, value: float, *, unit: bool = False) -> str:
    sign = "+" if value > 0 else "-" if value < 0 else ""
    shown = f"{sign}{format_metric(metric, abs(value))}"
    named = unit_header(metric) if unit else ""
    return f"{shown} {named}" if named else shown


def paired_difference(
    values: SeedValues, reference: SeedValues, reference_label: str
) -> Difference | None:
    """``values`` minus ``reference`` over the seeds both have (``None`` if they share none):
    the mean per-seed difference and its 95% t interval."""
    seeds = sorted(set(values) & set(reference))
    if not seeds:
        return None
    differences = [values[s] - reference[s] for s in seeds]
    mean = statistics.fmean(differences)
    low = high = None
    if len(seeds) > 1:
        half = (
            t_quantile_975(len(seeds) - 1) * statistics.stdev(differences) / math.sqrt(len(seeds))
        )
        low, high = mean - half, mean + half
    reference_mean = statistics.fmean(reference[s] for s in seeds)
    return Difference(reference_label, len(seeds), mean, low, high, reference_mean)


@dataclass(frozen=True)
class Standing:
    """One configuration's place in a workload's ranking."""

    label: str
    rank: int
    """1 for the best; equal means share a rank."""
    mean: float
    seeds: int
    vs_best: Difference | None
    vs_baseline: Difference | None


@dataclass(frozen=True)
class Miss:
    """How one limit under study did not bind in one configuration's cells."""

    limit: str
    """The limit and the key that sets it: ``the cache size (managedLedgerCacheSizeMB)``."""
    detail: str
    """The whole statement for this configuration, as ``verdicts.csv`` gives it."""
    peak: float | None = None
    """The largest value the configuration reached, when the limit has one to compare with."""
    bound: float | None = None
    """The limit's value in this configuration."""
    unit: str = "count"
    """``bytes`` or ``count``: how ``peak`` and ``bound`` are written."""
    verb: str = "was never reached"


def _miss_value(value: float, unit: str) -> str:
    return format_bytes(value) if unit == "bytes" else format_count(value)


def _misses_text(misses: Sequence[tuple[str, Miss]], order: Sequence[str]) -> str:
    """One sentence for one limit that configurations never reached (``order``: every
    configuration, in rank order)."""
    first = misses[0][1]
    sentence = f"{first.limit[0].upper()}{first.limit[1:]} {first.verb}"
    peaks = [m.peak for _, m in misses if m.peak is not None]
    bounds = sorted({m.bound for _, m in misses if m.bound is not None})
    if peaks and bounds:
        of = _miss_value(bounds[0], first.unit)
        if len(bounds) > 1:
            of = f"{of} to {_miss_value(bounds[-1], first.unit)}"
        sentence += f" (peak at most {_miss_value(max(peaks), first.unit)} of {of})"
    missed = {label for label, _ in misses}
    others = [label for label in order if label not in missed]
    if not others:
        where = "in any configuration" if len(order) > 1 else ""
    elif len(others) <= 2 < len(missed):
        where = "in every configuration but " + " and ".join(others)
    else:
        where = "in " + ", ".join(label for label in order if label in missed)
    return f"{sentence} {where}".rstrip() + "."


@dataclass(frozen=True)
class WorkloadVerdict:
    """The ranking of one workload's configurations on its headline metric, and what limits
    never bound in its cells."""

    workload: str
    metric: str
    higher_is_better: bool
    baseline: str
    standings: tuple[Standing, ...]
    not_bound: Mapping[str, tuple[Miss, ...]] = field(default_factory=dict)
    """Configuration label -> the limits under study it never reached."""
    notes: tuple[str, ...] = ()
    sweep_notes: tuple[str, ...] = ()
    """What the ``--set`` sweeps showed: keys that did not apply to a profile, the knee of a size
    sweep; part of :meth:`line`."""
    same: tuple[tuple[str, ...], ...] = ()
    """Configurations with the same headline value on every seed, in rank order: the verdict
    names them together. Empty: every configuration stands alone."""
    also: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Configuration label -> its explaining metrics that differ from the baseline beyond seed
    noise, for a configuration whose headline does not."""
    disabled: Mapping[str, str] = field(default_factory=dict)
    """Configuration label -> the extension point of the headline it runs without (its plugin
    there is ``disabled``): a zero there is no strategy's merit."""

    @property
    def best(self) -> Standing:
        return self.standings[0]

    @property
    def seeds(self) -> int:
        return max(s.seeds for s in self.standings)

    def tied_with_best(self) -> list[str]:
        """Configurations whose difference from the best is within seed noise."""
        return [
            s.label
            for s in self.standings[1:]
            if s.vs_best is not None and s.vs_best.distinguishable is False
        ]

    def _groups(self) -> list[tuple[Standing, tuple[str, ...]]]:
        """Each standing that leads a group of same results, with the group's labels."""
        same = {group[0]: group for group in self.same}
        members = {label for group in self.same for label in group[1:]}
        return [
            (s, same.get(s.label, (s.label,))) for s in self.standings if s.label not in members
        ]

    def line(self) -> str:
        """The verdict in one line, as ``brokerlab matrix`` prints it and the report lists it:
        the configurations in rank order (same results named together), each with its difference
        from the baseline, then what differs beyond noise where the headline does not, then the
        limits that never bound."""
        return " ".join(self.sentences())

    def sentences(self) -> list[str]:
        """:meth:`line` in its sentences: the ranking first, then each aside."""
        direction = "higher" if self.higher_is_better else "lower"
        unit = METRICS[self.metric].unit if self.metric in METRICS else ""
        seeds = f"{self.seeds} seed{'s' if self.seeds != 1 else ''}"
        head = f"{self.workload}: {self.metric} ({unit}, {direction} is better, {seeds}"
        groups = self._groups()
        if len(groups) == 1:
            only = "one configuration ran it" if len(self.standings) == 1 else "the same results"
            head += f"): {' = '.join(groups[0][1])}: {only}, "
            head += format_metric(self.metric, self.best.mean)
            sentences = [head]
        else:
            head += f"; against {self.baseline}): "
            distinguishable = [
                s.vs_baseline.distinguishable
                for s, _ in groups
                if s.vs_baseline is not None and s.label != self.baseline
            ]
            if distinguishable and not any(distinguishable) and None not in distinguishable:
                head += "no configuration differs beyond seed noise; "
            sentences = [head + "; ".join(self._ranked(groups))]
        if self.also:
            together: dict[tuple[str, ...], list[str]] = {}
            for label, texts in self.also.items():
                together.setdefault(texts, []).append(label)
            sentences.append(
                "Beyond seed noise all the same: "
                + "; ".join(f"{' = '.join(ls)}: {', '.join(ts)}" for ts, ls in together.items())
            )
        sentences += self.notes
        ended = [f"{s.rstrip('.')}." for s in sentences]
        return [*ended, *self.not_bound_sentences(), *self.sweep_notes]

    def _ranked(self, groups: Sequence[tuple[Standing, tuple[str, ...]]]) -> list[str]:
        texts = []
        for place, (s, labels) in enumerate(groups, start=1):
            text = f"{place}. {' = '.join(labels)} {format_metric(self.metric, s.mean)}"
            if s.label in self.disabled:
                text += f" ({self.disabled[s.label]} disabled)"
            if self.baseline in labels:
                texts.append(f"{text} (baseline)")
                continue
            if s.vs_baseline is not None:
                text += f", {s.vs_baseline.text(self.metric)}"
                noise = s.vs_baseline.distinguishable
                text += {True: " beyond seed noise", False: " within seed noise", None: ""}[noise]
            if place > 1 and s.vs_best is not None and s.vs_best.distinguishable is False:
                text += ", tied with the best"
            texts.append(text)
        return texts

    def not_bound_sentences(self) -> list[str]:
        """One sentence per limit that some configuration never reached."""
        by_limit: dict[str, list[tuple[str, Miss]]] = {}
        for label, misses in self.not_bound.items():
            for miss in misses:
                by_limit.setdefault(miss.limit, []).append((label, miss))
        order = [s.label for s in self.standings]
        return [_misses_text(found, order) for found in by_limit.values()]


# ---- the headline and the values per configuration and seed ------------------------------------


def headline_of(rows: pd.DataFrame) -> str:
    """The headline metric of one workload's rows: declared, else the simulator's default."""
    declared = {str(h) for h in rows.get("headline", pd.Series(dtype=object)).dropna() if h}
    if len(declared) == 1:
        return declared.pop()
    reported = [m for m in METRICS if m in rows and rows[m].notna().any()]
    simulators = [METRICS[m].simulator for m in reported]
    simulator = simulators[0] if simulators else "pulsar"
    default = DEFAULT_HEADLINES.get(simulator)
    if default is not None and default in reported:
        return default
    return reported[0] if reported else metrics_of(simulator)[0]


def _by_seed(rows: pd.DataFrame, labels: pd.Series, metric: str) -> dict[str, dict[int, float]]:
    values: dict[str, dict[int, float]] = {}
    if metric not in rows:
        return values
    for label, seed, value in zip(labels, rows["seed"], rows[metric], strict=True):
        if value is not None and not pd.isna(value):
            values.setdefault(str(label), {})[int(seed)] = float(value)
    return values


# ---- which metrics to show ------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSelection:
    """The metrics of one workload, sorted by what the data says about them."""

    shown: tuple[str, ...]
    """The headline, its explaining metrics, then every metric that differs beyond seed noise."""
    within_noise: tuple[str, ...]
    """Metrics whose values vary, but no configuration's differently than seed noise does."""
    unchanged: tuple[str, ...]
    """Metrics with one value in every cell (zero included)."""


def _differs(by_label: Mapping[str, SeedValues]) -> bool:
    """Whether some pair of configurations differs beyond seed noise (with one seed: differs)."""
    labels = list(by_label)
    for index, label in enumerate(labels):
        for other in labels[index + 1 :]:
            difference = paired_difference(by_label[label], by_label[other], other)
            if difference is None:
                continue
            if difference.distinguishable or (
                difference.distinguishable is None and difference.mean != 0
            ):
                return True
    return False


def select_metrics(rows: pd.DataFrame, headline: str) -> MetricSelection:
    """Sort the metrics one workload's ``rows`` report into shown, within noise and unchanged."""
    labels = pd.Series(config_labels(rows), index=rows.index)
    differing, within, unchanged, zero = [], [], [], set()
    for metric in METRICS:
        by_label = _by_seed(rows, labels, metric)
        values = {v for seeds in by_label.values() for v in seeds.values()}
        if not values:
            continue  # not reported by this workload's simulator
        if len(by_label) < labels.nunique() and values != {0.0}:
            differing.append(metric)  # some configurations do not report it: show which
        elif len(values) == 1:
            unchanged.append(metric)
            zero.update({metric} if values == {0.0} else set())
        elif _differs(by_label):
            differing.append(metric)
        else:
            within.append(metric)
    groups = {METRICS[headline].group} if headline in METRICS else set()
    groups.update(METRICS[m].group for m in differing)
    explaining = [
        m
        for group, names in EXPLAINING_METRICS.items()
        if group in groups
        for m in names
        if m in differing or m in within or (m in unchanged and m not in zero)
    ]
    shown = tuple(dict.fromkeys([headline, *explaining, *differing]))
    return MetricSelection(
        shown,
        tuple(m for m in within if m not in shown),
        tuple(m for m in unchanged if m not in shown),
    )


# ---- limits that did not bind ---------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    """What a limit check reads of one configuration: its plugins, settings and the largest value
    of each metric over its seeds (a limit bound if it bound with any seed)."""

    plugins: Mapping[str, str]
    settings: Mapping[str, object]
    peak: Mapping[str, float]

    def metric(self, name: str) -> float | None:
        return self.peak.get(name)

    def setting(self, key: str) -> object:
        return self.settings.get(key)


@dataclass(frozen=True)
class _Limit:
    """A limit a configuration may study: the extension point and settings keys that set it, the
    metric group it shows in, and a check that says how it did not bind (``None``: it bound)."""

    point: str
    keys: tuple[str, ...]
    group: str
    check: Callable[[_Cell], Miss | None]


_CACHE_SIZE = "the cache size (managedLedgerCacheSizeMB)"


def _cache_size(cell: _Cell) -> Miss | None:
    if cell.plugins.get("entry_cache") in (None, "", "disabled"):
        return None
    peak, evicted = cell.metric("cache_peak_bytes"), cell.metric("cache_evictions_size")
    if (
        peak is None
        or evicted is None
        or evicted > 0
        or (cell.metric("cache_inserts_refused") or 0)
    ):
        return None
    size_mb, direct_mb = (
        cell.setting("managedLedgerCacheSizeMB"),
        cell.setting("sim.maxDirectMemoryMB"),
    )
    if isinstance(direct_mb, int) and (size_mb is None or isinstance(size_mb, int)):
        limit = cache_size_bytes(size_mb, direct_mb)
        if peak >= limit:
            return None
        detail = (
            f"cache peak {format_bytes(peak)} below the cache size {format_bytes(limit)} "
            "(managedLedgerCacheSizeMB), no size eviction"
        )
        return Miss(_CACHE_SIZE, detail, peak, limit, "bytes")
    return Miss(_CACHE_SIZE, "no size eviction (cache size not recorded in these results)")


def _ack_ranges(cell: _Cell) -> Miss | None:
    if cell.plugins.get("ack_state_persister") != "range-count":
        return None
    dropped, ranges = cell.metric("ack_ranges_dropped"), cell.metric("ack_max_ranges")
    limit = cell.setting("managedLedgerMaxUnackedRangesToPersist")
    if dropped is None or dropped > 0 or ranges is None:
        return None
    bound = limit if isinstance(limit, int) else None
    of_limit = (
        f" below managedLedgerMaxUnackedRangesToPersist {format_count(bound)}"
        if bound is not None
        else ""
    )
    detail = f"ack ranges peaked at {format_count(ranges)}{of_limit}, no range dropped"
    return Miss(
        "the ack range limit (managedLedgerMaxUnackedRangesToPersist)", detail, ranges, bound
    )


def _ack_bytes(cell: _Cell) -> Miss | None:
    if cell.plugins.get("ack_state_persister") != "pip299":
        return None
    dropped, limit = (
        cell.metric("ack_bytes_dropped"),
        cell.setting("managedLedgerMaxAckStateInBytesToPersist"),
    )
    if dropped is None or dropped > 0:
        return None
    bound = limit if isinstance(limit, int) else None
    of_limit = (
        f" (managedLedgerMaxAckStateInBytesToPersist {format_bytes(bound)})"
        if bound is not None
        else ""
    )
    return Miss(
        "the ack state byte limit (managedLedgerMaxAckStateInBytesToPersist)",
        f"no ack bytes dropped{of_limit}",
    )


def _ack_memory(cell: _Cell) -> Miss | None:
    if cell.plugins.get("ack_state_persister") != "pip81":
        return None
    swapped = cell.metric("ack_swap_outs")
    if swapped is None or swapped > 0:
        return None
    limit = cell.setting("maxIndividualAckCacheBytesPerCursor")
    of_limit = (
        f" (maxIndividualAckCacheBytesPerCursor {format_bytes(limit)})"
        if isinstance(limit, int)
        else ""
    )
    return Miss(
        "the ack state memory per cursor (maxIndividualAckCacheBytesPerCursor)",
        f"no ack state swapped out{of_limit}",
    )


# Which switch turns on the dispatch pause of each persister that has one.
_PAUSE_SWITCH = {
    "range-count": "dispatcherPauseOnAckStatePersistentEnabled",
    "pip299": "dispatcherPauseOnAckPersistentStateEnabled",
}


def _pause(cell: _Cell) -> Miss | None:
    switch = _PAUSE_SWITCH.get(cell.plugins.get("ack_state_persister", ""))
    paused = cell.metric("dispatch_paused_ms")
    if switch is None or cell.setting(switch) is not True or paused is None or paused > 0:
        return None
    return Miss("dispatch", f"dispatch never paused ({switch}=true)", verb="never paused")


_INDEX_CACHE_SIZE = "the index cache size (remote.log.index.file.cache.total.size.bytes)"


def _kafka_index_size(cell: _Cell) -> Miss | None:
    evicted = cell.metric("index_cache_evictions_size")
    if evicted is None or evicted > 0:
        return None
    limit = cell.setting("remote.log.index.file.cache.total.size.bytes")
    peak = cell.metric("index_cache_resident_bytes_peak")
    if isinstance(limit, int) and peak is not None:
        detail = (
            f"index cache peak {format_bytes(peak)} below its size {format_bytes(limit)} "
            "(remote.log.index.file.cache.total.size.bytes), no size eviction"
        )
        return Miss(_INDEX_CACHE_SIZE, detail, peak, limit, "bytes")
    return Miss(_INDEX_CACHE_SIZE, "no index cache size eviction")


LIMITS: tuple[_Limit, ...] = (
    _Limit(
        "entry_cache",
        ("managedLedgerCacheSizeMB", "sim.maxDirectMemoryMB"),
        "cache",
        _cache_size,
    ),
    _Limit(
        "ack_state_persister",
        ("managedLedgerMaxUnackedRangesToPersist",),
        "ack_state",
        _ack_ranges,
    ),
    _Limit(
        "ack_state_persister",
        ("managedLedgerMaxAckStateInBytesToPersist",),
        "ack_state",
        _ack_bytes,
    ),
    _Limit(
        "ack_state_persister",
        ("maxIndividualAckCacheBytesPerCursor", "enableLruCacheMaxUnackedRanges"),
        "ack_state",
        _ack_memory,
    ),
    _Limit("ack_state_persister", tuple(_PAUSE_SWITCH.values()), "ack_state", _pause),
    _Limit(
        "",
        ("remote.log.index.file.cache.total.size.bytes", "sim.kafka.indexCachePolicy"),
        "kafka_index_cache",
        _kafka_index_size,
    ),
)
"""The limits a verdict checks. A limit is *under study* in a workload when the headline metric
is in its group or among its group's explaining metrics, when a ``--set`` key sets it, or when
only one configuration ran. A limit of another concern (an ack-state limit on a cache workload)
is not, even where the configurations differ in it: the workload does not ask about it."""


def _json(text: object) -> dict[str, object]:
    if not isinstance(text, str) or not text:
        return {}
    loaded = json.loads(text)
    return loaded if isinstance(loaded, dict) else {}


def _cells(rows: pd.DataFrame, labels: pd.Series) -> dict[str, _Cell]:
    cells = {}
    metrics = [m for m in METRICS if m in rows]
    for label, group in rows.groupby(labels, sort=False):
        latest = group.sort_values("finished_at").iloc[-1]
        peak = {m: float(group[m].max()) for m in metrics if group[m].notna().any()}
        cells[str(label)] = _Cell(
            {k: str(v) for k, v in _json(latest["plugins"]).items()},
            _json(latest.get("settings")),
            peak,
        )
    return cells


def _related(group: str, headline: str) -> bool:
    """Whether a limit of ``group`` bears on ``headline``."""
    in_group = headline in METRICS and METRICS[headline].group == group
    return in_group or headline in EXPLAINING_METRICS.get(group, ())


def _studied(
    limit: _Limit, cells: Mapping[str, _Cell], headline: str, swept: Sequence[str]
) -> bool:
    return (
        len(cells) == 1
        or any(key in swept for key in limit.keys)
        or _related(limit.group, headline)
    )


def not_bound(
    rows: pd.DataFrame, cells: Mapping[str, _Cell], headline: str
) -> dict[str, tuple[Miss, ...]]:
    """Configuration label -> how each limit under study did not bind in its cells (``cells``:
    :func:`_cells` of ``rows``)."""
    swept = {key for text in rows["overrides"] for key in sweep_values(text)}
    studied = [limit for limit in LIMITS if _studied(limit, cells, headline, sorted(swept))]
    found = {}
    for label, cell in cells.items():
        misses = tuple(m for limit in studied if (m := limit.check(cell)) is not None)
        if misses:
            found[label] = misses
    return found


# ---- the verdicts ---------------------------------------------------------------------------


def _baseline_label(name: str | None, order: Sequence[str], rows: pd.DataFrame) -> str:
    """The configuration ``name`` means: a label, else the first configuration of that profile."""
    if name is None:
        return order[0]
    if name in order:
        return name
    profiles = dict(zip(config_labels(rows), rows["profile"], strict=True))
    for label in order:
        if profiles.get(label) == name:
            return label
    raise WorkloadError(
        "names no configuration of these results",
        key="--baseline",
        value=name,
        allowed=", ".join(order),
    )


def _rank(means: Mapping[str, float], higher_is_better: bool) -> dict[str, int]:
    sign = -1 if higher_is_better else 1
    return {
        label: 1 + sum(sign * other < sign * mean for other in means.values())
        for label, mean in means.items()
    }


def verdicts(
    frame: pd.DataFrame,
    *,
    baseline: str | None = None,
    profiles: Sequence[str] = (),
    not_applied: Mapping[str, Mapping[str, str]] | None = None,
) -> list[WorkloadVerdict]:
    """One verdict per workload of ``frame`` (result rows; failed cells are left out), by name.

    ``baseline`` is a configuration label or a profile name (its first configuration); by default
    the first configuration in ``profiles`` order (the matrix's ``--profile`` order). A workload
    the baseline did not run is compared with its own first configuration, and its verdict says
    so. ``not_applied`` (profile label -> swept key -> why, as the matrix recorded it) names the
    swept keys a profile ran once for. Raises :class:`WorkloadError` when ``baseline`` names no
    configuration.
    """
    ok = frame[frame["status"] == STATUS_OK]
    if ok.empty:
        return []
    keys = swept_keys(ok["overrides"])
    everywhere = ordered_labels(ok, profiles)
    chosen = _baseline_label(baseline, everywhere, ok)
    found = []
    for workload, rows in ok.groupby("workload", sort=True):
        labels = pd.Series(config_labels(rows), index=rows.index)
        order = [label for label in everywhere if label in set(labels)]
        metric = headline_of(rows)
        higher = METRICS[metric].higher_is_better if metric in METRICS else False
        values = _by_seed(rows, labels, metric)
        order = [label for label in order if label in values]
        if not order:
            continue
        notes = []
        reference = chosen
        if chosen not in values:
            reference = order[0]
            notes.append(f"{chosen} did not run this workload: compared with {reference}")
        means = {label: statistics.fmean(values[label].values()) for label in order}
        ranks = _rank(means, higher)
        ranked = sorted(order, key=lambda label: (ranks[label], order.index(label)))
        best = ranked[0]
        standings = tuple(
            Standing(
                label,
                ranks[label],
                means[label],
                len(values[label]),
                paired_difference(values[label], values[best], best),
                paired_difference(values[label], values[reference], reference),
            )
            for label in ranked
        )
        cells = _cells(rows, labels)
        found.append(
            WorkloadVerdict(
                str(workload),
                metric,
                higher,
                reference,
                standings,
                not_bound(rows, cells, metric),
                tuple(notes),
                tuple(_sweep_notes(rows, keys, not_applied or {})),
                _same_results(ranked, values),
                _beyond_noise_elsewhere(rows, labels, metric, standings, reference),
                _disabled(cells, metric),
            )
        )
    return found


def _same_results(
    ranked: Sequence[str], values: Mapping[str, SeedValues]
) -> tuple[tuple[str, ...], ...]:
    """The configurations whose headline is the same on every seed, grouped in rank order."""
    groups: dict[tuple[tuple[int, float], ...], list[str]] = {}
    for label in ranked:
        groups.setdefault(tuple(sorted(values[label].items())), []).append(label)
    return tuple(tuple(group) for group in groups.values() if len(group) > 1)


GROUP_POINTS: dict[str, str] = {
    "cache": "entry_cache",
    "delayed": "delayed_delivery",
    "ack_state": "ack_state_persister",
}
"""The extension point whose plugin a metric group measures."""


def _disabled(cells: Mapping[str, _Cell], headline: str) -> dict[str, str]:
    """Configuration label -> the headline's extension point, where its plugin is disabled."""
    point = GROUP_POINTS.get(METRICS[headline].group) if headline in METRICS else None
    if point is None:
        return {}
    return {label: point for label, cell in cells.items() if cell.plugins.get(point) == "disabled"}


_ALSO_SHOWN = 3  # explaining metrics named per configuration in a verdict line


def _beyond_noise_elsewhere(
    rows: pd.DataFrame,
    labels: pd.Series,
    headline: str,
    standings: Sequence[Standing],
    reference: str,
) -> dict[str, tuple[str, ...]]:
    """For each configuration whose headline is within seed noise of the reference: the first
    explaining metrics of the headline's concerns that differ from it beyond seed noise (a limit
    that bound and cost something the headline does not count)."""
    names = [
        m
        for group, explaining in EXPLAINING_METRICS.items()
        if _related(group, headline)
        for m in explaining
        if m != headline
    ]
    by_metric = {m: _by_seed(rows, labels, m) for m in dict.fromkeys(names)}
    found = {}
    for s in standings:
        if s.label == reference or s.vs_baseline is None or s.vs_baseline.distinguishable:
            continue
        texts = []
        for metric, by_label in by_metric.items():
            if s.label not in by_label or reference not in by_label:
                continue
            difference = paired_difference(by_label[s.label], by_label[reference], reference)
            if difference is not None and difference.distinguishable:
                texts.append(f"{metric} {difference.short(metric)}")
        if texts:
            found[s.label] = tuple(texts[:_ALSO_SHOWN])
    return found


def _sweep_notes(
    rows: pd.DataFrame, keys: Sequence[str], not_applied: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """The keys that did not apply to a profile of ``rows``, then each size key's knees."""
    notes = not_applied_notes(rows, keys, not_applied)
    hit_ratio = hit_ratio_metric(rows)
    for key in keys:
        if key in SIZE_KEYS and hit_ratio is not None:
            found = knees(rows, key, hit_ratio)
            if found:
                notes.append(knee_note(found, hit_ratio))
    return notes


def verdict_rows(found: Sequence[WorkloadVerdict]) -> pd.DataFrame:
    """``verdicts.csv``: one row per workload x configuration, in rank order."""
    rows = []
    for verdict in found:
        for s in verdict.standings:
            row: dict[str, object] = {
                "workload": verdict.workload,
                "configuration": s.label,
                "rank": s.rank,
                "headline": verdict.metric,
                "unit": METRICS[verdict.metric].unit if verdict.metric in METRICS else "",
                "better": "higher" if verdict.higher_is_better else "lower",
                "seeds": s.seeds,
                "mean": s.mean,
            }
            for name, difference in (("best", s.vs_best), ("baseline", s.vs_baseline)):
                row[f"vs_{name}"] = difference.reference if difference else ""
                row.update(_difference_columns(name, difference))
            row["did_not_bind"] = "; ".join(m.detail for m in verdict.not_bound.get(s.label, ()))
            rows.append(row)
    return pd.DataFrame(rows)


def _difference_columns(name: str, difference: Difference | None) -> dict[str, object]:
    if difference is None:
        return dict.fromkeys(
            (f"diff_{name}", f"diff_{name}_pct", f"ci95_low_{name}_pct", f"ci95_high_{name}_pct",
             f"distinguishable_{name}"),
            "",
        )  # fmt: skip
    interval = difference.percent_interval
    distinguishable = {True: "yes", False: "no", None: "1 seed: no interval"}
    return {
        f"diff_{name}": difference.mean,
        f"diff_{name}_pct": "" if difference.percent is None else round(difference.percent, 3),
        f"ci95_low_{name}_pct": "" if interval is None else round(interval[0], 3),
        f"ci95_high_{name}_pct": "" if interval is None else round(interval[1], 3),
        f"distinguishable_{name}": distinguishable[difference.distinguishable],
    }
