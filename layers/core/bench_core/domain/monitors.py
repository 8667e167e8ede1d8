"""Regression monitors: has an agent (or a new version) got worse, beyond noise?

Five metrics, each worse in one direction: success rate and judge score (lower), cost per
successful run, p95 latency and a failure cluster's share of runs (higher). The input is a
series of periods' counts (`Period`, oldest first: an hour of the time-bucketed counters, or a
version's totals), read through prefix sums (`Series`), so a look costs the same however long
the history.

**Significant mode: windows against a baseline, a fixed false-alarm budget per look.** At each
look (once per completed period) each of `WINDOWS` (the last day, three days, a week) is
compared with the `BASELINE` periods before it by a one-sided z-test, and the metric fires
when a window is worse with p under `LOOK_ALPHA` *and* worse by at least the owner's minimum
effect. Why this and not a fixed-sample test: a monitor looks every hour for ever, and a test
at 0.05 looked at 720 times a month fires on noise every few days. The budget is spent
Bonferroni-style over looks: by linearity of expectation the expected number of looks that
fire falsely in 30 days is at most 720 × len(WINDOWS) × `LOOK_ALPHA` = `FALSE_ALARMS_PER_30_DAYS`
however correlated the overlapping windows are, and an alert opens at most once per firing
episode, so false alerts are fewer still (`tests/perf/monitor_sim.py` measures both). Why not
a CUSUM or a mixture SPRT: both need the pre-change rate known (here it is itself estimated,
and a CUSUM's false-alarm rate drifts with the estimate's error and with the agent's traffic),
while the two-sample test is valid at any volume, needs nothing but the counters, and says
"since when" (the firing window's start) and "by how much" in the owner's units. Looking again
within a period changes nothing: only completed periods are read, so the looks the budget
counts are the periods.

The tests, by what the counters can support:
- success rate: two proportions (pooled variance);
- judge score: means of 0..1 scores with variances bounded by m(1-m), as `/vs/` does (may miss
  a change, never invents one);
- cost per successful run (total cost / successes): the delta method on per-run (cost,
  success), which needs the sums of squared costs and of successful runs' costs: the hourly
  counters keep both (`period_of_bucket`; an hour counted before the squares were kept has
  none, and a look over such an hour tests no cost until it is older than what a look
  reads), the version counters not (`period_of`), so a version's cost is watched in
  threshold mode only;
- p95 latency: the share of runs slower than the baseline's p95 bucket (about 5% under no
  change), two proportions; the effect is shown as the two p95s.
- a failure cluster (new or growing): the share of the agent's runs that failed in it, two
  proportions as success rate's, over a series whose period `runs` are the agent's and whose
  failures are the cluster's (`domain.cluster_series`): a new cluster grows from none. An
  agent has up to `cluster_series.MAX_CLUSTERS` clusters, each watched at every look, so the
  metric's budget is shared among them (Bonferroni again: `level` = `LOOK_ALPHA /
  MAX_CLUSTERS` per cluster, `alerts.monitor.watch_clusters`): the clusters together still
  average at most `FALSE_ALARMS_PER_30_DAYS` false alarms in 30 days, however many there are.

**Threshold mode** fires when the last day's value crosses the owner's line (with at least
`MIN_WINDOW_RUNS` runs in it), for those who want one.

**Resolving**: an open alert is compared with the baseline before it began (so a lasting
regression does not become the baseline), a day at a time: it resolves when the days ending at
each of the last day's `RESOLVE_LOOKS` were all no longer worse at the lenient `RESOLVE_ALPHA`
or worse by less than the minimum effect (threshold mode: the last day back on the right side
of the line). The gap between the two levels, and the day of agreeing looks, keep an alert
from flapping; after it resolves, windows start no earlier than where it did.

Pure: stdlib only, no scipy (the hot Lambdas import it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

from . import stats
from .pricing import PROVIDER_EVIDENCE, cost_rule
from .versions import VersionStats

if TYPE_CHECKING:  # timeseries imports run_list, which imports (through privacy) this
    from .timeseries import Bucket

PERIOD_HOURS = 1
WINDOWS = (24, 72, 168)
"""The recent windows, in periods (hours): a sharp drop shows in a day, a slow drift in a week."""
BASELINE = 28 * 24
"""Periods before a window that it is compared with."""
FALSE_ALARMS_PER_30_DAYS = 1.0
LOOKS_PER_30_DAYS = 30 * 24 // PERIOD_HOURS
LOOK_ALPHA = FALSE_ALARMS_PER_30_DAYS / (LOOKS_PER_30_DAYS * len(WINDOWS))
"""Each window's level at each look (about 4.6e-4): the budget spread over every test."""
RESOLVE_ALPHA = 0.2
RESOLVE_LOOKS = range(0, WINDOWS[0] + 1, 6)
"""The looks (periods back) that must all find the last day recovered: a day of them, so a
lucky hour of a lasting regression resolves nothing."""
MIN_WINDOW_RUNS = 20
MIN_BASELINE_RUNS = 50
EXACT_BELOW = 0.01
"""Under this normal-approximation p, a count test is computed exactly (`_fisher_upper`)."""
_NORMAL = NormalDist()


