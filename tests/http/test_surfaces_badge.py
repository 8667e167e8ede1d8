"""`GET /badge/{login}/{slug}.svg` over real HTTP: every metric and style, caching headers
for GitHub's image proxy, conditional requests, errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import httpx
import pytest
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer
from tests.http.surfaces_data import Seeded, seed_agent

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def agent(bench_server: RunningServer) -> Seeded:
    return seed_agent(bench_server, runs=20, failures=1, duration_ms=300, cost=0.002)


def badge(server: RunningServer, path: str, **headers: str) -> httpx.Response:
    return httpx.get(server.url + path, headers=headers, timeout=10)


def texts(svg: bytes) -> list[str]:
    """The visible texts of a badge (each is drawn twice in `flat`: shadow, then ink)."""
    root = ET.fromstring(svg)
    return [el.text or "" for el in root.iter(f"{SVG}text") if el.get("aria-hidden") != "true"]


@pytest.mark.parametrize("style", ["flat", "flat-square", "for-the-badge"])
@pytest.mark.parametrize("metric", ["success", "runs", "score", "cost", "latency"])
def test_every_metric_and_style_is_a_valid_svg(bench_server: RunningServer, agent: Seeded,
                                               metric: str, style: str) -> None:
    r = badge(bench_server, f"/badge/{agent.path}.svg?metric={metric}&style={style}")
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/svg+xml; charset=utf-8"
    root = ET.fromstring(r.content)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and agent.path in title.text
    assert float(root.get("width")) > 40 and root.get("height") == ("28" if style == "for-the-badge"
                                                                      else "20")


def test_badge_numbers_are_the_read_apis(bench_server: RunningServer, agent: Seeded) -> None:
    summary = bench_server.get(f"/api/agents/{agent.path}")
    expected = {"success": ["success", fmt.pct(summary["success_rate"])],
                "runs": ["runs", fmt.compact(summary["runs"])],
                "cost": ["cost/run", fmt.usd(summary["headline_cost_usd_per_run"])],
                "latency": ["p50 latency", fmt.ms(summary["latency_ms"]["p50"])]}
    for metric, shown in expected.items():
        r = badge(bench_server, f"/badge/{agent.path}.svg?metric={metric}")
        assert texts(r.content) == shown, metric
    assert texts(badge(bench_server, f"/badge/{agent.path}.svg").content) == expected["success"]


def test_caching_headers_and_conditional_requests(bench_server: RunningServer) -> None:
    agent = seed_agent(bench_server, runs=3, failures=0)
    first = badge(bench_server, f"/badge/{agent.path}.svg")
    assert first.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert "default-src 'none'" in first.headers["content-security-policy"]
    for sent in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = badge(bench_server, f"/badge/{agent.path}.svg", **{"If-None-Match": sent})
        assert again.status_code == 304 and again.content == b"", sent
        assert again.headers["etag"] == etag
        assert again.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    seed_agent(bench_server, runs=2, failures=2, login=agent.login, key=agent.key)
    changed = badge(bench_server, f"/badge/{agent.path}.svg", **{"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert texts(changed.content) == ["success", "60%"]


def test_an_unknown_agent_gets_a_grey_not_found_badge(bench_server: RunningServer) -> None:
    r = badge(bench_server, "/badge/nobody-at-all/nothing.svg?style=for-the-badge")
    assert r.status_code == 404 and r.headers["content-type"].startswith("image/svg+xml")
    assert texts(r.content) == ["BENCH", "NOT FOUND"]
    assert r.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    assert 'fill="#9f9f9f"' in r.text


@pytest.mark.parametrize("query, field", [("metric=speed", "metric"), ("style=plastic", "style")])
def test_unknown_metric_or_style_is_a_400(bench_server: RunningServer, agent: Seeded,
                                          query: str, field: str) -> None:
    r = badge(bench_server, f"/badge/{agent.path}.svg?{query}")
    assert r.status_code == 400
    body = r.json()
    assert body["detail"][0]["loc"] == ["query", field] and "use one of" in body["error"]
