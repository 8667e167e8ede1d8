"""The agents of one account, over real HTTP on both stores: past `max_agents_per_account` a
new agent is refused with 403 naming the limit, whichever way it would have come to exist
(a first batch, an OTLP service name, a benchmark run, the dashboard); an OTLP request's
spans of refused agents are rejected in `partialSuccess` and the rest stored."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.domain.models import AgentRef
from bench_core.settings import Limits

from tests.benchmark_support import run_body
from tests.conftest import RunningServer, serving
from tests.factories import batch, ev, task_events
from tests.http.accounts_support import Browser
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0, attributes
from tests.http.test_otlp_http import post as post_traces

LIMIT = 2
LIMIT_TEXT = f"has {LIMIT} agents, the most one account may have"


@pytest.fixture(params=["sqlite", "dynamodb"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    limits = Limits(max_agents_per_account=LIMIT)
    if request.param == "sqlite":
        with serving(tmp_path, limits=limits) as running:
            yield running
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store(max_agents_per_account=LIMIT) as store, \
            serving(tmp_path, over=store, store="dynamodb", limits=limits) as running:
        yield running


def owner_with_full_account(server: RunningServer) -> tuple[str, str]:
    login = new_login()
    key = server.create_key(login)
    for slug in ("one", "two"):
        assert post_batch(server, batch(slug, task_events("t")), key).status_code == 200
    return login, key


def test_a_first_batch_past_the_limit_is_403_naming_it(server: RunningServer) -> None:
    login, key = owner_with_full_account(server)
    r = post_batch(server, batch("three", task_events("t")), key)
    assert r.status_code == 403, r.text
    assert LIMIT_TEXT in r.json()["error"] and r.json()["detail"][0]["loc"] == ["agent"]
    assert server.store.agents.get_agent(AgentRef(login, "three")) is None
    assert post_batch(server, batch("one", [ev("custom")]), key).status_code == 200


def test_one_otlp_request_makes_agents_up_to_the_limit_and_rejects_the_rest(
        server: RunningServer) -> None:
    login = new_login()
    key = server.create_key(login)

    def resource(service: str) -> dict[str, Any]:
        return {"resource": {"attributes": attributes({"service.name": service})},
                "scopeSpans": [{"spans": [
                    {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(),
                     "name": "run", "startTimeUnixNano": str(T0),
                     "endTimeUnixNano": str(T0 + 10**9)} for _ in range(3)]}]}

    services = [f"svc-{i}" for i in range(5)]
    r = post_traces(server, json.dumps(
        {"resourceSpans": [resource(s) for s in services]}).encode(), key)
    assert r.status_code == 200, r.text
    partial = r.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "9" and LIMIT_TEXT in partial["errorMessage"]
    made = [s for s in services if server.store.agents.get_agent(AgentRef(login, s)) is not None]
    assert made == services[:LIMIT]
    assert all(server.get(f"/api/agents/{login}/{s}")["runs"] == 3 for s in made)


def test_a_benchmark_run_for_an_agent_past_the_limit_is_403_and_not_stored(
        server: RunningServer) -> None:
    login, key = owner_with_full_account(server)
    r = httpx.post(f"{server.url}/api/benchmarks/grounded-research-v1/runs", timeout=30,
                   json=run_body("benchmarked"), headers={"X-Bench-Key": key})
    assert r.status_code == 403 and LIMIT_TEXT in r.json()["error"], r.text
    assert server.store.agents.get_agent(AgentRef(login, "benchmarked")) is None
    assert server.store.benchmarks.benchmark_runs_of(AgentRef(login, "benchmarked"), 10) == []


def test_the_dashboard_says_why_it_cannot_set_up_one_more_agent(tmp_path: Path) -> None:
    """On the embedded store, where local sign-in is (the store's `create_agent` keeps the
    limit on both: tests/contract/store/test_agent_limit.py)."""
    with serving(tmp_path, store="memory", limits=Limits(max_agents_per_account=LIMIT)) as server:
        browser = Browser(server)
        login = browser.sign_in()
        for slug in ("one", "two"):
            browser.new_agent(slug)
        page = browser.post("/dashboard/new", {"slug": "three"}, token_from="/dashboard/new")
        assert page.status_code == 400 and LIMIT_TEXT in page.text
        assert server.store.agents.get_agent(AgentRef(login, "three")) is None


def test_batches_arriving_together_are_refused_or_stored_each_on_its_own(
        server: RunningServer) -> None:
    """Concurrent batches may be written in one transaction (the local server's group commit,
    `ingest/group_commit.py`): the refused ones get their own 403, the others are stored."""
    login, key = owner_with_full_account(server)
    slugs = ["one", "three", "two", "one", "four", "two"]
    with ThreadPoolExecutor(len(slugs)) as pool:
        answers = list(pool.map(
            lambda n: post_batch(server, batch(slugs[n], task_events(f"c{n}")), key),
            range(len(slugs))))
    assert [a.status_code for a in answers] == [200, 403, 200, 200, 403, 200]
    assert all(LIMIT_TEXT in a.json()["error"] for a in answers if a.status_code == 403)
    for slug in ("one", "two"):
        assert server.store.agents.get_agent(AgentRef(login, slug)).stats.runs == 3
    assert server.store.agents.get_agent(AgentRef(login, "three")) is None