class Metric(str, Enum):
    SUCCESS = "success_rate"
    SCORE = "judge_score"
    COST = "cost_per_success"
    P95 = "p95_latency"
    CLUSTER = "failure_cluster"


HIGHER_IS_WORSE = {Metric.COST, Metric.P95, Metric.CLUSTER}
RELATIVE = {Metric.COST, Metric.P95}
"""Metrics whose minimum effect is a fraction of the baseline (0.2 = 20% more), not points."""
DEFAULT_MIN_EFFECT = {Metric.SUCCESS: 0.05, Metric.SCORE: 0.05, Metric.COST: 0.2,
                      Metric.P95: 0.2, Metric.CLUSTER: 0.05}


@dataclass(frozen=True)
class Period:
    """One period's counts. `cost_sq_sum` (the sum of each run's cost squared) and
    `success_cost_sum` (the cost of its successful runs) are what a test of cost needs;
    None where the counters do not keep them."""

    runs: int = 0
    successes: int = 0
    score_sum: float = 0.0
    score_count: int = 0
    cost_sum: float = 0.0
    cost_sq_sum: float | None = None
    success_cost_sum: float | None = None
    latency_hist: Sequence[int] = ()


@dataclass(frozen=True)
class Rule:
    """What the owner asks of one metric: a significant change of at least `min_effect`
    (default per metric), or crossing `threshold` (success and score below it, cost and
    latency above it)."""

    metric: Metric
    mode: Literal["significant", "threshold"] = "significant"
    min_effect: float | None = None
    threshold: float | None = None

    @property
    def effect(self) -> float:
        return DEFAULT_MIN_EFFECT[self.metric] if self.min_effect is None else self.min_effect


@dataclass
class Totals:
    """Counts added up over a stretch of periods."""

    runs: int = 0
    successes: int = 0
    score_sum: float = 0.0
    score_count: int = 0
    cost_sum: float = 0.0
    cost_sq_sum: float | None = 0.0
    success_cost_sum: float | None = 0.0
    latency_hist: list[int] = field(default_factory=stats.empty_histogram)

    def value(self, metric: Metric) -> float | None:
        """The metric's value over these counts; None with nothing to say."""
        if metric is Metric.SUCCESS:
            return stats.rate(self.successes, self.runs)
        if metric is Metric.CLUSTER:
            return stats.rate(self.runs - self.successes, self.runs)
        if metric is Metric.SCORE:
            return self.score_sum / self.score_count if self.score_count else None
        if metric is Metric.COST:
            return self.cost_sum / self.successes if self.successes else None
        return stats.percentile(self.latency_hist, 95)


