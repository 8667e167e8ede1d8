"""The public pages over real HTTP: profile, leaderboard (and its JSON twin), compare, embed,
OG image, landing, static files and error pages; their headers; and the golden rule that
every number a page shows is the read API's number, formatted."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import struct
import uuid

import httpx
import pytest
from bench_core.domain.ranking import Qualification
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.surfaces_data import (
    Seeded,
    fetch,
    json_value,
    seed_agent,
    shown_metrics,
    wait_until_judged,
)
from tests.http.test_ingest_http import new_login, post

FORMAT = {"runs": fmt.count, "successes": fmt.count, "failures": fmt.count,
          "eval_count": fmt.count, "success_rate": fmt.pct, "success_rate_ci95": fmt.pct_range,
          "avg_eval_score": fmt.score, "cost_usd_per_run": fmt.usd, "cost_usd_total": fmt.usd,
          "headline_cost_usd_per_run": fmt.usd,
          "latency_ms.p50": fmt.ms, "latency_ms.p95": fmt.ms, "latency_ms.p99": fmt.ms,
          "evidence_cost_usd_total": fmt.usd}


@pytest.fixture(scope="module")
def agent(bench_server: RunningServer) -> Seeded:
    """Judged before any test reads it, so that the numbers hold still between two reads."""
    seeded = seed_agent(bench_server, runs=14, failures=4, display_name="Golden Agent",
                        model="model-golden", framework="fw-" + uuid.uuid4().hex[:8],
                        tools=["web_search"])
    wait_until_judged(bench_server, seeded, runs=14)
    return seeded


def assert_golden(shown: list[tuple[str, str, str]], summary: dict) -> None:
    """Each number a page marks is the JSON's value, and reads as the shared filter writes it."""
    assert shown
    for metric, raw, text in shown:
        expected = json_value(summary, metric)
        if expected is None:
            assert raw == "", metric
        elif isinstance(expected, list):
            assert [float(x) for x in raw.split(",")] == expected, metric
        else:
            assert float(raw) == expected, metric
        if expected is not None:
            assert text == FORMAT[metric](expected), (metric, text)


def test_profile_numbers_are_the_read_apis(bench_server: RunningServer, agent: Seeded) -> None:
    summary = bench_server.get(f"/api/agents/{agent.path}")
    page = fetch(bench_server, f"/u/{agent.path}")
    assert page.status_code == 200
    shown = shown_metrics(page.text)
    assert {m for m, _, _ in shown} >= {"runs", "successes", "failures", "success_rate",
                                         "success_rate_ci95", "headline_cost_usd_per_run",
                                         "cost_usd_total", "latency_ms.p50", "latency_ms.p95",
                                         "latency_ms.p99"}
    assert_golden(shown, summary)
    assert (summary["runs"], summary["failures"]) == (14, 4)


def test_profile_shows_the_agent_its_runs_charts_and_snippets(bench_server: RunningServer,
                                                              agent: Seeded) -> None:
    text_of_page = fetch(bench_server, f"/u/{agent.path}").text
    for text in ("Golden Agent", "model-golden", "web_search", "Runs per day",
                 "Latency distribution", "secret-output-13", "in-13", "No insights yet",
                 "No provider evidence yet", f"/badge/{agent.path}.svg",
                 f"/embed/{agent.path}?size=md"):
        assert text in text_of_page, text
    assert text_of_page.count("<details>") == 10  # the newest ten runs, each expandable
    over_time = text_of_page.index('id="analytics"')  # its charts: tests/http/test_analytics_http.py
    others = text_of_page[:over_time] + text_of_page[text_of_page.index("</section>", over_time):]
    assert others.count('<svg class="chart"') == 2


