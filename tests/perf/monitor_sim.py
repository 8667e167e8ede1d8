"""The regression monitors (`bench_core/domain/monitors.py`) on simulated agents, seeded:

- false alarms at steady state: each metric's alerts opened over many simulated months of an
  agent whose rates never change, at several volumes (goal: at most 1 per metric per 30 days);
- time to detect: hours from a 10-point drop in success rate (0.90 to 0.80) at 100 runs a day
  to the alert, over many trials (median and p90), and a few other changes for scale;
- failure clusters (`alerts.monitor.watch_clusters`): an agent's failures (10% of its runs)
  split among `MAX_CLUSTERS` steady clusters, each watched at its share of the budget: the
  alerts of all of them together per 30 days; and the hours to find a new cluster taking 5%
  of the runs at 100 runs a day.

    python tests/perf/monitor_sim.py [--months 100] [--trials 200] [--seed 1]

Runs arrive by Poisson, hour by hour; each is a success with the regime's rate, judged (half of
them) with a Beta score around the regime's, costs a lognormal around the regime's cost and
takes a lognormal duration around its latency. A look is taken after each completed hour,
exactly as the local runner's hourly timer and the sweep do, and alerts open and resolve as
the store keeps them (one open per metric). Not a test: a benchmark, run by hand; exits 1 when
a metric passes the false-alarm goal; deterministic for a seed. Seed 1 (about 90 s): at most
0.07 false alarms per metric per 30 days (success rate at 100 runs/day; 0 to 0.07 across
metrics and volumes), and a 10-point drop at 100 runs/day found in a median 1.1 days, p90 2.6;
eight steady failure clusters together 0 false alarms in 25 months at each volume, and a new
cluster of 5% of runs at 100 runs/day found in a median 1.1 days, p90 3.4 (about 4 minutes in
all).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_core.alerts.monitor import CLUSTER_LEVEL  # noqa: E402
from bench_core.domain import stats  # noqa: E402
from bench_core.domain.cluster_series import MAX_CLUSTERS  # noqa: E402
from bench_core.domain.monitors import (  # noqa: E402
    BASELINE,
    LOOK_ALPHA,
    WINDOWS,
    Metric,
    Period,
    Rule,
)

from tests.monitor_support import Regime, alert_events  # noqa: E402

DAY = 24
WARM_UP = BASELINE + WINDOWS[-1]
"""Hours before the first look counted: a full baseline and the longest window."""
HORIZON = 28 * DAY
"""How long after a change a trial waits for its alert."""
CLUSTER_SHARES = (0.03, 0.02, 0.015, 0.01, 0.01, 0.005, 0.005, 0.005)[:MAX_CLUSTERS]
"""The steady clusters' shares of runs: 10% of runs failing, split unevenly."""
AGENT_METRICS = [m for m in Metric if m is not Metric.CLUSTER]


def hours(rng: np.random.Generator, count: int, runs_per_day: float,
          regimes: list[tuple[int, Regime]]) -> list[Period]:
    """`count` hours of counts; `regimes` is (first hour, regime) in order, the first at 0."""
    n = rng.poisson(runs_per_day / DAY, count)
    total = int(n.sum())
    hour_of = np.repeat(np.arange(count), n)
    starts = np.array([start for start, _ in regimes])
    which = np.searchsorted(starts, hour_of, side="right") - 1
    pick = np.array([[r.success, r.score, r.cost, r.latency_ms] for _, r in regimes])[which]
    ok = rng.random(total) < pick[:, 0]
    cost = pick[:, 2] * rng.lognormal(0, 0.5, total) / np.exp(0.125)
    judged = rng.random(total) < 0.5
    score = rng.beta(pick[:, 1] * 8, (1 - pick[:, 1]) * 8)
    ms = pick[:, 3] * rng.lognormal(0, 0.6, total)
    bucket = np.clip(np.floor(np.log2(np.maximum(ms, 1)) * stats.STEPS_PER_DOUBLING) + 1, 0,
                     stats.BUCKETS - 1).astype(int)

    def per_hour(weights: np.ndarray) -> np.ndarray:
        return np.bincount(hour_of, weights=weights, minlength=count)

    successes, scored = per_hour(ok), per_hour(judged)
    score_sum, cost_sum = per_hour(score * judged), per_hour(cost)
    cost_sq, success_cost = per_hour(cost * cost), per_hour(cost * ok)
    hist = np.bincount(hour_of * stats.BUCKETS + bucket,
                       minlength=count * stats.BUCKETS).reshape(count, stats.BUCKETS)
    return [Period(int(n[h]), int(successes[h]), float(score_sum[h]), int(scored[h]),
                   float(cost_sum[h]), float(cost_sq[h]), float(success_cost[h]),
                   hist[h].tolist()) for h in range(count)]


