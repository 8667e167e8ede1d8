"""Charts as inline SVG strings, drawn on the server from stored counters.

No chart library and no JavaScript: a page is complete, and readable, as it arrives. Colours
come from CSS classes (`c-bar`, `c-ok`, `c-fail`, `c-axis`, `c-mark`), so one chart serves the
light and the dark theme. Each bar carries a `<title>` (a native tooltip) and each chart an
accessible name summarising it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from ..domain import stats
from . import formatting as fmt

WIDTH, HEIGHT = 480, 160
LEFT, RIGHT, TOP, BOTTOM = 8, 8, 14, 26


def _svg(label: str, body: list[str], width: int = WIDTH, height: int = HEIGHT) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(label)}">'
            f"<title>{escape(label)}</title>{''.join(body)}</svg>")


def _axis_label(x: float, text: str, anchor: str = "middle") -> str:
    return (f'<text class="c-axis" x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}" '
            f'font-size="11">{escape(text)}</text>')


def latency_histogram(hist: Sequence[int]) -> str | None:
    """Bars per latency bucket over the range that holds runs, with p50 and p95 marked;
    None when no run has a duration."""
    total = sum(hist)
    if total == 0:
        return None
    used = [i for i, n in enumerate(hist) if n]
    first, last = max(0, used[0] - 1), min(len(hist) - 1, used[-1] + 1)
    buckets = list(range(first, last + 1))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / len(buckets)
    peak = max(hist[i] for i in buckets)
    body = [f'<line class="c-axis-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" '
            f'y2="{TOP + plot_h}"/>']
    for k, i in enumerate(buckets):
        n = hist[i]
        if not n:
            continue
        h = max(1.5, plot_h * n / peak)
        low, high = stats.bucket_bounds(i)
        tip = f"{fmt.ms(low)} to {fmt.ms(high) if high != float('inf') else 'more'}: {n:,} runs"
        body.append(f'<rect class="c-bar" x="{LEFT + k * step + 0.5:.1f}" '
                    f'y="{TOP + plot_h - h:.1f}" width="{max(1.0, step - 1):.1f}" '
                    f'height="{h:.1f}"><title>{escape(tip)}</title></rect>')
    for q in (50, 95):
        value = stats.percentile(hist, q)
        if value is None:
            continue
        k = buckets.index(stats.bucket_index(value)) if stats.bucket_index(value) in buckets else 0
        x = LEFT + (k + 0.5) * step
        body.append(f'<line class="c-mark" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 4}" '
                    f'y2="{TOP + plot_h}"/><text class="c-mark-label" x="{x + 3:.1f}" '
                    f'y="{TOP + 6}" font-size="11">p{q}</text>')
    body.append(_axis_label(LEFT, fmt.ms(stats.bucket_bounds(first)[0]), "start"))
    body.append(_axis_label(WIDTH - RIGHT, fmt.ms(stats.bucket_bounds(last)[0]), "end"))
    p50, p95 = stats.percentile(hist, 50), stats.percentile(hist, 95)
    label = (f"Latency distribution of {total:,} runs: p50 {fmt.ms(p50)}, p95 {fmt.ms(p95)}; "
             "log scale")
    return _svg(label, body)


def daily_runs(window: Sequence[str], rows: Sequence[dict[str, Any]]) -> str | None:
    """Stacked bars of succeeded and failed runs per day over `window`; None without runs."""
    by_day = {r["day"]: r for r in rows}
    counts = [(d, by_day.get(d, {}).get("successes", 0), by_day.get(d, {}).get("failures", 0))
              for d in window]
    peak = max((ok + bad for _, ok, bad in counts), default=0)
    if peak == 0:
        return None
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / len(window)
    body = [f'<line class="c-axis-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" '
            f'y2="{TOP + plot_h}"/>']
    for k, (d, ok, bad) in enumerate(counts):
        if not ok + bad:
            continue
        x, w = LEFT + k * step + 1, max(1.0, step - 2)
        h_ok, h_bad = plot_h * ok / peak, plot_h * bad / peak
        tip = escape(f"{d}: {ok + bad:,} runs, {ok:,} succeeded, {bad:,} failed")
        body.append(f'<g><title>{tip}</title>'
                    f'<rect class="c-ok" x="{x:.1f}" y="{TOP + plot_h - h_ok:.1f}" '
                    f'width="{w:.1f}" height="{h_ok:.1f}"/>'
                    f'<rect class="c-fail" x="{x:.1f}" y="{TOP + plot_h - h_ok - h_bad:.1f}" '
                    f'width="{w:.1f}" height="{h_bad:.1f}"/></g>')
    body.append(f'<text class="c-axis" x="{LEFT}" y="{TOP - 3}" font-size="11">'
                f"{peak:,} runs</text>")
    body.append(_axis_label(LEFT, window[0], "start"))
    body.append(_axis_label(WIDTH - RIGHT, window[-1], "end"))
    runs = sum(ok + bad for _, ok, bad in counts)
    ok_total = sum(ok for _, ok, _ in counts)
    label = (f"Runs per day from {window[0]} to {window[-1]}: {runs:,} runs, "
             f"{ok_total:,} succeeded")
    return _svg(label, body)


def sparkline(values: Sequence[float], label: str) -> str | None:
    """A small line of daily values (embeds); None when all are zero."""
    if not any(values):
        return None
    width, height, pad = 120, 28, 2
    peak = max(values)
    step = (width - 2 * pad) / max(1, len(values) - 1)
    points = " ".join(f"{pad + k * step:.1f},{height - pad - (height - 2 * pad) * v / peak:.1f}"
                      for k, v in enumerate(values))
    return (f'<svg class="spark" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(label)}"><title>{escape(label)}</title>'
            f'<polyline class="c-line" fill="none" points="{points}"/></svg>')
