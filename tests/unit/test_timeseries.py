"""The rules of an agent's analytics over time that need no store: weeks folded from days,
the periods of a range, the headline cost rule per period, and charts drawn only from what
holds a value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from bench_core.domain.timeseries import Bucket, fold_weeks
from bench_core.reads.analytics import numbers, periods
from bench_core.render.analytics_charts import analytics_charts


def test_days_fold_into_iso_weeks_named_by_their_monday() -> None:
    days = [("2026-11-29", Bucket(runs=1)), ("2026-11-30", Bucket(runs=2)),
            ("2026-12-06", Bucket(runs=4)), ("2026-12-07", Bucket(runs=8))]
    assert [(week, b.runs) for week, b in fold_weeks(days)] == [
        ("2026-11-23", 1), ("2026-11-30", 6), ("2026-12-07", 8)]


def test_a_range_lists_every_period_up_to_now_oldest_first() -> None:
    now = datetime(2026, 3, 1, 0, 30, tzinfo=UTC)
    hours = periods("24h", now)
    assert (len(hours), hours[0], hours[-1]) == (24, "2026-02-28T01", "2026-03-01T00")
    days = periods("90d", now)
    assert (len(days), days[0], days[-1]) == (90, "2025-12-02", "2026-03-01")


def test_a_periods_cost_follows_the_headline_rule() -> None:
    evidence_only = numbers(Bucket(runs=4, successes=2, evidence_cost_usd=0.4,
                                   success_evidence_cost_usd=0.1))
    assert evidence_only["cost_source"] == "provider evidence"
    assert evidence_only["cost_usd_per_run"] == pytest.approx(0.1)
    assert evidence_only["cost_usd_per_success"] == pytest.approx(0.2), "all runs' cost"
    assert evidence_only["cost_usd_per_successful_run"] == pytest.approx(0.05)
    owner = numbers(Bucket(runs=4, successes=2, cost_usd=0.8, evidence_cost_usd=0.4,
                           success_cost_usd=0.6, success_evidence_cost_usd=0.1))
    assert (owner["cost_source"], owner["cost_usd_per_successful_run"]) == (
        "owner-reported", pytest.approx(0.3))
    empty = numbers(Bucket())
    assert (empty["success_rate"], empty["success_rate_ci95"], empty["cost_usd_per_run"],
            empty["latency_ms"]["p95"]) == (None, None, None, None)


def test_charts_draw_what_holds_a_value_and_nothing_for_an_empty_range() -> None:
    empty = {"buckets": [{"start": p, **numbers(Bucket())} for p in ("a", "b")]}
    assert set(analytics_charts(empty).values()) == {None}
    one = {"buckets": [{"start": "a", **numbers(Bucket(runs=10, successes=8))},
                       {"start": "b", **numbers(Bucket())}]}
    charts = analytics_charts(one)
    assert charts["runs"] is not None and 'class="c-band"' in (charts["success"] or "")
    assert "<circle" in (charts["success"] or ""), "a period alone is a dot"
    assert charts["score"] is None and charts["latency"] is None