def false_alarms(seed: int, months: int, runs_per_day: float) -> dict[str, float]:
    """Alerts opened per 30 days at steady state, per metric, over `months` simulated months
    (in streams of a year, each after its warm-up)."""
    rng = np.random.default_rng(seed)
    opened = dict.fromkeys(AGENT_METRICS, 0)
    done = 0
    while done < months:
        span = min(12, months - done)
        periods = hours(rng, WARM_UP + span * 30 * DAY, runs_per_day, [(0, Regime())])
        for metric in AGENT_METRICS:
            opened[metric] += sum(e.kind == "open"
                                  for e in alert_events(periods, Rule(metric), WARM_UP))
        done += span
    return {metric.value: opened[metric] / months for metric in AGENT_METRICS}


def cluster_hours(rng: np.random.Generator, count: int, runs_per_day: float,
                  regimes: list[tuple[int, tuple[float, ...]]]) -> list[list[Period]]:
    """Each cluster's `count` hours: Poisson runs, each failing in at most one cluster, in
    cluster k with the regime's k-th share; a cluster's period counts the agent's runs and
    its own failures (as `watch_clusters` builds it)."""
    n = rng.poisson(runs_per_day / DAY, count)
    starts = [start for start, _ in regimes]
    failed = np.zeros((count, len(regimes[0][1])), dtype=int)
    for h in range(count):
        shares = regimes[int(np.searchsorted(starts, h, side="right")) - 1][1]
        failed[h] = rng.multinomial(n[h], [*shares, 1 - sum(shares)])[:-1]
    return [[Period(int(n[h]), int(n[h] - failed[h, k])) for h in range(count)]
            for k in range(failed.shape[1])]


def cluster_false_alarms(seed: int, months: int, runs_per_day: float) -> float:
    """Alerts opened per 30 days by all of a steady agent's clusters together."""
    rng = np.random.default_rng(seed)
    opened = done = 0
    while done < months:
        span = min(12, months - done)
        for periods in cluster_hours(rng, WARM_UP + span * 30 * DAY, runs_per_day,
                                     [(0, CLUSTER_SHARES)]):
            opened += sum(e.kind == "open" for e in alert_events(
                periods, Rule(Metric.CLUSTER), WARM_UP, CLUSTER_LEVEL))
        done += span
    return opened / months


def cluster_detection(seed: int, trials: int, runs_per_day: float, share: float
                      ) -> dict[str, float | int]:
    """Hours from a new cluster's first failures (`share` of runs) to its alert."""
    rng = np.random.default_rng(seed)
    steady = CLUSTER_SHARES[:-1]
    return time_to_alert(trials, lambda: cluster_hours(
        rng, WARM_UP + HORIZON, runs_per_day,
        [(0, (*steady, 0.0)), (WARM_UP, (*steady, share))])[-1], Rule(Metric.CLUSTER),
        CLUSTER_LEVEL)


def detection(seed: int, trials: int, runs_per_day: float, metric: Metric, worse: Regime
              ) -> dict[str, float | int]:
    """Hours from the change to the alert over `trials` streams."""
    rng = np.random.default_rng(seed)
    return time_to_alert(trials, lambda: hours(rng, WARM_UP + HORIZON, runs_per_day,
                                               [(0, Regime()), (WARM_UP, worse)]), Rule(metric))


