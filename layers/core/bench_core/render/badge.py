"""Shields-style SVG badges for READMEs: pure functions from headline numbers to an SVG.

Standard library only (plus our own stdlib-only helpers): the badge Lambda's cold start is the
import of this module, the store and a thin handler. Every piece of text is XML-escaped, so an
agent named `<script>` or `]]>` renders as those characters and never as markup.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from ..domain.errors import BadRequest
from . import formatting as fmt
from .font_widths import BOLD, FIRST_RANGE, REGULAR, SECOND_RANGE, UNITS_PER_EM
from .http_caching import Reply, cacheable

COLORS = {
    "brightgreen": "#3c1", "green": "#97ca00", "yellowgreen": "#a4a61d", "yellow": "#dfb317",
    "orange": "#fe7d37", "red": "#e05d44", "blue": "#007ec6", "lightgrey": "#9f9f9f",
    "grey": "#555",
}
FONT_FAMILY = "Verdana,Geneva,DejaVu Sans,sans-serif"
SVG_TYPE = "image/svg+xml; charset=utf-8"
# A badge opened on its own is a document: it must not run anything or load anything.
SVG_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
               "X-Content-Type-Options": "nosniff"}
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Style:
    height: int
    font_size: float
    padding: float
    radius: float
    gloss: bool
    upper: bool
    letter_spacing: float
    bold_message: bool


STYLES = {
    "flat": Style(20, 11, 6, 3, True, False, 0, False),
    "flat-square": Style(20, 11, 6, 0, False, False, 0, False),
    "for-the-badge": Style(28, 10, 12, 0, False, True, 1.25, True),
}


def xml_text(text: str) -> str:
    """`text` escaped for XML content or attributes, minus the characters XML 1.0 forbids even
    as references (control characters), which would make the whole badge unparseable."""
    return escape(_NOT_XML.sub("", text))


def text_width(text: str, size: float, *, bold: bool = False, letter_spacing: float = 0) -> float:
    """Rendered width in px of `text` at `size` px, from DejaVu Sans advance widths.

    Characters beyond Latin-1 are estimated: wide East Asian ones as 1 em, combining marks as 0,
    anything else as a digit's width."""
    table = BOLD if bold else REGULAR
    units = 0
    for ch in text:
        code = ord(ch)
        if FIRST_RANGE[0] <= code < FIRST_RANGE[1]:
            units += table[code - FIRST_RANGE[0]]
        elif SECOND_RANGE[0] <= code < SECOND_RANGE[1]:
            units += table[code - SECOND_RANGE[0] + FIRST_RANGE[1] - FIRST_RANGE[0]]
        elif unicodedata.combining(ch):
            continue
        elif unicodedata.east_asian_width(ch) in ("W", "F"):
            units += UNITS_PER_EM
        else:
            units += table[ord("0") - FIRST_RANGE[0]]
    return units * size / UNITS_PER_EM + letter_spacing * len(text)


