"""Inline SVG charts and the number formats every surface shares."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date

import pytest
from bench_core.domain import stats
from bench_core.reads.agents import day_window
from bench_core.render import charts
from bench_core.render import formatting as fmt

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_latency_histogram_draws_the_buckets_that_hold_runs_and_marks_p50_p95() -> None:
    hist = stats.empty_histogram()
    for ms, n in ((120, 30), (400, 10), (5000, 1)):
        hist[stats.bucket_index(ms)] += n
    root = parse(charts.latency_histogram(hist))
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "c-bar"]
    assert len(bars) == 3
    heights = sorted(float(b.get("height")) for b in bars)
    assert heights[1] / heights[2] == pytest.approx(10 / 30)  # bar heights are run counts
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "c-mark-label"] == [
        "p50", "p95"]
    assert "41 runs" in root.get("aria-label")
    assert charts.latency_histogram(stats.empty_histogram()) is None


def test_daily_runs_stacks_successes_and_failures_per_day() -> None:
    window = day_window("2026-12-09T10:00:00.000Z", date(2027, 3, 1), 7)
    assert window[0] == "2026-12-03" and window[-1] == "2026-12-09" and len(window) == 7
    assert day_window(None, date(2027, 3, 1), 2) == ["2027-02-28", "2027-03-01"]  # none yet: today
    rows = [{"day": "2026-12-04", "runs": 5, "successes": 4, "failures": 1},
            {"day": "2026-12-09", "runs": 2, "successes": 0, "failures": 2},
            {"day": "2026-11-01", "runs": 9, "successes": 9, "failures": 0}]  # outside: ignored
    root = parse(charts.daily_runs(window, rows))
    groups = [g for g in root.iter(f"{SVG}g")]
    assert [g.find(f"{SVG}title").text for g in groups] == [
        "2026-12-04: 5 runs, 4 succeeded, 1 failed", "2026-12-09: 2 runs, 0 succeeded, 2 failed"]
    assert charts.daily_runs(window, []) is None


def test_sparkline() -> None:
    root = parse(charts.sparkline([0, 2, 4, 1], "runs per day"))
    points = root.find(f"{SVG}polyline").get("points").split()
    assert len(points) == 4 and root.find(f"{SVG}title").text == "runs per day"
    assert charts.sparkline([0, 0], "nothing") is None


@pytest.mark.parametrize("value, shown", [(None, "—"), (0, "$0"), (0.004, "$0.004"),
                                          (0.1, "$0.10"), (0.00123456, "$0.00123"),
                                          (1.5, "$1.50"), (1234.5, "$1,234")])
def test_usd(value, shown) -> None:
    assert fmt.usd(value) == shown


@pytest.mark.parametrize("value, shown", [(None, "—"), (0.4, "<1 ms"), (412.0, "412 ms"),
                                          (1530.0, "1.53 s"), (95_000.0, "1.6 min"),
                                          (4_000_000.0, "1.1 h")])
def test_ms(value, shown) -> None:
    assert fmt.ms(value) == shown


def test_percentages_counts_and_p_values() -> None:
    assert [fmt.pct(v) for v in (None, 0, 1, 0.8123, 0.5)] == ["—", "0%", "100%", "81.2%", "50%"]
    assert fmt.pct_range([0.741, 0.892]) == "74.1–89.2%"
    assert [fmt.compact(v) for v in (999, 1200, 35_000, 4_100_000)] == ["999", "1.2k", "35k",
                                                                         "4.1M"]
    assert fmt.count(1234567) == "1,234,567" and fmt.score(0.8149) == "0.81"
    assert [fmt.p_value(p) for p in (0.0493, 0.5, 0.0002)] == ["p = 0.049", "p = 0.5",
                                                               "p < 0.001"]
