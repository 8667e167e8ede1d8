"""Who ranks, over real HTTP on both stores: agents made in bulk by one request do not fill the
leaderboard; an agent ranks once it has a few runs and its first batch is a day old, by
Bench's clock (`bench_core.domain.ranking.Qualification`), and a deployment sets both."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
from bench_core.domain.ranking import Qualification

from tests.conftest import RunningServer, serving
from tests.factories import batch, day_old, task_events, ts
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0, attributes
from tests.http.test_otlp_http import post as post_traces

RULE = Qualification()


def board(server: RunningServer, q: str) -> list[str]:
    answer = httpx.get(f"{server.url}/api/leaderboard", params={"q": q}, timeout=30).json()
    return [a["slug"] for a in answer["agents"]]


def test_agents_one_request_makes_rank_nowhere_and_a_day_old_agent_does(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    runs = 2 * RULE.min_runs
    resources = [{"resource": {"attributes": attributes({"service.name": f"bulk-{i}"})},
                  "scopeSpans": [{"spans": [
                      {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(),
                       "name": "run", "startTimeUnixNano": str(T0 - n * 86_400 * 10**9),
                       "endTimeUnixNano": str(T0 - n * 86_400 * 10**9 + 10**9)}
                      for n in range(runs)]}]} for i in range(20)]
    r = post_traces(server, json.dumps({"resourceSpans": resources}).encode(), key)
    assert r.status_code == 200 and "partialSuccess" not in r.json(), r.text
    assert server.get(f"/api/agents/{login}/bulk-0")["runs"] == runs
    fresh = [e for n in range(runs) for e in task_events(f"t{n}")]
    assert post_batch(server, batch("fresh", fresh), key).status_code == 200
    assert board(server, login) == []
    server.store.agents.create_agent(day_old(login, "seasoned"))
    few = [e for n in range(RULE.min_runs - 1) for e in task_events(f"s{n}")]
    assert post_batch(server, batch("seasoned", few), key).status_code == 200
    assert board(server, login) == []
    last = [dict(e, ts=ts()) for e in task_events("last")]
    assert post_batch(server, batch("seasoned", last), key).status_code == 200
    assert board(server, login) == ["seasoned"]
    page = httpx.get(f"{server.url}/leaderboard", timeout=30).text
    assert f"A new agent ranks once it has {RULE.rule}" in page


def test_a_deployment_chooses_when_new_agents_rank(tmp_path: Path) -> None:
    eager = Qualification(min_runs=1, min_age_hours=0)
    with serving(tmp_path, store="memory", ranking=eager) as server:
        login = new_login()
        key = server.create_key(login)
        assert post_batch(server, batch("eager", task_events("t")), key).status_code == 200
        assert board(server, login) == ["eager"]
        assert f"A new agent ranks once it has {eager.rule}" in httpx.get(
            f"{server.url}/leaderboard", timeout=30).text
