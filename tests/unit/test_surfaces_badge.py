"""Badge rendering as pure functions: glyph widths from the real font, layout, escaping,
colours, parameters, and the caching helpers it answers with."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bench_core.domain.errors import BadRequest
from bench_core.render import font_widths
from bench_core.render.badge import (
    STYLES,
    badge_params,
    badge_reply,
    render_badge,
    text_width,
)
from bench_core.render.http_caching import Reply, cacheable, etag_matches, etag_of

SVG = "{http://www.w3.org/2000/svg}"
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


@pytest.mark.parametrize("table, font", [(font_widths.REGULAR, "DejaVuSans.ttf"),
                                         (font_widths.BOLD, "DejaVuSans-Bold.ttf")])
def test_glyph_widths_are_the_fonts_own(table: tuple[int, ...], font: str) -> None:
    path = DEJAVU / font
    if not path.exists():
        pytest.skip(f"{path} is not installed (Debian: fonts-dejavu-core)")
    from PIL import ImageFont

    face = ImageFont.truetype(str(path), font_widths.UNITS_PER_EM, layout_engine=ImageFont.Layout.BASIC)
    codes = [*range(*font_widths.FIRST_RANGE), *range(*font_widths.SECOND_RANGE)]
    assert list(table) == [int(face.getlength(chr(c))) for c in codes]


def test_text_width_adds_advances_and_spacing() -> None:
    assert text_width("", 11) == 0
    assert text_width("i", 11) < text_width("m", 11) < text_width("W", 11) * 1.2
    assert text_width("success", 11) == pytest.approx(43.03, abs=0.01)
    assert text_width("ab", 10, letter_spacing=1.25) == pytest.approx(text_width("ab", 10) + 2.5)
    assert text_width("A", 11, bold=True) > text_width("A", 11)
    assert text_width("漢", 11) == 11  # wide East Asian: one em
    assert text_width("e\u0301", 11) == text_width("e", 11)  # a combining accent adds nothing


@pytest.mark.parametrize("style", list(STYLES))
def test_a_badge_is_xml_sized_to_its_text(style: str) -> None:
    svg = render_badge("runs", "1.2k", "blue", style)
    root = ET.fromstring(svg)
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("x") is not None]
    widths = [float(r.get("width")) for r in rects]
    assert float(root.get("width")) == pytest.approx(sum(widths), abs=0.2)
    s = STYLES[style]
    label = "RUNS" if s.upper else "runs"
    assert widths[0] == pytest.approx(text_width(label, s.font_size,
                                                 letter_spacing=s.letter_spacing)
                                      + 2 * s.padding, abs=0.1)
    assert root.find(f"{SVG}title").text == ("RUNS: 1.2K" if s.upper else "runs: 1.2k")


def test_badge_text_is_escaped_and_stripped_of_what_xml_forbids() -> None:
    hostile = "<script>x</script>]]>\"'&\x00\x1b"
    root = ET.fromstring(render_badge(hostile, hostile, "red", title=hostile))
    assert root.find(f"{SVG}title").text == "<script>x</script>]]>\"'&"
    assert all(not el.tag.endswith("script") for el in root.iter())


def summary(**overrides: object) -> dict:
    base = {"login": "alice", "slug": "bot", "display_name": "Bot", "runs": 40,
            "success_rate": 0.975, "avg_eval_score": None, "cost_usd_per_run": 0.004,
            "headline_cost_usd_per_run": 0.004, "headline_cost_source": "owner-reported",
            "latency_ms": {"p50": 420.0, "p95": 900.0, "p99": 1200.0}}
    return {**base, **overrides}


def visible_texts(reply: Reply) -> list[str]:
    root = ET.fromstring(reply.body)
    return [t.text for t in root.iter(f"{SVG}text") if t.get("aria-hidden") != "true"]


@pytest.mark.parametrize("metric, fields, shown, color", [
    ("success", {}, ["success", "97.5%"], "#3c1"),
    ("success", {"success_rate": 0.4}, ["success", "40%"], "#fe7d37"),
    ("success", {"success_rate": None, "runs": 0}, ["success", "no runs"], "#9f9f9f"),
    ("score", {}, ["eval score", "not scored"], "#9f9f9f"),
    ("score", {"avg_eval_score": 0.812}, ["eval score", "0.81"], "#a4a61d"),
    ("runs", {"runs": 1234}, ["runs", "1.2k"], "#007ec6"),
    ("cost", {}, ["cost/run", "$0.004"], "#007ec6"),
    ("latency", {}, ["p50 latency", "420 ms"], "#3c1"),
    ("latency", {"latency_ms": {"p50": 90_000.0}}, ["p50 latency", "1.5 min"], "#fe7d37"),
])
def test_metric_text_and_threshold_colours(metric: str, fields: dict, shown: list[str],
                                           color: str) -> None:
    reply = badge_reply(summary(**fields), metric, "flat")
    assert reply.status == 200 and visible_texts(reply) == shown
    assert f'fill="{color}"' in reply.body.decode()


def test_not_found_badge() -> None:
    reply = badge_reply(None, "success", "flat")
    assert reply.status == 404 and visible_texts(reply) == ["bench", "not found"]


def test_badge_params() -> None:
    assert badge_params(None, None) == ("success", "flat", None)
    assert badge_params("cost", "for-the-badge") == ("cost", "for-the-badge", None)
    assert badge_params(None, None, "1.2.0+build.7") == ("success", "flat", "1.2.0+build.7")
    for metric, style in (("nope", None), (None, "3d")):
        with pytest.raises(BadRequest) as err:
            badge_params(metric, style)
        assert "use one of" in err.value.message


def test_etags_and_conditional_replies() -> None:
    body = b"<svg/>"
    etag = etag_of(body)
    assert etag == etag_of(body) != etag_of(b"<svg />")
    assert etag_matches(etag, etag) and etag_matches(f"W/{etag}", etag)
    assert etag_matches(f'"x", {etag}', etag) and etag_matches("*", etag)
    assert not etag_matches(None, etag) and not etag_matches('"x"', etag)
    fresh = cacheable(Reply(200, body, "image/svg+xml"), etag)
    assert fresh.status == 304 and fresh.body == b"" and fresh.headers["ETag"] == etag
    missing = cacheable(Reply(404, body, "image/svg+xml"), etag)
    assert missing.status == 404 and missing.body == body