def time_to_alert(trials: int, stream: Callable[[], list[Period]], rule: Rule,
                  level: float = LOOK_ALPHA) -> dict[str, float | int]:
    """Over `trials` streams that change at `WARM_UP`, the hours to `rule`'s first alert (a
    trial that has not fired within `HORIZON` counts as that, and is counted apart)."""
    delays, missed, early = [], 0, 0
    for _ in range(trials):
        opened = next((e for e in alert_events(stream(), rule, WARM_UP - 7 * DAY, level)
                       if e.kind == "open"), None)
        if opened is not None and opened.hour < WARM_UP:
            early += 1
            continue
        delays.append(HORIZON if opened is None else opened.hour - WARM_UP + 1)
        missed += opened is None
    ordered = sorted(delays)
    return {"median_hours": statistics.median(ordered),
            "p90_hours": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "missed": missed, "fired_before_the_change": early, "trials": trials}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", type=int, default=100,
                        help="simulated months at steady state per volume")
    parser.add_argument("--trials", type=int, default=200, help="change-point trials")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    began = time.perf_counter()
    report: dict[str, object] = {"seed": args.seed}
    print(f"False alarms per metric per 30 days at steady state ({args.months} months each):")
    steady = {}
    for volume in (20, 100, 1000):
        months = args.months if volume < 1000 else max(args.months // 5, 6)
        rates = false_alarms(args.seed + volume, months, volume)
        steady[f"{volume}_runs_per_day"] = {"months": months, **rates}
        print(f"  {volume:>5} runs/day, {months} months: " + ", ".join(
            f"{metric} {rate:.3f}" for metric, rate in rates.items()))
    for volume in (20, 100, 1000):
        months = max(args.months // 4, 6)
        rate = cluster_false_alarms(args.seed + 3 * volume, months, volume)
        steady[f"{volume}_runs_per_day"][Metric.CLUSTER.value] = rate
        print(f"  {volume:>5} runs/day, {months} months: {len(CLUSTER_SHARES)} failure clusters "
              f"together {rate:.3f}")
    report["false_alarms_per_30_days"] = steady
    changes = {
        "success 0.90 to 0.80 at 100 runs/day": (100, Metric.SUCCESS,
                                                  replace(Regime(), success=0.8)),
        "success 0.90 to 0.80 at 1000 runs/day": (1000, Metric.SUCCESS,
                                                   replace(Regime(), success=0.8)),
        "judge score 0.80 to 0.70 at 100 runs/day": (100, Metric.SCORE,
                                                      replace(Regime(), score=0.7)),
        "cost per success +40% at 100 runs/day": (100, Metric.COST,
                                                   replace(Regime(), cost=0.014)),
        "latency x1.5 at 100 runs/day": (100, Metric.P95, replace(Regime(), latency_ms=1200)),
    }
    print(f"Time to detect ({args.trials} trials each; the first is the goal's):")
    found = {}
    for i, (label, (volume, metric, worse)) in enumerate(changes.items()):
        trials = args.trials if i == 0 else max(args.trials // 4, 20)
        result = detection(args.seed + 7 * i, trials, volume, metric, worse)
        found[label] = result
        print(f"  {label}: median {result['median_hours'] / DAY:.1f} days, "
              f"p90 {result['p90_hours'] / DAY:.1f} days ({result['missed']} missed in 28 days, "
              f"{result['fired_before_the_change']} fired before the change; {trials} trials)")
    trials = max(args.trials // 4, 20)
    result = cluster_detection(args.seed + 99, trials, 100, 0.05)
    found["a new failure cluster of 5% of runs at 100 runs/day"] = result
    print(f"  a new failure cluster of 5% of runs at 100 runs/day: median "
          f"{result['median_hours'] / DAY:.1f} days, p90 {result['p90_hours'] / DAY:.1f} days "
          f"({result['missed']} missed, {result['fired_before_the_change']} early; "
          f"{trials} trials)")
    report["time_to_detect"] = found
    report["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(report))
    if any(rate > 1 for rates in steady.values() for key, rate in rates.items() if key != "months"):
        print("goal missed: more than 1 false alarm per metric per 30 days")
        sys.exit(1)


if __name__ == "__main__":
    main()
