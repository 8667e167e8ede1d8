"""A run's aggregates from its attempts: pass rates with Wilson intervals, pass^k, pass@k,
cost and latency."""

from __future__ import annotations

from bench_core.benchmarks.aggregate import nearest_rank, summarize
from bench_core.domain import stats
from bench_core.domain.benchmark_records import Attempt


def attempt(case_id: str, repeat: int, passed: bool, *, status: str = "ok", ms: float = 100.0,
            cost: float | None = None) -> Attempt:
    return Attempt(case_id=case_id, repeat=repeat, status=status, input={}, output="x",
                   output_hash="sha256:" + "0" * 64, duration_ms=ms, cost_usd=cost,
                   score=1.0 if passed else 0.2, passed=passed, judge="j", reasoning="r")


def test_pass_hat_k_needs_every_repeat_and_pass_at_k_any_one() -> None:
    attempts = [attempt("a", r, True) for r in range(3)]            # always
    attempts += [attempt("b", r, r == 1) for r in range(3)]         # sometimes
    attempts += [attempt("c", r, False, status="error" if r == 0 else "ok") for r in range(3)]  # never
    s = summarize(attempts, ["a", "b", "c"], 3)
    assert (s["k"], s["cases"], s["attempts"], s["passes"]) == (3, 3, 9, 4)
    assert s["pass_rate"] == 4 / 9
    assert s["pass_rate_ci95"] == list(stats.wilson_interval(4, 9))
    assert s["pass_hat_k"] == 1 / 3 and s["pass_at_k"] == 2 / 3
    assert s["errors"] == 1 and s["timeouts"] == 0
    by_case = {c["case_id"]: c for c in s["per_case"]}
    assert [by_case[x]["pass_all"] for x in "abc"] == [True, False, False]
    assert [by_case[x]["pass_any"] for x in "abc"] == [True, True, False]
    assert by_case["b"]["pass_rate"] == 1 / 3 and by_case["c"]["errors"] == 1


def test_cases_keep_the_suites_order_whatever_the_submission_order() -> None:
    attempts = [attempt("z", 0, True), attempt("a", 0, False)]
    assert [c["case_id"] for c in summarize(attempts, ["z", "a"], 1)["per_case"]] == ["z", "a"]


def test_cost_is_summed_only_where_reported_and_latency_is_exact() -> None:
    attempts = [attempt("a", r, True, ms=ms, cost=cost)
                for r, (ms, cost) in enumerate([(10, 0.5), (20, None), (30, 0.25), (1000, None)])]
    s = summarize(attempts, ["a"], 4)
    assert s["cost_usd_total"] == 0.75 and s["cost_usd_per_attempt"] == 0.375
    assert s["latency_ms"] == {"p50": 20, "p95": 1000}
    assert summarize([attempt("a", 0, True)], ["a"], 1)["cost_usd_total"] is None


def test_nearest_rank() -> None:
    assert nearest_rank([], 50) is None
    assert nearest_rank([5.0], 95) == 5.0
    values = list(range(1, 101))
    assert (nearest_rank(values, 50), nearest_rank(values, 95), nearest_rank(values, 100)) == (50, 95, 100)
