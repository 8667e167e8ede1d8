"""Two agents side by side: which is better on each line, and whether that is beyond noise.

Only counters are stored (no per-run rows are read), so each test uses what counters can
support, and says so on the page:
- success rate: a two-proportion z-test (pooled), with each rate's 95% Wilson interval shown;
- eval score: a z-test whose variances are bounded by m(1-m), the most a 0..1 score can vary, so
  it can miss a real difference but never invents one;
- latency: a Mann-Whitney U test on the two latency histograms (ties within a bucket counted);
- cost per run: not tested, because only totals are kept, not the spread between runs.
A line needs MIN_SAMPLE observations on each side before it gets a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain.ranking import MIN_RUNS
from ..render import formatting as fmt

ALPHA = 0.05
MIN_SAMPLE = MIN_RUNS


@dataclass(frozen=True)
class Line:
    """One row of the comparison. `better` is "a", "b" or None (equal, or not comparable)."""

    key: str
    title: str
    a: str
    b: str
    better: str | None
    verdict: str
    """"beyond noise", "within noise", "too few runs", "not tested" or "no data"."""
    p_value: float | None
    method: str


def _two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def two_proportion_p(x1: int, n1: int, x2: int, n2: int) -> float:
    """p-value of "the two success rates are equal" (pooled two-proportion z-test)."""
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    return _two_sided((x1 / n1 - x2 / n2) / se)


def bounded_mean_p(m1: float, n1: int, m2: float, n2: int) -> float:
    """p-value of "equal means" for 0..1 scores, with variances bounded by m(1-m)."""
    se = math.sqrt(m1 * (1 - m1) / n1 + m2 * (1 - m2) / n2)
    if se == 0:
        return 1.0 if m1 == m2 else 0.0
    return _two_sided((m1 - m2) / se)


def mann_whitney_p(a: Sequence[int], b: Sequence[int]) -> float:
    """p-value of "same latency distribution" from two histograms over the same buckets,
    with the normal approximation and the tie correction (a bucket is one tie group)."""
    n1, n2 = sum(a), sum(b)
    n = n1 + n2
    if n1 == 0 or n2 == 0:
        return 1.0
    u = 0.0
    below_b = 0
    ties = 0.0
    for count_a, count_b in zip(a, b, strict=False):
        u += count_a * (below_b + count_b / 2)
        below_b += count_b
        t = count_a + count_b
        ties += t ** 3 - t
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    return _two_sided((u - n1 * n2 / 2) / math.sqrt(variance))


def _verdict(p: float) -> str:
    return "beyond noise" if p < ALPHA else "within noise"


def _better(a: float | None, b: float | None, higher_is_better: bool) -> str | None:
    if a is None or b is None or a == b:
        return None
    return "a" if (a > b) == higher_is_better else "b"


def _success(a: Mapping[str, Any], b: Mapping[str, Any]) -> Line:
    def shown(s: Mapping[str, Any]) -> str:
        if s["success_rate"] is None:
            return fmt.MISSING
        return f"{fmt.pct(s['success_rate'])} ({fmt.pct_range(s['success_rate_ci95'])})"

    method = "two-proportion z-test; 95% Wilson intervals in brackets"
    better = _better(a["success_rate"], b["success_rate"], True)
    if min(a["runs"], b["runs"]) < MIN_SAMPLE:
        return Line("success", "Success rate", shown(a), shown(b), better, "too few runs", None,
                    method)
    p = two_proportion_p(a["successes"], a["runs"], b["successes"], b["runs"])
    return Line("success", "Success rate", shown(a), shown(b), better, _verdict(p), p, method)


def _score(a: Mapping[str, Any], b: Mapping[str, Any]) -> Line:
    method = "z-test with variances bounded by m(1−m)"
    ma, mb = a["avg_eval_score"], b["avg_eval_score"]
    better = _better(ma, mb, True)
    shown_a, shown_b = fmt.score(ma), fmt.score(mb)
    if ma is None or mb is None:
        return Line("score", "Eval score", shown_a, shown_b, None, "no data", None, method)
    if min(a["eval_count"], b["eval_count"]) < MIN_SAMPLE:
        return Line("score", "Eval score", shown_a, shown_b, better, "too few runs", None, method)
    p = bounded_mean_p(ma, a["eval_count"], mb, b["eval_count"])
    return Line("score", "Eval score", shown_a, shown_b, better, _verdict(p), p, method)


def _latency(a: Mapping[str, Any], b: Mapping[str, Any], hist_a: Sequence[int],
             hist_b: Sequence[int]) -> list[Line]:
    method = "Mann-Whitney U on the latency histograms"
    lines = []
    for q in ("p50", "p95", "p99"):
        va, vb = a["latency_ms"][q], b["latency_ms"][q]
        better = _better(va, vb, False)
        title = f"{q} latency"
        if va is None or vb is None:
            lines.append(Line(q, title, fmt.ms(va), fmt.ms(vb), None, "no data", None, method))
        elif q != "p50":
            lines.append(Line(q, title, fmt.ms(va), fmt.ms(vb), better, "not tested", None,
                              "tails are shown, the test is on the whole distribution (p50 line)"))
        elif min(sum(hist_a), sum(hist_b)) < MIN_SAMPLE:
            lines.append(Line(q, title, fmt.ms(va), fmt.ms(vb), better, "too few runs", None,
                              method))
        else:
            p = mann_whitney_p(hist_a, hist_b)
            lines.append(Line(q, title, fmt.ms(va), fmt.ms(vb), better, _verdict(p), p, method))
    return lines


def _cost(a: Mapping[str, Any], b: Mapping[str, Any]) -> Line:
    """The headline costs (owner-reported, else provider evidence); ranked only when both
    come from the same source, since owner reports and provider evidence count different
    things."""
    ca, cb = a["headline_cost_usd_per_run"], b["headline_cost_usd_per_run"]
    sa, sb = a["headline_cost_source"], b["headline_cost_source"]
    same = sa is not None and sa == sb
    title = f"Cost per run ({sa})" if same else "Cost per run"
    shown_a, shown_b = (fmt.usd(c) + ("" if same or s is None else f" ({s})")
                        for c, s in ((ca, sa), (cb, sb)))
    return Line("cost", title, shown_a, shown_b, _better(ca, cb, False) if same else None,
                "not tested" if same else "no data", None,
                "not tested: Bench keeps cost totals, not the spread between runs")


def compare(a: Mapping[str, Any], b: Mapping[str, Any], hist_a: Sequence[int],
            hist_b: Sequence[int]) -> list[Line]:
    """The comparison of two `views.agent_summary` dicts and their latency histograms."""
    runs = Line("runs", "Runs", fmt.count(a["runs"]), fmt.count(b["runs"]), None, "not tested",
                None, "volume, not quality")
    return [runs, _success(a, b), _score(a, b), *_latency(a, b, hist_a, hist_b), _cost(a, b)]
