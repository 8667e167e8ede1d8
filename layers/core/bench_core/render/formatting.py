"""How numbers read on every public surface: pages, embeds, badges and the OG image.

One module, so a success rate reads "81.2%" on the profile, the badge and the preview card alike,
and so templates hold no formatting logic (they call these as Jinja filters). Standard library
only: the badge function imports this on its cold path.
"""

from __future__ import annotations

import math

MISSING = "—"


def pct(value: float | None, digits: int = 1) -> str:
    """A 0..1 fraction as a percentage, trimmed of a useless ".0" (100%, 0%, 81.2%)."""
    if value is None:
        return MISSING
    text = f"{value * 100:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "%"


def pct_range(bounds: tuple[float, float] | list[float] | None) -> str:
    """A confidence interval such as "74.1–89.2%"."""
    if not bounds:
        return MISSING
    low, high = bounds
    return f"{pct(low)[:-1]}–{pct(high)}"


def score(value: float | None) -> str:
    """An eval score (0..1) with two decimals, as judges' scores are read."""
    return MISSING if value is None else f"{value:.2f}"


def score_range(bounds: tuple[float, float] | list[float] | None) -> str:
    """An interval of scores or kappas, which may be negative: "0.15 to 0.65"."""
    if not bounds:
        return MISSING
    return f"{score(bounds[0])} to {score(bounds[1])}"


def count(value: int | None) -> str:
    """An exact count with thousands separators (profile, leaderboard)."""
    return MISSING if value is None else f"{value:,}"


def compact(value: int | None) -> str:
    """A count in at most four characters plus a unit (badges): 999, 1.2k, 35k, 4.1M."""
    if value is None:
        return MISSING
    for limit, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            scaled = value / limit
            return (f"{scaled:.1f}".rstrip("0").rstrip(".") if scaled < 10 else f"{scaled:.0f}") + unit
    return str(value)


def usd(value: float | None) -> str:
    """Dollars with enough significant digits for per-run agent costs ($0.0042, $1.37, $1,204)."""
    if value is None:
        return MISSING
    if value == 0:
        return "$0"
    if abs(value) >= 100:
        return f"${value:,.0f}"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    decimals = min(8, max(2, 2 - math.floor(math.log10(abs(value)))))
    whole, _, frac = f"{value:.{decimals}f}".partition(".")
    return f"${whole}.{frac.rstrip('0').ljust(2, '0')}"


def ms(value: float | None) -> str:
    """A duration at the scale a reader thinks in: 412 ms, 1.53 s, 2.4 min, 1.1 h."""
    if value is None:
        return MISSING
    if value < 1:
        return "<1 ms"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.3g} s"
    if value < 3_600_000:
        return f"{value / 60_000:.2g} min"
    return f"{value / 3_600_000:.2g} h"


def p_value(value: float | None) -> str:
    """A test's p-value as papers print it: "p = 0.034", or "p < 0.001" when smaller."""
    if value is None:
        return MISSING
    return "p < 0.001" if value < 0.001 else f"p = {value:.2g}"


def day(value: str | None) -> str:
    """The date part of a stored ISO timestamp."""
    return MISSING if not value else value[:10]


def delta(value: float | None, unit: str = "count") -> str:
    """A difference, signed, in a number's own format (`unit`: "ms", "usd", "count", "score"):
    "+412 ms", "−$0.0021", "±0" where none."""
    if value is None:
        return MISSING
    if value == 0:
        return "±0"
    size = abs(value)
    shown = (ms(size) if unit == "ms" else usd(size) if unit == "usd" else
             score(size) if unit == "score" else count(round(size)))
    return ("+" if value > 0 else "−") + shown


FILTERS = {"delta": delta, "pct": pct, "pct_range": pct_range, "score": score,
           "score_range": score_range, "count": count,
           "compact": compact, "usd": usd, "ms": ms, "day": day, "p_value": p_value}
