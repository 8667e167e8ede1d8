"""The runs list over real HTTP on each store (`/u/{login}/{slug}/runs` and its JSON twin):
every filter and sort is a query parameter of both, a bad value is a 400 naming its parameter,
and a filter that is not the owner's reads no content."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import RunningServer
from tests.factories import batch
from tests.http.surfaces_data import fetch
from tests.http.test_ingest_http import new_login, post


def _event(kind: str, task_id: str, at: str, **fields: Any) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "kind": kind, "ts": at, "task_id": task_id, **fields}


def _run(run_id: str, name: str, day: str, *, status: str = "success", duration_ms: int,
         cost: float = 0.0, data: Any = None, child: str, model: str | None = None,
         provider: str = "openai", tokens: tuple[int, int] = (0, 0),
         output: str = "ok") -> list[dict[str, Any]]:
    events = [_event("task.start", run_id, f"{day}T10:00:00.000Z", name=name,
                     input={"q": f"question {run_id}"}),
              _event("task.start", f"{run_id}-c", f"{day}T10:00:00.001Z", name=child,
                     parent_task_id=run_id)]
    if model:
        events.append(_event("task.log", f"{run_id}-c", f"{day}T10:00:00.002Z", data={
            "label": "evidence", "provider": provider, "model": model,
            "input_tokens": tokens[0], "output_tokens": tokens[1]}))
    return [*events,
            _event("task.end", f"{run_id}-c", f"{day}T10:00:00.003Z", status="success",
                   output=output, duration_ms=2),
            _event("task.end", run_id, f"{day}T10:00:02.000Z", status=status, output="done",
                   duration_ms=duration_ms, cost_usd=cost, data=data)]


class Seeded:
    def __init__(self, server: RunningServer) -> None:
        self.server = server
        self.login = new_login()
        self.key = server.create_key(self.login)
        self.path = f"{self.login}/lister"
        events = [
            *_run("r1", "plan", "2026-12-01", duration_ms=50, cost=0.5,
                  data={"env": "prod", "tags": ["beta", "eu"]}, child="llm",
                  model="gpt-4o-mini", tokens=(100, 20), output="the capital of Portugal"),
            *_run("r2", "fetch", "2026-12-02", status="failed", duration_ms=900,
                  data={"env": "dev"}, child="llm", model="claude-3-5-sonnet",
                  provider="anthropic", tokens=(1000, 500)),
            *_run("r3", "search", "2026-12-03", duration_ms=2000, child="Portugal lookup")]
        assert post(server, batch("lister", events), self.key).status_code == 200

    def api(self, owner: bool = False, **params: Any) -> httpx.Response:
        headers = {"X-Bench-Key": self.key} if owner else {}
        return httpx.get(f"{self.server.url}/api/agents/{self.path}/runs", params=params,
                         headers=headers, timeout=30)

    def names(self, owner: bool = False, **params: Any) -> list[str]:
        answer = self.api(owner, **params)
        assert answer.status_code == 200, answer.text
        return [r["name"] for r in answer.json()["runs"]]

    def page_names(self, query: str, owner: bool = False) -> list[str]:
        page = fetch(self.server, f"/u/{self.path}/runs?{query}", self.key if owner else None)
        assert page.status_code == 200, page.text
        return re.findall(r'class="run-link"[^>]*>\s*<span class="dot[^>]*></span>\s*'
                          r'<span class="name">([^<]+)</span>', page.text)


FILTERED = [
    ({}, ["search", "fetch", "plan"]),
    ({"status": "failed"}, ["fetch"]),
    ({"model": "gpt-4o-mini"}, ["plan"]),
    ({"provider": "anthropic"}, ["fetch"]),
    ({"since": "2026-12-02"}, ["search", "fetch"]),
    ({"until": "2026-12-02"}, ["fetch", "plan"]),
    ({"since": "2026-12-02T00:00:00Z", "until": "2026-12-02T23:59:59Z"}, ["fetch"]),
    ({"min_cost": "0.1"}, ["plan"]),
    ({"max_cost": "0"}, ["search"]),
    ({"min_tokens": "1000"}, ["fetch"]),
    ({"max_tokens": "500"}, ["plan"]),
    ({"min_ms": "100", "max_ms": "1000"}, ["fetch"]),
    ({"q": "portugal"}, ["search"]),
    ({"q": "LOOKUP", "status": "success"}, ["search"]),
    ({"sort": "duration"}, ["search", "fetch", "plan"]),
    ({"sort": "duration", "order": "asc"}, ["plan", "fetch", "search"]),
    ({"sort": "tokens"}, ["fetch", "plan", "search"]),
    ({"sort": "cost"}, ["plan", "fetch", "search"]),
    ({"order": "asc"}, ["plan", "fetch", "search"]),
]


def test_every_filter_and_sort_is_a_parameter_of_the_json_and_the_page(
        server_on_each_store: RunningServer) -> None:
    seeded = Seeded(server_on_each_store)
    for params, expected in FILTERED:
        assert seeded.names(**params) == expected, params
        query = httpx.QueryParams(params)
        assert seeded.page_names(str(query)) == expected, params
    page = fetch(seeded.server, f"/u/{seeded.path}/runs?model=gpt-4o-mini&sort=cost").text
    assert f'href="/api/agents/{seeded.path}/runs?model=gpt-4o-mini&amp;sort=cost"' in page
    assert 'name="model" type="text" value="gpt-4o-mini"' in page
    assert 'data-sort="cost" aria-current="true" data-order="desc"' in page
    assert f'href="/u/{seeded.path}/runs?model=gpt-4o-mini&amp;sort=cost&amp;order=asc"' in page


def test_pages_of_a_sorted_filtered_list_keep_their_filters(
        server_on_each_store: RunningServer) -> None:
    seeded = Seeded(server_on_each_store)
    names, cursor = [], None
    while True:
        params = {"sort": "duration", "order": "asc", "max_ms": "5000", "limit": 1}
        answer = seeded.api(**params, **({"cursor": cursor} if cursor else {})).json()
        names += [r["name"] for r in answer["runs"]]
        if (cursor := answer["next_cursor"]) is None:
            break
    assert names == ["plan", "fetch", "search"]
    page = fetch(seeded.server, f"/u/{seeded.path}/runs?sort=duration&max_ms=5000").text
    assert re.search(r'href="[^"]*runs\?sort=duration&amp;max_ms=5000&amp;cursor=', page) is None
    assert "rel=\"next\"" not in page  # three runs: one page of the page's 50


@pytest.mark.parametrize(("params", "parameter"), [
    ({"status": "nope"}, "status"), ({"sort": "name"}, "sort"), ({"order": "up"}, "order"),
    ({"min_cost": "cheap"}, "min_cost"), ({"max_cost": "-1"}, "max_cost"),
    ({"min_tokens": "nan"}, "min_tokens"), ({"max_ms": "inf"}, "max_ms"),
    ({"min_score": "1.5"}, "min_score"), ({"score_below": "2"}, "score_below"),
    ({"min_ms": "10", "max_ms": "5"}, "max_ms"), ({"since": "yesterday"}, "since"),
    ({"since": "2026-12-03", "until": "2026-12-01"}, "until"), ({"meta": "env"}, "meta"),
    ({"sort": "cost", "cursor": "bm9wZQ"}, "cursor"),
])
def test_a_bad_filter_value_is_a_400_naming_its_parameter(
        bench_server: RunningServer, params: dict[str, str], parameter: str) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    assert post(bench_server, batch("any", _run("r", "x", "2026-12-01", duration_ms=1,
                                                  child="c")), key).status_code == 200
    api = f"{bench_server.url}/api/agents/{login}/any/runs"
    answer = httpx.get(api, params=params, timeout=30)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["error"] and body["detail"][0]["loc"] == ["query", parameter]
    page = fetch(bench_server, f"/u/{login}/any/runs?{httpx.QueryParams(params)}")
    assert page.status_code == 400


def test_a_visitor_never_searches_or_filters_by_content(
        server_on_each_store: RunningServer) -> None:
    """The agent hides its inputs and outputs (as every agent starts): the owner's search
    reads them and the whole metadata; anyone else's reads names and public metadata only."""
    seeded = Seeded(server_on_each_store)
    assert seeded.names(q="portugal") == ["search"]
    assert seeded.names(owner=True, q="portugal") == ["search", "plan"]
    assert seeded.names(q="question r2") == []
    assert seeded.names(owner=True, q="question r2") == ["fetch"]
    for params in ({"meta": "env=prod"}, {"tag": "beta"}):
        assert seeded.names(**params) == [], params
        assert seeded.names(owner=True, **params) == ["plan"], params
    assert seeded.names(owner=True, meta=["env=prod", "env=dev"]) == []
    visitor = seeded.api(q="portugal").json()
    assert visitor["content_searched"] is False
    assert "capital" not in seeded.api(q="portugal").text
    assert seeded.page_names("q=capital") == []
    assert seeded.page_names("q=capital", owner=True) == ["plan"]


def test_a_search_of_spans_says_how_far_it_looked_where_the_store_bounds_it(
        server_on_each_store: RunningServer) -> None:
    """DynamoDB reads each run's spans to search them (bounded a page); SQLite's index answers
    the whole list."""
    seeded = Seeded(server_on_each_store)
    answer = seeded.api(q="lookup").json()
    if seeded.server.services.settings.store == "dynamodb":
        assert answer["searched"] == {"runs_examined": 3, "looked_back_to": None}
        page = fetch(seeded.server, f"/u/{seeded.path}/runs?q=lookup").text
        assert "Looked through 3 runs." in page
    else:
        assert answer["searched"] is None
    assert seeded.api().json()["searched"] is None
