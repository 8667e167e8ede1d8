"""The charts of an agent's analytics over time (`reads.analytics`), as inline SVG strings in the
style of `charts`: no JavaScript, colours from CSS classes (`c-ok`, `c-fail`, `c-line`,
`c-line2`, `c-band`, a failure cluster's `c-k{n}`), a `<title>` per period and an accessible
name per chart. Periods lie on the x axis in time order, empty ones included, so gaps read as
gaps. The viewBox scales to its box: a chart is as wide as a phone's screen and no wider.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from . import formatting as fmt
from .charts import HEIGHT, WIDTH, _svg

LEFT, RIGHT, TOP, BOTTOM = 8, 8, 18, 26
FONT = 13
"""Larger than the profile's other charts: these are drawn two abreast, or at a phone's width."""
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


@dataclass(frozen=True)
class Line:
    """One measure over the periods: its name, CSS class and values (None: nothing then)."""

    name: str
    css: str
    values: Sequence[float | None]


def _x(k: int, n: int) -> float:
    return LEFT + (k + 0.5) * PLOT_W / n


def _y(value: float, peak: float) -> float:
    return TOP + PLOT_H - (PLOT_H * value / peak if peak else 0.0)


def _frame(starts: Sequence[str], top: str) -> list[str]:
    return [f'<line class="c-axis-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + PLOT_H}" '
            f'y2="{TOP + PLOT_H}"/>', _text(LEFT, TOP - 5, top, "start"),
            _text(LEFT, HEIGHT - 6, starts[0], "start"),
            _text(WIDTH - RIGHT, HEIGHT - 6, starts[-1], "end")]


def _text(x: float, y: float, text: str, anchor: str) -> str:
    return (f'<text class="c-axis" x="{x:.1f}" y="{y}" text-anchor="{anchor}" '
            f'font-size="{FONT}">{escape(text)}</text>')


def runs_chart(buckets: Sequence[dict[str, Any]]) -> str | None:
    """Stacked bars of succeeded and failed runs per period; None without runs."""
    peak = max((b["runs"] for b in buckets), default=0)
    if not peak:
        return None
    starts = [b["start"] for b in buckets]
    step = PLOT_W / len(buckets)
    body = _frame(starts, f"{peak:,} runs")
    for k, b in enumerate(buckets):
        if not b["runs"]:
            continue
        x, w = LEFT + k * step + 0.5, max(1.0, step - 1)
        h_ok, h_bad = PLOT_H * b["successes"] / peak, PLOT_H * b["failures"] / peak
        tip = escape(f"{b['start']}: {b['runs']:,} runs, {b['successes']:,} succeeded, "
                     f"{b['failures']:,} failed")
        body.append(f'<g><title>{tip}</title>'
                    f'<rect class="c-ok" x="{x:.1f}" y="{TOP + PLOT_H - h_ok:.1f}" '
                    f'width="{w:.1f}" height="{h_ok:.1f}"/>'
                    f'<rect class="c-fail" x="{x:.1f}" y="{TOP + PLOT_H - h_ok - h_bad:.1f}" '
                    f'width="{w:.1f}" height="{h_bad:.1f}"/></g>')
    total = sum(b["runs"] for b in buckets)
    return _svg(f"Runs from {starts[0]} to {starts[-1]}: {total:,}", body)


def line_chart(title: str, starts: Sequence[str], lines: Sequence[Line],
               show: Callable[[float | None], str], *, ceiling: float | None = None,
               band: Sequence[tuple[float, float] | None] = ()) -> str | None:
    """`lines` over the periods `starts` (a dot for a period alone, a line through those in a
    row), `band` shaded behind them (a success rate's interval); None when no line has a value.
    The y axis runs from 0 to `ceiling` (else the highest value)."""
    values = [v for line in lines for v in line.values if v is not None]
    if not values:
        return None
    peak = ceiling or max(values) or 1.0
    n = len(starts)
    body = _frame(starts, show(peak))
    body += _band(band, peak, n)
    for line in lines:
        body += _polyline(line, peak, n)
    tips = []
    for k, start in enumerate(starts):
        said = [f"{line.name} {show(v)}" for line in lines if (v := line.values[k]) is not None]
        if said:
            tips.append(f'<rect class="c-hit" x="{LEFT + k * PLOT_W / n:.1f}" y="{TOP}" '
                        f'width="{PLOT_W / n:.1f}" height="{PLOT_H}">'
                        f"<title>{escape(start + ': ' + ', '.join(said))}</title></rect>")
    newest = next((f"{line.name} {show(v)}" for line in lines
                   for v in reversed(line.values) if v is not None), "")
    return _svg(f"{title} from {starts[0]} to {starts[-1]}; latest: {newest}", body + tips)


def _polyline(line: Line, peak: float, n: int) -> list[str]:
    out, run = [], []
    for k, v in [*enumerate(line.values), (n, None)]:
        if v is not None:
            run.append(f"{_x(k, n):.1f},{_y(v, peak):.1f}")
            continue
        if len(run) == 1:
            x, y = run[0].split(",")
            out.append(f'<circle class="{line.css}-dot" cx="{x}" cy="{y}" r="2"/>')
        elif run:
            out.append(f'<polyline class="{line.css}" fill="none" points="{" ".join(run)}"/>')
        run = []
    return out


def _band(band: Sequence[tuple[float, float] | None], peak: float, n: int) -> list[str]:
    out = []
    for k, interval in enumerate(band):
        if interval is not None:
            low, high = interval
            out.append(f'<rect class="c-band" x="{LEFT + k * PLOT_W / n:.1f}" '
                       f'y="{_y(high, peak):.1f}" width="{PLOT_W / n:.1f}" '
                       f'height="{max(0.5, _y(low, peak) - _y(high, peak)):.1f}"/>')
    return out


CLUSTERS_SHOWN = 4
"""Clusters drawn apart (`c-k1`..`c-k4`), the most failing first; the rest as one (`c-k0`)."""


def cluster_colours(clusters: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Each cluster's colour number: 1.. for the first `CLUSTERS_SHOWN`, 0 for the rest."""
    return {c["id"]: (k + 1 if k < CLUSTERS_SHOWN else 0) for k, c in enumerate(clusters)}


def clusters_chart(buckets: Sequence[dict[str, Any]], clusters: Sequence[dict[str, Any]]
                   ) -> str | None:
    """Each period's error rate split by failure cluster: a stacked bar of each cluster's
    failures over the period's runs, the clusters (most failing first) in the colours of
    `cluster_colours`; None without clustered failures."""
    if not clusters:
        return None
    colour = cluster_colours(clusters)
    rows = []
    for b in buckets:
        shares: dict[int, float] = {}
        for cluster, n in b.get("cluster_failures", {}).items():
            if b["runs"] and cluster in colour:
                shares[colour[cluster]] = shares.get(colour[cluster], 0.0) + n / b["runs"]
        rows.append(shares)
    peak = max((sum(r.values()) for r in rows), default=0.0)
    if not peak:
        return None
    starts = [b["start"] for b in buckets]
    step = PLOT_W / len(buckets)
    body = _frame(starts, fmt.pct(peak))
    names = {0: "other clusters"} | {colour[c["id"]]: c["id"] for c in clusters[:CLUSTERS_SHOWN]}
    for k, shares in enumerate(rows):
        if not shares:
            continue
        x, w, y = LEFT + k * step + 0.5, max(1.0, step - 1), float(TOP + PLOT_H)
        bars, said = [], []
        for number in sorted(shares, key=lambda n: n or CLUSTERS_SHOWN + 1):
            h = PLOT_H * shares[number] / peak
            y -= h
            bars.append(f'<rect class="c-k{number}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                        f'height="{h:.1f}"/>')
            said.append(f"{names[number]} {fmt.pct(shares[number])}")
        tip = escape(f"{starts[k]}: " + ", ".join(said) + " of runs failed")
        body.append(f"<g><title>{tip}</title>{''.join(bars)}</g>")
    top = clusters[0]
    return _svg(f"Error rate by failure cluster from {starts[0]} to {starts[-1]}; most: "
                f"{top['id']}, {fmt.pct(top['error_rate'])} of runs", body)


def _tokens(value: float | None) -> str:
    return fmt.compact(None if value is None else round(value))


def analytics_charts(read: dict[str, Any]) -> dict[str, str | None]:
    """Every chart of an analytics read (`reads.analytics.analytics`), by name."""
    b = read["buckets"]
    starts = [x["start"] for x in b]

    def col(name: str, sub: str | None = None) -> list[float | None]:
        return [x[name] if sub is None else x[name][sub] for x in b]

    return {
        "runs": runs_chart(b),
        "success": line_chart("Success rate", starts, [Line("success", "c-line", col(
            "success_rate"))], fmt.pct, ceiling=1.0,
            band=[tuple(x["success_rate_ci95"]) if x["success_rate_ci95"] else None
                  for x in b]),
        "errors": line_chart("Error rate", starts, [Line("errors", "c-line2", col(
            "error_rate"))], fmt.pct, ceiling=1.0),
        "clusters": clusters_chart(b, read.get("failure_clusters") or []),
        "score": line_chart("Judge score", starts, [Line("score", "c-line", col(
            "avg_eval_score"))], fmt.score, ceiling=1.0),
        "cost": line_chart("Cost", starts, [
            Line("per run", "c-line", col("cost_usd_per_run")),
            Line("per success", "c-line2", col("cost_usd_per_success"))], fmt.usd),
        "tokens": line_chart("Tokens", starts, [
            Line("in", "c-line", [float(v) if v else None for v in col("input_tokens")]),
            Line("out", "c-line2", [float(v) if v else None for v in col("output_tokens")])],
            _tokens),
        "latency": line_chart("Latency", starts, [
            Line("p50", "c-line", col("latency_ms", "p50")),
            Line("p95", "c-line2", col("latency_ms", "p95"))], fmt.ms),
    }
