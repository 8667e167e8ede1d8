"""The leaderboard links every agent to its newest run and its newest failure, on the page and
in its JSON twin (`latest_run`, `latest_failure`), kept on the agent at ingest so a page reads
no tasks. The links open the run pages; names show as every task name does, content never."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any
from urllib.parse import quote

import httpx
from bench_core.domain.ranking import Qualification

from tests.conftest import RunningServer
from tests.factories import batch, day_old, ev, ts
from tests.http.surfaces_data import HOSTILE, fetch
from tests.http.test_ingest_http import new_login, post
from tests.http.test_otlp_http import Trace, body
from tests.http.test_otlp_http import post as post_otlp

LATEST_LINK = re.compile(r'<a href="([^"]+)" data-latest="(run|failure)"')


def run(task_id: str, at_ms: int, name: str, status: str = "success") -> list[dict[str, Any]]:
    return [ev("task.start", task_id, ts=ts(at_ms), name=name, input={"secret": "in-" + task_id}),
            ev("task.end", task_id, ts=ts(at_ms + 500), status=status,
               output="secret-out-" + task_id, duration_ms=500)]


def seed(server: RunningServer, *runs: list[dict[str, Any]], slug: str = "agent") -> tuple[str, str]:
    """An agent (its content hidden, as a first batch makes it) with `runs`, findable by the
    framework tag returned; made two days ago, with earlier successful runs before `runs` as
    many as it takes to rank (`ranking.Qualification`)."""
    login, tag = new_login(), "lr-" + uuid.uuid4().hex[:8]
    server.store.agents.create_agent(day_old(login, slug))
    earlier = [run(f"earlier-{i}", 10 * i, "earlier") for i in range(Qualification().min_runs)]
    events = [e for r in (*earlier[len(runs):], *runs) for e in r]
    response = post(server, batch(slug, events, framework=tag), server.create_key(login))
    assert response.status_code == 200, response.text
    return login, tag


def board_row(server: RunningServer, tag: str) -> dict[str, Any]:
    (row,) = httpx.get(f"{server.url}/api/leaderboard", params={"q": tag}).json()["agents"]
    return row


def test_the_json_names_the_newest_run_and_the_newest_failure(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, tag = seed(server, run("plan-1", 1_000, "plan"),
                      run("fetch-2", 2_000, "fetch docs", "failed"), run("answer-3", 3_000, "answer"))
    row = board_row(server, tag)
    assert row["latest_run"] == {"run_id": "answer-3", "name": "answer", "status": "success",
                                 "at": ts(3_000), "url": f"/u/{login}/agent/runs/answer-3"}
    assert row["latest_failure"] == {"run_id": "fetch-2", "name": "fetch docs",
                                     "status": "failed", "at": ts(2_000),
                                     "url": f"/u/{login}/agent/runs/fetch-2"}
    assert server.get(f"/api/agents/{login}/agent")["latest_run"] == row["latest_run"]
    assert "secret" not in httpx.get(f"{server.url}/api/leaderboard", params={"q": tag}).text


def test_the_row_links_to_both_runs_and_the_links_open_their_pages(
        bench_server: RunningServer) -> None:
    login, tag = seed(bench_server, run("fetch-2", 2_000, "fetch docs", "failed"),
                      run("answer-3", 3_000, "answer"))
    row = board_row(bench_server, tag)
    page = fetch(bench_server, f"/leaderboard?q={tag}")
    assert page.status_code == 200
    links = {kind: html.unescape(href) for href, kind in LATEST_LINK.findall(page.text)}
    assert links == {"run": row["latest_run"]["url"], "failure": row["latest_failure"]["url"]}
    assert "secret" not in page.text
    for kind, name in (("run", "answer"), ("failure", "fetch docs")):
        opened = fetch(bench_server, links[kind])
        assert opened.status_code == 200, links[kind]
        assert "data-run-head" in opened.text
        assert re.search(rf"<h1>.*{name}.*</h1>", opened.text), kind


def test_a_newest_run_that_failed_is_linked_once(bench_server: RunningServer) -> None:
    _, tag = seed(bench_server, run("ok-1", 1_000, "ok"), run("boom-2", 2_000, "boom", "failed"))
    row = board_row(bench_server, tag)
    assert row["latest_run"] == row["latest_failure"]
    page = fetch(bench_server, f"/leaderboard?q={tag}").text
    assert [kind for _, kind in LATEST_LINK.findall(page)] == ["run"]
    assert 'aria-label="failed"' in page


def test_an_agent_with_no_failure_has_no_failure_link(bench_server: RunningServer) -> None:
    _, tag = seed(bench_server, run("ok-1", 1_000, "ok"))
    assert board_row(bench_server, tag)["latest_failure"] is None
    page = fetch(bench_server, f"/leaderboard?q={tag}").text
    assert [kind for _, kind in LATEST_LINK.findall(page)] == ["run"]


def test_a_run_name_is_shown_as_text_and_an_odd_run_id_still_opens(
        bench_server: RunningServer) -> None:
    odd = "run #1 ä?&x=1"
    login, tag = seed(bench_server, run(odd, 1_000, HOSTILE))
    row = board_row(bench_server, tag)
    assert row["latest_run"]["name"] == HOSTILE
    assert row["latest_run"]["url"] == f"/u/{login}/agent/runs/{quote(odd, safe='')}"
    page = fetch(bench_server, f"/leaderboard?q={tag}").text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    (href, _), = LATEST_LINK.findall(page)
    opened = fetch(bench_server, html.unescape(href))
    assert opened.status_code == 200 and "data-run-head" in opened.text


def test_an_otlp_root_span_is_the_newest_run_and_a_failed_child_span_no_failure(
        bench_server: RunningServer) -> None:
    login = new_login()
    trace = Trace()
    response = post_otlp(bench_server, body(*(trace.span(n) for n in ("chat", "tool", "agent"))),
                         bench_server.create_key(login))
    assert response.status_code == 200, response.text
    agent = bench_server.get(f"/api/agents/{login}/weather-bot")
    root = trace.task("agent")
    assert agent["latest_run"]["run_id"] == root
    assert (agent["latest_run"]["name"], agent["latest_run"]["status"]) == (
        "invoke_agent weather", "success")
    assert agent["latest_failure"] is None
    assert fetch(bench_server, agent["latest_run"]["url"]).status_code == 200
