"""The compare page's statistics: each test against an independent computation."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from bench_core.domain import stats
from bench_core.reads.compare import (
    MIN_SAMPLE,
    bounded_mean_p,
    compare,
    mann_whitney_p,
    two_proportion_p,
)


def test_two_proportion_p_matches_the_textbook_value() -> None:
    # 50/100 vs 30/100: pooled p = 0.4, se = sqrt(0.4 * 0.6 * 0.02), z = 2.8868
    assert two_proportion_p(50, 100, 30, 100) == pytest.approx(0.003892, abs=1e-5)
    assert two_proportion_p(30, 100, 50, 100) == two_proportion_p(50, 100, 30, 100)
    assert two_proportion_p(40, 100, 40, 100) == 1.0
    assert two_proportion_p(10, 10, 20, 20) == 1.0  # all successes: nothing to tell apart


def test_bounded_mean_p_is_conservative() -> None:
    # the bound m(1-m) is the largest variance a 0..1 score can have
    assert bounded_mean_p(0.8, 50, 0.8, 50) == 1.0
    assert bounded_mean_p(0.9, 200, 0.6, 200) < 0.001
    assert bounded_mean_p(0.55, 20, 0.5, 20) > 0.5
    assert bounded_mean_p(1.0, 20, 0.0, 20) == 0.0


def _mann_whitney_from_samples(a: list[float], b: list[float]) -> float:
    """The same test from raw samples by brute force: U counts pairs, ties count a half."""
    u = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x, y in itertools.product(a, b))
    n1, n2 = len(a), len(b)
    n = n1 + n2
    ties = sum(t ** 3 - t for t in (sorted(a + b).count(v) for v in set(a + b)))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    return math.erfc(abs(u - n1 * n2 / 2) / sd / math.sqrt(2))


def _histogram(durations: list[float]) -> list[int]:
    hist = stats.empty_histogram()
    for ms in durations:
        hist[stats.bucket_index(ms)] += 1
    return hist


@pytest.mark.parametrize("shift", [1.0, 1.3, 3.0])
def test_mann_whitney_on_histograms_is_the_rank_test_on_bucketed_samples(shift: float) -> None:
    rng = random.Random(7)
    a = [rng.lognormvariate(6, 0.6) for _ in range(40)]
    b = [rng.lognormvariate(6, 0.6) * shift for _ in range(35)]
    bucketed = [[float(stats.bucket_index(x)) for x in sample] for sample in (a, b)]
    assert mann_whitney_p(_histogram(a), _histogram(b)) == pytest.approx(
        _mann_whitney_from_samples(*bucketed), rel=1e-9)


def test_mann_whitney_edge_cases() -> None:
    hist = _histogram([100.0] * 20)
    assert mann_whitney_p(hist, hist) == 1.0
    assert mann_whitney_p(hist, stats.empty_histogram()) == 1.0
    assert mann_whitney_p(_histogram([10.0] * 20), _histogram([1000.0] * 20)) < 1e-6


def summary(runs: int, successes: int, *, score: float | None = None, scored: int = 0,
            p50: float | None = 200.0, cost: float = 0.1) -> dict:
    rate = successes / runs if runs else None
    interval = stats.wilson_interval(successes, runs)
    return {"runs": runs, "successes": successes, "success_rate": rate,
            "success_rate_ci95": list(interval) if interval else None,
            "avg_eval_score": score, "eval_count": scored,
            "latency_ms": {"p50": p50, "p95": p50, "p99": p50},
            "cost_usd_total": cost * runs, "cost_usd_per_run": cost if runs else None,
            "headline_cost_usd_per_run": cost if runs else None,
            "headline_cost_source": "owner-reported" if runs and cost else None}


def test_compare_lines_name_the_better_side_and_the_verdict() -> None:
    fast, slow = _histogram([100.0] * 30), _histogram([900.0] * 30)
    a = summary(30, 29, score=0.9, scored=30, p50=100.0, cost=0.01)
    b = summary(30, 12, score=0.5, scored=30, p50=900.0, cost=0.02)
    lines = {line.key: line for line in compare(a, b, fast, slow)}
    assert [k for k in lines] == ["runs", "success", "score", "p50", "p95", "p99", "cost"]
    assert (lines["success"].better, lines["success"].verdict) == ("a", "beyond noise")
    assert (lines["score"].better, lines["score"].verdict) == ("a", "beyond noise")
    assert (lines["p50"].better, lines["p50"].verdict) == ("a", "beyond noise")
    assert (lines["p95"].verdict, lines["cost"].verdict) == ("not tested", "not tested")
    assert lines["cost"].better == "a" and lines["runs"].better is None
    swapped = {line.key: line for line in compare(b, a, slow, fast)}
    assert swapped["success"].better == "b" and swapped["success"].p_value == lines["success"].p_value


def test_compare_says_when_it_cannot_tell() -> None:
    few = MIN_SAMPLE - 1
    a, b = summary(few, few), summary(few, 0)
    lines = {line.key: line for line in compare(a, b, _histogram([1.0] * few),
                                                _histogram([9.0] * few))}
    assert (lines["success"].better, lines["success"].verdict) == ("a", "too few runs")
    assert lines["p50"].verdict == "too few runs"
    assert (lines["score"].better, lines["score"].verdict) == (None, "no data")
    close = {line.key: line for line in compare(summary(40, 30), summary(40, 29),
                                                _histogram([100.0] * 40),
                                                _histogram([100.0] * 40))}
    assert (close["success"].better, close["success"].verdict) == ("a", "within noise")
    assert (close["p50"].better, close["p50"].verdict) == (None, "within noise")
    unreported = {line.key: line for line in compare(summary(40, 30, cost=0.0),
                                                     summary(40, 30), [], [])}
    assert (unreported["cost"].better, unreported["cost"].verdict) == (None, "no data")
