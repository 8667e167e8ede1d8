from __future__ import annotations

import math
import random

import numpy as np
import pytest
from bench_core.domain import stats


def test_buckets_cover_one_millisecond_to_over_an_hour() -> None:
    assert stats.bucket_index(0) == 0 and stats.bucket_index(0.99) == 0
    assert stats.bucket_index(1) == 1
    assert stats.bucket_index(3_600_000) < stats.BUCKETS - 1
    assert stats.bucket_index(10**9) == stats.BUCKETS - 1
    assert stats.bucket_index(float("nan")) == 0
    for ms in (1, 1.5, 17, 412, 9_999, 3_600_000):
        low, high = stats.bucket_bounds(stats.bucket_index(ms))
        assert low <= ms < high


@pytest.mark.parametrize("distribution", ["lognormal", "uniform", "bimodal"])
def test_percentiles_are_within_one_bucket_of_numpy(distribution: str) -> None:
    rng = random.Random(7)
    if distribution == "lognormal":
        values = [rng.lognormvariate(6, 1.2) for _ in range(5000)]
    elif distribution == "uniform":
        values = [rng.uniform(1, 60_000) for _ in range(5000)]
    else:
        values = [rng.gauss(80, 5) if rng.random() < 0.9 else rng.gauss(20_000, 500)
                  for _ in range(5000)]
    hist = stats.empty_histogram()
    for v in values:
        hist[stats.bucket_index(v)] += 1
    for q in (50, 95, 99):
        estimate = stats.percentile(hist, q)
        exact = float(np.percentile(values, q))
        assert abs(stats.bucket_index(estimate) - stats.bucket_index(exact)) <= 1, (q, estimate,
                                                                                   exact)


def test_histograms_merge_by_adding_counts() -> None:
    a, b = stats.empty_histogram(), stats.empty_histogram()
    a[3], b[3], b[10] = 2, 5, 1
    merged = stats.merge(a, b)
    assert merged[3] == 7 and merged[10] == 1 and sum(merged) == 8


def test_empty_histogram_has_no_percentiles() -> None:
    assert stats.latency_summary(stats.empty_histogram()) == {"p50": None, "p95": None,
                                                              "p99": None}


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = stats.wilson_interval(8, 10)
    assert math.isclose(low, 0.4902, abs_tol=1e-4) and math.isclose(high, 0.9433, abs_tol=1e-4)
    low, high = stats.wilson_interval(0, 5)
    assert low == 0.0 and 0.43 < high < 0.44
    assert stats.wilson_interval(0, 0) is None