class Series:
    """Periods (oldest first) as prefix sums: any stretch's `Totals` in one subtraction."""

    def __init__(self, periods: Sequence[Period] = ()) -> None:
        self._prefix: list[Totals] = [Totals()]
        for period in periods:
            self.append(period)

    def __len__(self) -> int:
        return len(self._prefix) - 1

    def append(self, period: Period) -> None:
        last = self._prefix[-1]
        self._prefix.append(Totals(
            last.runs + period.runs, last.successes + period.successes,
            last.score_sum + period.score_sum, last.score_count + period.score_count,
            last.cost_sum + period.cost_sum,
            _plus(last.cost_sq_sum, period.cost_sq_sum),
            _plus(last.success_cost_sum, period.success_cost_sum),
            stats.merge(last.latency_hist, period.latency_hist)))

    def totals(self, start: int, end: int) -> Totals:
        """Periods `start` (included) to `end` (excluded), clipped to the series."""
        start, end = max(0, start), min(len(self), end)
        a, b = self._prefix[max(start, 0)], self._prefix[max(end, start)]
        return Totals(
            b.runs - a.runs, b.successes - a.successes, b.score_sum - a.score_sum,
            b.score_count - a.score_count, b.cost_sum - a.cost_sum,
            _minus(b.cost_sq_sum, a.cost_sq_sum), _minus(b.success_cost_sum, a.success_cost_sum),
            [x - y for x, y in zip(b.latency_hist, a.latency_hist, strict=True)])


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


@dataclass(frozen=True)
class Test:
    """One comparison of a window with its baseline, in the metric's own units."""

    baseline: float | None
    current: float | None
    p_value: float | None
    """One-sided: the chance of a window this much worse if nothing changed; None untested."""
    runs: int
    baseline_runs: int

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline

    def relative(self) -> float | None:
        if self.change is None or not self.baseline:
            return None
        return self.change / self.baseline


def _worse_p(z: float) -> float:
    return 1 - _NORMAL.cdf(z)


def _two_proportions(x1: int, n1: int, x2: int, n2: int) -> float:
    """p of "the second proportion is higher than the first": pooled z, and where that is
    small, Fisher's exact one-sided tail instead. A day's window holds few bad runs, and the
    normal approximation's tail is too thin there (at 100 runs a day it called p = 1.4e-4
    what is 1e-3), which would spend the false-alarm budget several times over."""
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    p = 0.5 if se == 0 else _worse_p((x2 / n2 - x1 / n1) / se)
    return _fisher_upper(x2, n2, x1 + x2, n1 + n2) if p < EXACT_BELOW else p


def _fisher_upper(x: int, n: int, bad: int, total: int) -> float:
    """P(at least `x` of the `bad` fall among `n` drawn of `total`): the hypergeometric upper
    tail, summed from `x` up until the terms no longer count."""
    def log_choose(a: int, b: int) -> float:
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)

    top = min(bad, n)
    if x > top:
        return 0.0
    term = math.exp(log_choose(bad, x) + log_choose(total - bad, n - x) - log_choose(total, n))
    tail, k = 0.0, x
    while k <= top and term > 0:
        tail += term
        if term < tail * 1e-12:
            break
        term *= (bad - k) * (n - k) / ((k + 1) * (total - bad - n + k + 1))
        k += 1
    return min(tail, 1.0)


def _score_z(base: Totals, window: Totals) -> float | None:
    if min(base.score_count, window.score_count) < MIN_WINDOW_RUNS:
        return None
    m1, m2 = base.score_sum / base.score_count, window.score_sum / window.score_count
    se = math.sqrt(m1 * (1 - m1) / base.score_count + m2 * (1 - m2) / window.score_count)
    return None if se == 0 else (m1 - m2) / se


def _cost_variance(t: Totals) -> float | None:
    """The delta method's variance of total cost / successes from per-run sums."""
    if t.cost_sq_sum is None or t.success_cost_sum is None or not t.successes:
        return None
    n = t.runs
    c, s = t.cost_sum / n, t.successes / n
    ratio = c / s
    var_c = max(t.cost_sq_sum / n - c * c, 0.0)
    var_s = s * (1 - s)
    cov = t.success_cost_sum / n - c * s
    return max(var_c - 2 * ratio * cov + ratio * ratio * var_s, 0.0) / (n * s * s)


