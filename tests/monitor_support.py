"""Simulated hourly streams for the regression monitors (`domain/monitors.py`): an agent's runs
hour by hour, seeded, each run a success or not, a judge score, a cost and a duration, with the
rates changing where a test says."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench_core.domain import stats
from bench_core.domain.monitors import LOOK_ALPHA, Finding, Period, Rule, Series, watch


@dataclass(frozen=True)
class Regime:
    success: float = 0.9
    score: float = 0.8
    cost: float = 0.01
    latency_ms: float = 800.0


def hour(rng: random.Random, runs_per_day: float, regime: Regime) -> Period:
    """One hour's counts: Poisson arrivals, each run drawn from `regime`."""
    n = _poisson(rng, runs_per_day / 24)
    successes = score_count = 0
    score_sum = cost_sum = cost_sq = success_cost = 0.0
    hist = stats.empty_histogram()
    for _ in range(n):
        ok = rng.random() < regime.success
        cost = regime.cost * rng.lognormvariate(0, 0.5) / math.exp(0.125)
        successes += ok
        cost_sum += cost
        cost_sq += cost * cost
        success_cost += cost if ok else 0.0
        if rng.random() < 0.5:
            score_count += 1
            score_sum += rng.betavariate(regime.score * 8, (1 - regime.score) * 8)
        hist[stats.bucket_index(regime.latency_ms * rng.lognormvariate(0, 0.6))] += 1
    return Period(n, successes, score_sum, score_count, cost_sum, cost_sq, success_cost, hist)


def _poisson(rng: random.Random, mean: float) -> int:
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


def stream(seed: int, hours: int, runs_per_day: float, regime_at: Callable[[int], Regime]
           ) -> list[Period]:
    rng = random.Random(seed)
    return [hour(rng, runs_per_day, regime_at(h)) for h in range(hours)]


@dataclass(frozen=True)
class Event:
    hour: int
    """The look's hour: after `hour + 1` periods completed."""
    kind: str
    """"open" or "resolve"."""
    finding: Finding


def alert_events(periods: list[Period], rule: Rule, first_look: int = 0,
                 level: float = LOOK_ALPHA) -> Iterator[Event]:
    """What an alert for `rule` does as the periods complete one by one: opened when the
    metric fires (at `level`: a failure cluster's is its share of the budget), resolved when
    it is back (one alert per episode, as the store keeps it)."""
    series = Series(periods[:first_look])
    open_since: int | None = None
    resolved_at: int | None = None
    for h in range(first_look, len(periods)):
        series.append(periods[h])
        finding = watch(series, rule, open_since, resolved_at, level)
        if open_since is None and finding.state == "firing":
            open_since = finding.since
            yield Event(h, "open", finding)
        elif open_since is not None and finding.state == "ok":
            open_since, resolved_at = None, h + 1
            yield Event(h, "resolve", finding)