def test_profile_headers_and_link_preview_tags(bench_server: RunningServer,
                                               agent: Seeded) -> None:
    page = fetch(bench_server, f"/u/{agent.path}")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    assert "X-Bench-Key" in page.headers["vary"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    url = f"{bench_server.url}/u/{agent.path}"
    assert f'<meta property="og:image" content="{bench_server.url}/og/{agent.path}.png">' in page.text
    assert f'<meta property="og:url" content="{url}">' in page.text
    assert '<meta name="twitter:card" content="summary_large_image">' in page.text
    owner = fetch(bench_server, f"/u/{agent.path}", key=agent.key)
    assert owner.headers["cache-control"] == "private, no-store"


def test_cost_from_provider_evidence_is_shown_apart_from_reported_cost(
        bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    usage = ev("task.log", "e1", name="chat", data={
        "label": "evidence", "provider": "openai", "model": "gpt-4o", "input_tokens": 1200,
        "output_tokens": 300})
    events = task_events("e1", "chat", cost=0.5)
    r = post(bench_server, batch("evident", [events[0], usage, *events[1:]]), key)
    assert r.status_code == 200, r.text
    wait_until_judged(bench_server, Seeded(login, "evident", key), 1)  # page and JSON alike
    summary = bench_server.get(f"/api/agents/{login}/evident")
    assert summary["evidence_cost_usd_total"] > 0
    page = fetch(bench_server, f"/u/{login}/evident").text
    shown = shown_metrics(page)
    assert {"evidence_cost_usd_total", "cost_usd_total"} <= {m for m, _, _ in shown}
    assert_golden(shown, summary)
    assert "from provider evidence (1 call)" in page and "owner-reported" in page


def test_og_image_is_a_cached_1200_by_630_png(bench_server: RunningServer, agent: Seeded) -> None:
    image = fetch(bench_server, f"/og/{agent.path}.png")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", image.content[16:24]) == (1200, 630)
    assert image.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    again = fetch(bench_server, f"/og/{agent.path}.png", **{"If-None-Match": image.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_embed_is_framable_self_contained_and_cached(bench_server: RunningServer,
                                                     agent: Seeded) -> None:
    page = fetch(bench_server, f"/embed/{agent.path}?size=lg&theme=dark")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors *" in csp and "x-frame-options" not in page.headers
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)  # nothing from elsewhere
    for tag in ("style", "script"):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", page.text, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp, tag
    assert 'data-theme="dark"' in page.text and 'class="size-lg"' in page.text
    assert 'data-refresh="60"' in page.text
    summary = bench_server.get(f"/api/agents/{agent.path}")
    assert_golden(shown_metrics(page.text), summary)
    again = fetch(bench_server, f"/embed/{agent.path}?size=lg&theme=dark",
                  **{"If-None-Match": page.headers["etag"]})
    assert again.status_code == 304


def test_embed_sizes_differ(bench_server: RunningServer, agent: Seeded) -> None:
    small, large = (fetch(bench_server, f"/embed/{agent.path}?size={s}").text for s in ("sm", "lg"))
    assert "Cost/run" not in small and "Cost/run" in large
    assert '<svg class="chart"' in large and '<svg class="chart"' not in small


@pytest.mark.parametrize("path, message", [
    ("/leaderboard?sort=fastest", "unknown sort 'fastest'"),
    ("/leaderboard?page=0", "page must be"),
    ("/leaderboard?page=two", "page must be"),
    ("/embed/{path}?size=xl", "unknown size 'xl'"),
    ("/embed/{path}?theme=pink", "unknown theme 'pink'"),
    ("/vs?a=only-one&b=", "name both agents"),
])
def test_unknown_query_values_are_a_400_page(bench_server: RunningServer, agent: Seeded,
                                             path: str, message: str) -> None:
    page = fetch(bench_server, path.format(path=agent.path))
    assert page.status_code == 400
    assert page.headers["content-type"].startswith("text/html")
    assert message in html.unescape(page.text)


@pytest.mark.parametrize("params, field", [({"sort": "fastest"}, "sort"), ({"page": "-1"}, "page")])
def test_leaderboard_json_rejects_unknown_values(bench_server: RunningServer, params: dict,
                                                 field: str) -> None:
    r = httpx.get(bench_server.url + "/api/leaderboard", params=params)
    assert r.status_code == 400 and r.json()["detail"][0]["loc"] == ["query", field]
    assert field in r.json()["error"]


def test_leaderboard_page_and_json_agree(bench_server: RunningServer) -> None:
    tag = "lb-" + uuid.uuid4().hex[:8]
    busy = seed_agent(bench_server, runs=20, failures=2, framework=tag, duration_ms=900)
    second = seed_agent(bench_server, runs=12, failures=6, framework=tag, login=busy.login,
                        key=busy.key, slug="second", duration_ms=100, cost=0.01)
    newcomer = seed_agent(bench_server, runs=6, failures=0, framework=tag, login=busy.login,
                          key=busy.key, slug="newcomer")  # ranked by runs; too few for rates
    for seeded, runs in ((busy, 20), (second, 12), (newcomer, 6)):
        wait_until_judged(bench_server, seeded, runs)
    for sort, order in (("runs", ["agent", "second", "newcomer"]), ("success", ["agent", "second"]),
                        ("latency", ["second", "agent"]), ("cost", ["agent", "second"])):
        data = httpx.get(f"{bench_server.url}/api/leaderboard", params={"sort": sort, "q": tag}).json()
        assert [a["slug"] for a in data["agents"]] == order, sort
        assert [a["rank"] for a in data["agents"]] == list(range(1, len(order) + 1))
        page = fetch(bench_server, f"/leaderboard?sort={sort}&q={tag}")
        assert page.status_code == 200
        assert sort == "runs" or f"at least {data['min_runs']}" in page.text
        assert f"A new agent ranks once it has {data['entry']}" in page.text
        shown = shown_metrics(page.text)
        assert [v for m, v, _ in shown if m == "runs"] == [str(a["runs"]) for a in data["agents"]]
        for row, agent in zip(_rows(shown), data["agents"], strict=True):
            assert_golden(row, agent)
    assert httpx.get(f"{bench_server.url}/api/leaderboard",
                     params={"q": tag}).headers["cache-control"] == "public, max-age=60, s-maxage=60"


def _rows(shown: list[tuple[str, str, str]]) -> list[list[tuple[str, str, str]]]:
    """Split a leaderboard's marked numbers into rows (each row starts with `runs`)."""
    rows: list[list[tuple[str, str, str]]] = []
    for item in shown:
        if item[0] == "runs":
            rows.append([])
        rows[-1].append(item)
    return rows


def test_leaderboard_search_and_pages(bench_server: RunningServer) -> None:
    tag = "pg-" + uuid.uuid4().hex[:8]
    runs = Qualification().min_runs  # each ranks: a day old (seed_agent) with the runs
    first = seed_agent(bench_server, runs=runs, failures=0, slug="a00", model=tag)
    for i in range(1, 27):
        seed_agent(bench_server, runs=runs, failures=0, slug=f"a{i:02d}", model=tag,
                   login=first.login, key=first.key)
    one = httpx.get(f"{bench_server.url}/api/leaderboard", params={"q": tag.upper()}).json()
    assert len(one["agents"]) == 25 and one["next_page"] == 2 and one["prev_page"] is None
    two = httpx.get(f"{bench_server.url}/api/leaderboard", params={"q": tag, "page": 2}).json()
    assert len(two["agents"]) == 2 and two["next_page"] is None and two["prev_page"] == 1
    slugs = [a["slug"] for a in one["agents"] + two["agents"]]
    assert sorted(slugs) == [f"a{i:02d}" for i in range(27)] and len(set(slugs)) == 27
    assert two["agents"][0]["rank"] == 26
    second = fetch(bench_server, f"/leaderboard?q={tag}&page=2").text
    assert 'rel="prev"' in second and 'rel="next"' not in second
    none = fetch(bench_server, "/leaderboard?q=" + uuid.uuid4().hex).text
    assert "No agents match" in none


def test_compare_says_which_is_better_and_whether_it_is_noise(bench_server: RunningServer
                                                              ) -> None:
    good = seed_agent(bench_server, runs=30, failures=1, duration_ms=100)
    bad = seed_agent(bench_server, runs=30, failures=20, duration_ms=2000)
    page = fetch(bench_server, f"/vs/@{good.login}/{good.slug}/@{bad.login}/{bad.slug}")
    assert page.status_code == 200
    lines = {key: (better, verdict) for key, better, verdict in re.findall(
        r'data-line="(\w+)" data-better="(\w*)" data-verdict="([^"]+)"', page.text)}
    assert lines["success"] == ("a", "beyond noise")
    assert lines["p50"] == ("a", "beyond noise")
    assert lines["cost"][1] == "not tested"
    assert "two-proportion z-test" in page.text and "Mann-Whitney" in page.text
    flipped = fetch(bench_server, f"/vs/@{bad.login}/{bad.slug}/@{good.login}/{good.slug}").text
    assert 'data-line="success" data-better="b" data-verdict="beyond noise"' in flipped
    near = seed_agent(bench_server, runs=30, failures=2, duration_ms=100)
    close = fetch(bench_server, f"/vs/@{good.login}/{good.slug}/@{near.login}/{near.slug}").text
    assert 'data-line="success" data-better="a" data-verdict="within noise"' in close
    redirect = httpx.get(f"{bench_server.url}/vs", params={"a": good.path, "b": "@" + bad.path})
    assert redirect.status_code == 303
    assert redirect.headers["location"] == f"/vs/@{good.login}/{good.slug}/@{bad.login}/{bad.slug}"


def test_landing_links_the_leaderboard_try_and_docs(bench_server: RunningServer) -> None:
    page = fetch(bench_server, "/")
    assert page.status_code == 200
    for link in ('href="/leaderboard"', 'href="/try"', 'href="#get-started"', 'id="get-started"'):
        assert link in page.text


def test_unknown_addresses_get_a_404_page_for_browsers_and_json_for_clients(
        bench_server: RunningServer) -> None:
    page = fetch(bench_server, "/no/such/page")
    assert page.status_code == 404 and "Not found" in page.text
    assert page.headers["content-type"].startswith("text/html")
    api = httpx.get(bench_server.url + "/no/such/page")
    assert api.status_code == 404 and api.json()["error"] == "not found"
    missing = fetch(bench_server, "/u/nobody-here/nothing")
    assert missing.status_code == 404 and "agent not found" in missing.text


def test_static_files_are_ours_and_cached_by_version(bench_server: RunningServer) -> None:
    landing = fetch(bench_server, "/").text
    css = re.search(r'href="(/static/bench\.css\?v=\w+)"', landing).group(1)
    r = httpx.get(bench_server.url + css)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")
    assert "immutable" in r.headers["cache-control"]
    assert "max-age=300" in httpx.get(bench_server.url + "/static/bench.css").headers["cache-control"]
    assert httpx.get(bench_server.url + "/static/nope.css").status_code == 404
    assert not re.search(r'(?:src|href)="(?:https?:)?//', landing)