def _cost_z(base: Totals, window: Totals) -> float | None:
    vb, vw = _cost_variance(base), _cost_variance(window)
    if vb is None or vw is None or vb + vw == 0:
        return None
    return (window.cost_sum / window.successes - base.cost_sum / base.successes) / math.sqrt(
        vb + vw)


def _p95_p(base: Totals, window: Totals) -> float | None:
    """The share of runs past the baseline's p95 bucket, the window's against the baseline's."""
    n1, n2 = sum(base.latency_hist), sum(window.latency_hist)
    if min(n1, n2) < MIN_WINDOW_RUNS:
        return None
    rank, seen, edge = math.ceil(0.95 * n1), 0, len(base.latency_hist) - 1
    for i, count in enumerate(base.latency_hist):
        seen += count
        if seen >= rank:
            edge = i
            break
    slow1, slow2 = sum(base.latency_hist[edge + 1:]), sum(window.latency_hist[edge + 1:])
    return _two_proportions(slow1, n1, slow2, n2)


def compare(metric: Metric, base: Totals, window: Totals) -> Test:
    """`window` against `base` for one metric; untested (p None) with too few runs."""
    test = Test(base.value(metric), window.value(metric), None, window.runs, base.runs)
    if window.runs < MIN_WINDOW_RUNS or base.runs < MIN_BASELINE_RUNS:
        return test
    if metric in (Metric.SUCCESS, Metric.CLUSTER):
        p: float | None = _two_proportions(base.runs - base.successes, base.runs,
                                          window.runs - window.successes, window.runs)
    elif metric is Metric.SCORE:
        p = _z_p(_score_z(base, window))
    elif metric is Metric.COST:
        p = _z_p(_cost_z(base, window))
    else:
        p = _p95_p(base, window)
    return test if p is None else replace(test, p_value=p)


def _z_p(z: float | None) -> float | None:
    return None if z is None else _worse_p(z)


def _big_enough(rule: Rule, test: Test) -> bool:
    """Whether the change is worse by at least the owner's minimum effect."""
    change = test.relative() if rule.metric in RELATIVE else test.change
    if change is None:
        return False
    worse_by = change if rule.metric in HIGHER_IS_WORSE else -change
    return worse_by >= rule.effect


def _crossed(rule: Rule, value: float | None) -> bool:
    if value is None or rule.threshold is None:
        return False
    return value > rule.threshold if rule.metric in HIGHER_IS_WORSE else value < rule.threshold


@dataclass(frozen=True)
class Finding:
    """A metric at one look. `state`: "firing" (worse: open or keep an alert), "ok", or
    "unknown" (too few runs to say). With an open alert, "ok" means recovered: resolve it.
    `since` is the period (index in the series) the worse stretch starts at."""

    metric: Metric
    state: Literal["firing", "ok", "unknown"]
    test: Test | None = None
    since: int | None = None
    window: int | None = None
    level: float | None = None
    """The p-value the test was held to (`LOOK_ALPHA`; `RESOLVE_ALPHA` while open)."""
    mode: str = "significant"


def watch(series: Series, rule: Rule, open_since: int | None = None,
          resolved_at: int | None = None, level: float = LOOK_ALPHA) -> Finding:
    """One look at `rule`'s metric over the completed periods of `series`.

    Without an open alert: each window (none reaching back before `resolved_at`, where the
    last alert resolved, so a past regression is not found again) against the `BASELINE`
    periods before it; firing if any is significantly (p under `level`: `LOOK_ALPHA`, or its
    share of it for one of several series a metric watches) and sufficiently worse (the
    shortest such window gives "since"). With one open since period `open_since`: firing until each of
    the last day's `RESOLVE_LOOKS` looks found the day not worse than the baseline before it."""
    if rule.mode == "threshold":
        return _by_threshold(series, rule, open_since)
    if open_since is not None:
        return _still_worse(series, rule, open_since)
    end, tested = len(series), False
    for size in WINDOWS:
        start = max(end - size, resolved_at or 0)
        if start <= 0 or start >= end:
            break
        test = compare(rule.metric, series.totals(start - BASELINE, start),
                       series.totals(start, end))
        if test.p_value is None:
            continue
        tested = True
        if test.p_value < level and _big_enough(rule, test):
            return Finding(rule.metric, "firing", test, start, end - start, level)
    return Finding(rule.metric, "ok" if tested else "unknown")