def _luminance(color: str) -> float:
    """WCAG relative luminance of #rgb or #rrggbb."""
    hexes = color.lstrip("#")
    if len(hexes) == 3:
        hexes = "".join(c * 2 for c in hexes)
    channels = [int(hexes[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _text_colors(background: str) -> tuple[str, str]:
    """Text and shadow colours: white or dark grey, whichever contrasts more with `background`."""
    lum = _luminance(background)
    on_white = 1.05 / (lum + 0.05)
    on_dark = (lum + 0.05) / (_luminance("#333") + 0.05)
    return ("#fff", "#010101") if on_white >= on_dark else ("#333", "#ccc")


def render_badge(label: str, message: str, color: str, style: str = "flat",
                 title: str | None = None) -> str:
    """A badge reading `label | message`, message on `color` (a name of COLORS or #hex)."""
    s = STYLES[style]
    fill = COLORS.get(color, color)
    if s.upper:
        label, message = label.upper(), message.upper()
    runs = []
    x = 0.0
    for text, bg, bold in ((label, COLORS["grey"], False), (message, fill, s.bold_message)):
        inner = text_width(text, s.font_size, bold=bold, letter_spacing=s.letter_spacing)
        runs.append((text, bg, bold, x, inner + 2 * s.padding, inner))
        x += inner + 2 * s.padding
    width = round(x, 1)
    accessible = title or f"{label}: {message}"
    baseline = s.height / 2 + s.font_size * 0.35
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{s.height}" '
             f'role="img" aria-label="{xml_text(accessible)}">',
             f"<title>{xml_text(accessible)}</title>"]
    if s.gloss:
        parts.append('<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
                     'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>')
    parts.append(f'<clipPath id="r"><rect width="{width}" height="{s.height}" rx="{s.radius}" '
                 'fill="#fff"/></clipPath><g clip-path="url(#r)">')
    for _, bg, _, left, run_width, _ in runs:
        parts.append(f'<rect x="{left:.1f}" width="{run_width:.1f}" height="{s.height}" '
                     f'fill="{xml_text(bg)}"/>')
    if s.gloss:
        parts.append(f'<rect width="{width}" height="{s.height}" fill="url(#s)"/>')
    parts.append(f'</g><g text-anchor="middle" font-family="{FONT_FAMILY}" '
                 f'font-size="{s.font_size}" text-rendering="geometricPrecision">')
    for text, bg, bold, left, run_width, inner in runs:
        ink, shadow = _text_colors(bg)
        attrs = (f'x="{left + run_width / 2:.1f}" textLength="{inner:.1f}"'
                 + (' font-weight="bold"' if bold else "")
                 + (f' letter-spacing="{s.letter_spacing}"' if s.letter_spacing else ""))
        if s.gloss:
            parts.append(f'<text {attrs} y="{baseline + 1:.1f}" fill="{shadow}" '
                         f'fill-opacity=".3" aria-hidden="true">{xml_text(text)}</text>')
        parts.append(f'<text {attrs} y="{baseline:.1f}" fill="{ink}">{xml_text(text)}</text>')
    parts.append("</g></svg>")
    return "".join(parts)


# ---- what each metric says about an agent (from `views.agent_summary`) -----------------------


def _rate_color(value: float) -> str:
    for floor, color in ((0.95, "brightgreen"), (0.85, "green"), (0.7, "yellowgreen"),
                         (0.5, "yellow"), (0.3, "orange")):
        if value >= floor:
            return color
    return "red"


def _latency_color(ms: float) -> str:
    for ceiling, color in ((1_000, "brightgreen"), (5_000, "green"), (15_000, "yellowgreen"),
                           (60_000, "yellow")):
        if ms < ceiling:
            return color
    return "orange"


def _success(s: Mapping[str, Any]) -> tuple[str, str, str]:
    rate = s["success_rate"]
    return ("success", "no runs", "lightgrey") if rate is None else (
        "success", fmt.pct(rate), _rate_color(rate))


def _runs(s: Mapping[str, Any]) -> tuple[str, str, str]:
    return "runs", fmt.compact(s["runs"]), "blue" if s["runs"] else "lightgrey"


def _score(s: Mapping[str, Any]) -> tuple[str, str, str]:
    value = s["avg_eval_score"]
    return ("eval score", "not scored", "lightgrey") if value is None else (
        "eval score", fmt.score(value), _rate_color(value))


def _cost(s: Mapping[str, Any]) -> tuple[str, str, str]:
    value = s["headline_cost_usd_per_run"]  # the owner's, else provider evidence's
    return ("cost/run", "no runs", "lightgrey") if value is None else (
        "cost/run", fmt.usd(value), "blue")


def _latency(s: Mapping[str, Any]) -> tuple[str, str, str]:
    p50 = s["latency_ms"]["p50"]
    return ("p50 latency", "no runs", "lightgrey") if p50 is None else (
        "p50 latency", fmt.ms(p50), _latency_color(p50))


METRICS: dict[str, Callable[[Mapping[str, Any]], tuple[str, str, str]]] = {
    "success": _success, "runs": _runs, "score": _score, "cost": _cost, "latency": _latency}


def badge_reply(summary: Mapping[str, Any] | None, metric: str, style: str,
                if_none_match: str | None = None) -> Reply:
    """The HTTP answer for one badge request; `summary` is None for an agent the public may
    not see, which gets the same grey "not found" badge whether it is private or absent.
    `metric` and `style` must already be valid names (`badge_params`)."""
    if summary is None:
        svg = render_badge("bench", "not found", "lightgrey", style)
        return cacheable(Reply(404, svg.encode(), SVG_TYPE, SVG_HEADERS), if_none_match)
    label, message, color = METRICS[metric](summary)
    if summary.get("version"):
        label = f"{label} {summary['version']}"
    title = f"{summary['display_name']} ({summary['login']}/{summary['slug']}) {label}: {message}"
    svg = render_badge(label, message, color, style, title=title)
    return cacheable(Reply(200, svg.encode(), SVG_TYPE, SVG_HEADERS), if_none_match)


def badge_params(metric: str | None, style: str | None, version: str | None = None
                 ) -> tuple[str, str, str | None]:
    """The (metric, style, version) a request asks for, defaults filled in; 400 for unknown
    names and for a version no run could have (`field_limits.VERSION_RULE`)."""
    metric, style = metric or "success", style or "flat"
    if version:
        from ..domain.field_limits import VERSION_RULE, version_allowed  # only when asked: cold start

        if not version_allowed(version):
            raise BadRequest(f"bad version {version[:80]!r}: {VERSION_RULE}",
                             [{"loc": ["query", "version"], "msg": VERSION_RULE}])
    if metric not in METRICS:
        raise BadRequest(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}",
                         [{"loc": ["query", "metric"], "msg": "unknown metric"}])
    if style not in STYLES:
        raise BadRequest(f"unknown style {style!r}: use one of {', '.join(STYLES)}",
                         [{"loc": ["query", "style"], "msg": "unknown style"}])
    return metric, style, version or None
