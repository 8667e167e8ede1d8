"""Aggregates of a run, always computed here from its attempts (a submitted summary is ignored).

Per case: pass rate over its k repeats, pass^k (every repeat passed: consistency) and pass@k
(at least one passed: capability). Per suite: the pass rate over all attempts with its Wilson 95%
interval, pass^k and pass@k as shares of cases, mean score, agent-reported cost, and latency
percentiles of the attempts (exact, nearest rank: a run has at most a few hundred).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..domain import stats
from ..domain.benchmark_records import Attempt


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of `values` by nearest rank; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def case_summary(case_id: str, attempts: Sequence[Attempt]) -> dict[str, Any]:
    passes = sum(a.passed for a in attempts)
    return {"case_id": case_id, "attempts": len(attempts), "passes": passes,
            "pass_rate": stats.rate(passes, len(attempts)),
            "pass_all": bool(attempts) and passes == len(attempts),
            "pass_any": passes > 0,
            "mean_score": sum(a.score or 0.0 for a in attempts) / len(attempts) if attempts else None,
            "errors": sum(a.status == "error" for a in attempts),
            "timeouts": sum(a.status == "timeout" for a in attempts)}


def summarize(attempts: Sequence[Attempt], case_ids: Sequence[str], k: int) -> dict[str, Any]:
    """The run's summary; `case_ids` in suite order, `k` the repeats per case."""
    by_case: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        by_case[attempt.case_id].append(attempt)
    cases = [case_summary(case_id, sorted(by_case[case_id], key=lambda a: a.repeat))
             for case_id in case_ids]
    n, passes = len(attempts), sum(a.passed for a in attempts)
    interval = stats.wilson_interval(passes, n)
    costs = [a.cost_usd for a in attempts if a.cost_usd is not None]
    durations = [a.duration_ms for a in attempts]
    return {
        "k": k, "cases": len(cases), "attempts": n, "passes": passes,
        "pass_rate": stats.rate(passes, n),
        "pass_rate_ci95": list(interval) if interval else None,
        "pass_hat_k": stats.rate(sum(c["pass_all"] for c in cases), len(cases)),
        "pass_at_k": stats.rate(sum(c["pass_any"] for c in cases), len(cases)),
        "mean_score": sum(a.score or 0.0 for a in attempts) / n if n else None,
        "errors": sum(a.status == "error" for a in attempts),
        "timeouts": sum(a.status == "timeout" for a in attempts),
        "cost_usd_total": round(sum(costs), 10) if costs else None,
        "cost_usd_per_attempt": round(sum(costs) / len(costs), 10) if costs else None,
        "latency_ms": {"p50": nearest_rank(durations, 50), "p95": nearest_rank(durations, 95)},
        "per_case": cases,
    }