def _still_worse(series: Series, rule: Rule, open_since: int) -> Finding:
    base = series.totals(open_since - BASELINE, open_since)
    day, end = WINDOWS[0], len(series)
    latest: Test | None = None
    for back in RESOLVE_LOOKS:
        stop = end - back
        if stop - day < open_since:
            return Finding(rule.metric, "firing", latest, open_since, day, RESOLVE_ALPHA)
        test = compare(rule.metric, base, series.totals(stop - day, stop))
        latest = latest or test
        if test.p_value is None:
            return Finding(rule.metric, "unknown", latest, open_since, day, RESOLVE_ALPHA)
        if test.p_value < RESOLVE_ALPHA and _big_enough(rule, test):
            return Finding(rule.metric, "firing", latest, open_since, day, RESOLVE_ALPHA)
    return Finding(rule.metric, "ok", latest, open_since, day, RESOLVE_ALPHA)


def _by_threshold(series: Series, rule: Rule, open_since: int | None) -> Finding:
    day, end = WINDOWS[0], len(series)
    window = series.totals(end - day, end)
    if window.runs < MIN_WINDOW_RUNS:
        return Finding(rule.metric, "unknown", mode="threshold")
    value = window.value(rule.metric)
    firing = _crossed(rule, value)
    return Finding(rule.metric, "firing" if firing else "ok",
                   Test(rule.threshold, value, None, window.runs, 0),
                   open_since if open_since is not None else end - day, day, mode="threshold")


def versus(newer: Period, older: Period, rule: Rule) -> Finding:
    """A new version's totals against its predecessor's, as one look of `watch` (the version
    counters' seam: `period_of`), the older version the baseline and the newer the window."""
    window = Series([newer]).totals(0, 1)
    if rule.mode == "threshold":
        value = window.value(rule.metric)
        if window.runs < MIN_WINDOW_RUNS:
            return Finding(rule.metric, "unknown", mode="threshold")
        firing = _crossed(rule, value)
        return Finding(rule.metric, "firing" if firing else "ok",
                       Test(rule.threshold, value, None, window.runs, 0), mode="threshold")
    test = compare(rule.metric, Series([older]).totals(0, 1), window)
    if test.p_value is None:
        return Finding(rule.metric, "unknown", test)
    firing = test.p_value < LOOK_ALPHA and _big_enough(rule, test)
    return Finding(rule.metric, "firing" if firing else "ok", test, level=LOOK_ALPHA)


def period_of(version: VersionStats) -> Period:
    """A version's counters as one period (no squares kept: its cost is watched by threshold)."""
    return Period(runs=version.runs, successes=version.successes,
                  score_sum=version.eval_score_sum, score_count=version.eval_count,
                  cost_sum=cost_rule(version.cost_usd_total, version.evidence_cost_usd_total)[0],
                  latency_hist=version.latency_hist)


def period_of_bucket(bucket: Bucket) -> Period:
    """An hour of the agent's counters (`domain.timeseries`) as one period: cost by the
    headline rule (the source it picks for all runs' cost gives the successful runs' and the
    squares), the squares only where the hour kept them for all its runs (see the cost test
    above)."""
    cost, source = cost_rule(bucket.cost_usd, bucket.evidence_cost_usd)
    owner = source != PROVIDER_EVIDENCE
    squares = bucket.cost_sq_usd if owner else bucket.evidence_cost_sq_usd
    return Period(runs=bucket.runs, successes=bucket.successes,
                  score_sum=bucket.eval_score_sum, score_count=bucket.eval_count,
                  cost_sum=cost,
                  cost_sq_sum=squares if bucket.squared_runs == bucket.runs else None,
                  success_cost_sum=(bucket.success_cost_usd if owner
                                    else bucket.success_evidence_cost_usd),
                  latency_hist=bucket.latency_hist)
