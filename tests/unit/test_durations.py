"""Durations in workloads: the ``DurationSpec`` format and the draws the broker model makes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from brokerlab.broker.durations import Durations
from brokerlab.workloads import DurationSpec, StorageSpec


def draws(spec: DurationSpec, n: int, seed: int = 0) -> list[int]:
    sampler = Durations(spec, np.random.default_rng(seed))
    return [sampler.next_ns() for _ in range(n)]


def test_a_bare_number_is_a_fixed_duration() -> None:
    storage = StorageSpec.model_validate({"read_latency_ms": 2.5})
    assert storage.read_latency_ms == DurationSpec(kind="fixed", value=2.5)
    assert draws(storage.read_latency_ms, 3) == [2_500_000] * 3


def test_a_fixed_duration_draws_nothing_from_its_stream() -> None:
    rng = np.random.default_rng(7)
    Durations(DurationSpec(value=3), rng).total_ns(1000)
    assert rng.random() == np.random.default_rng(7).random()


def test_a_key_of_another_kind_is_an_error() -> None:
    with pytest.raises(ValidationError, match="mean does not apply to kind 'fixed'"):
        DurationSpec.model_validate({"kind": "fixed", "mean": 3})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"kind": "empirical"}, "needs a non-empty list of values"),
        ({"kind": "empirical", "values": [1, 2], "weights": [1]}, "one weight per value"),
        ({"kind": "empirical", "values": [1, 2], "weights": [0, 0]}, "add up to zero"),
        ({"kind": "exponential", "mean": 0}, "greater than 0"),
    ],
)
def test_malformed_durations_are_refused(document: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DurationSpec.model_validate(document)


def test_exponential_draws_have_the_mean_they_were_given() -> None:
    sample = draws(DurationSpec(kind="exponential", mean=4.0), 40_000)
    assert statistics_mean(sample) == pytest.approx(4_000_000, rel=0.03)
    assert min(sample) >= 0


def test_lognormal_draws_are_capped_and_have_the_median_they_were_given() -> None:
    spec = DurationSpec(kind="lognormal", median=2.0, sigma=1.5, max=20.0)
    sample = sorted(draws(spec, 20_001))
    assert sample[-1] == 20_000_000
    assert sample[len(sample) // 2] == pytest.approx(2_000_000, rel=0.05)


def test_empirical_draws_follow_the_weights() -> None:
    spec = DurationSpec(kind="empirical", values=(1, 5, 9), weights=(3, 1, 0))
    sample = draws(spec, 8_000)
    assert set(sample) == {1_000_000, 5_000_000}
    assert sample.count(1_000_000) / len(sample) == pytest.approx(0.75, abs=0.02)


@given(
    kind=st.sampled_from(["fixed", "exponential", "lognormal", "empirical"]),
    seed=st.integers(0, 2**32 - 1),
    split=st.lists(st.integers(1, 300), min_size=1, max_size=6),
)
def test_draws_do_not_depend_on_how_they_are_taken(kind: str, seed: int, split: list[int]) -> None:
    """The n-th draw is the same whether taken one by one or summed in groups of any size."""
    spec = {
        "fixed": DurationSpec(value=1.5),
        "exponential": DurationSpec(kind="exponential", mean=2),
        "lognormal": DurationSpec(kind="lognormal", median=1, sigma=1),
        "empirical": DurationSpec(kind="empirical", values=(0.5, 3)),
    }[kind]
    one_by_one = draws(spec, sum(split), seed)
    grouped = Durations(spec, np.random.default_rng(seed))
    start = 0
    for n in split:
        assert grouped.total_ns(n) == sum(one_by_one[start : start + n])
        start += n


def test_zero_and_mean_of_each_kind() -> None:
    assert DurationSpec().is_zero
    assert DurationSpec(kind="empirical", values=(0, 4), weights=(1, 0)).is_zero
    assert not DurationSpec(kind="exponential", mean=1).is_zero
    assert DurationSpec(kind="empirical", values=(1, 4), weights=(3, 1)).mean_ms == 1.75
    lognormal = DurationSpec(kind="lognormal", median=2, sigma=0.5)
    assert lognormal.mean_ms == pytest.approx(2 * math.exp(0.125))
    assert not StorageSpec().reads_take_time
    assert StorageSpec(read_ms_per_mib=1).reads_take_time


def statistics_mean(values: list[int]) -> float:
    return sum(values) / len(values)
