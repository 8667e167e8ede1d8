"""The Open Graph preview card of a profile: a 1200×630 PNG with the headline numbers.

Drawn with Pillow and its built-in scalable font (so the Lambda layer needs no font files).
The PNG depends only on the strings it shows, so renders are memoised on exactly those: a
card is drawn once per change of its numbers per process, and HTTP caching does the rest.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from . import formatting as fmt

SIZE = (1200, 630)
MARGIN = 64
INK, MUTED, FAINT = (241, 245, 249), (148, 163, 184), (100, 116, 139)
BACKGROUND, TILE, ACCENT = (15, 23, 42), (30, 41, 59), (99, 102, 241)


def card_fields(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """The strings the card shows, in drawing order (title, subtitle, four tiles)."""
    details = " · ".join(v for v in (summary["model"], summary["framework"]) if v)
    latency = summary["latency_ms"]
    return (
        summary["display_name"], f"@{summary['login']}/{summary['slug']}", details,
        "Success rate", fmt.pct(summary["success_rate"]),
        f"95% CI {fmt.pct_range(summary['success_rate_ci95'])}" if summary["runs"] else "no runs yet",
        "Runs", fmt.count(summary["runs"]), f"{fmt.count(summary['failures'])} failed",
        "p50 latency", fmt.ms(latency["p50"]), f"p95 {fmt.ms(latency['p95'])}",
        "Cost per run", fmt.usd(summary["headline_cost_usd_per_run"]),
        summary["headline_cost_source"] or "no cost reported",
    )


_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]+")
"""Control characters, line and paragraph separators, lone surrogates: a name may hold any
of them, and Pillow measures no text that breaks lines (nor draws a surrogate)."""


def one_line(text: str) -> str:
    """`text` as the card draws it: each run of `_NOT_ONE_LINE` characters a space, and the
    built-in font's missing dashes (ranges, the "missing" mark) hyphens, which read the same."""
    return _NOT_ONE_LINE.sub(" ", text).strip().replace("–", "-").replace("—", "-")


def render_og(summary: Mapping[str, Any]) -> bytes:
    return _png(tuple(one_line(field) for field in card_fields(summary)))


def _fit(draw: Any, text: str, font: Any, width: float) -> str:
    """`text` cut with an ellipsis to fit `width` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


@lru_cache(maxsize=256)
def _png(fields: tuple[str, ...]) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    def font(size: int) -> Any:
        return ImageFont.load_default(size=size)

    title, subtitle, details, *tiles = fields
    image = Image.new("RGB", SIZE, BACKGROUND)
    draw = ImageDraw.Draw(image)
    width = SIZE[0] - 2 * MARGIN
    draw.rectangle((0, 0, SIZE[0], 10), fill=ACCENT)
    draw.text((MARGIN, 52), "Bench", font=font(34), fill=ACCENT, stroke_width=1, stroke_fill=ACCENT)
    draw.text((MARGIN + 118, 60), "agent profile", font=font(26), fill=FAINT)
    draw.text((MARGIN, 120), _fit(draw, title, font(72), width), font=font(72), fill=INK,
              stroke_width=1, stroke_fill=INK)
    draw.text((MARGIN, 214), _fit(draw, subtitle, font(34), width), font=font(34), fill=MUTED)
    if details:
        draw.text((MARGIN, 262), _fit(draw, details, font(28), width), font=font(28), fill=FAINT)
    gap = 24
    tile_w = (width - 3 * gap) / 4
    for k in range(4):
        label, value, note = tiles[3 * k:3 * k + 3]
        left, top = MARGIN + k * (tile_w + gap), 350
        draw.rounded_rectangle((left, top, left + tile_w, top + 210), radius=20, fill=TILE)
        inner = tile_w - 56
        draw.text((left + 28, top + 26), _fit(draw, label, font(26), inner), font=font(26),
                  fill=MUTED)
        size = next((n for n in range(58, 30, -4) if draw.textlength(value, font=font(n)) <= inner),
                    30)
        draw.text((left + 28, top + 70 + (58 - size) // 2), _fit(draw, value, font(size), inner),
                  font=font(size), fill=INK, stroke_width=1, stroke_fill=INK)
        draw.text((left + 28, top + 152), _fit(draw, note, font(22), inner), font=font(22),
                  fill=FAINT)
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()
