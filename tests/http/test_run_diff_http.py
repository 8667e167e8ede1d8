"""The run diff `/u/{login}/{slug}/runs/{a}/vs/{b}` and its JSON twin over real HTTP on both
stores: spans matched by path, what changed, the deltas, the first divergence linked, and the
privacy gate (a visitor's diff holds no hidden content and does not tell whether it changed)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from bench_core.domain.models import AgentRef
from bench_core.reads import run_diff

from tests.conftest import RunningServer
from tests.factories import batch
from tests.http.run_diff_data import SECRETS, TwoRuns, run_events, seed_two_runs, span_reads
from tests.http.runs_data import tree_run_events
from tests.http.surfaces_data import HOSTILE, fetch, show_content
from tests.http.test_ingest_http import new_login, post


def diff_json(server: RunningServer, runs: TwoRuns, key: str | None = None,
              a: str | None = None, b: str | None = None) -> dict[str, Any]:
    return server.get(f"/api/agents/{runs.path}/runs/{a or runs.a}/vs/{b or runs.b}", key)


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in answer["rows"]}


def test_the_diff_matches_spans_by_path_and_names_what_changed(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    answer = diff_json(server, runs, runs.key)
    assert [(r["kind"], r["depth"], r["name"]) for r in answer["rows"]] == [
        ("changed", 0, "research"), ("same", 1, "plan"), ("same", 1, "search"),
        ("same", 2, "fetch page 1"), ("same", 2, "fetch page 2"), ("changed", 3, "parse"),
        ("added", 2, "fetch page 3"), ("changed", 1, "answer"), ("removed", 1, "review")]
    rows = by_name(answer)
    assert rows["parse"]["changes"] == ["status", "output"]
    assert (rows["parse"]["a"]["status"], rows["parse"]["b"]["status"]) == ("failed", "success")
    assert rows["answer"]["changes"] == ["cost", "tokens", "model", "output"]
    assert (rows["answer"]["a"]["model"], rows["answer"]["b"]["model"]) == ("gpt-4o-mini",
                                                                            "gpt-4o")
    assert rows["fetch page 3"]["a"] is None and rows["review"]["b"] is None
    assert rows["plan"]["a"]["task_id"] == "run-a-plan"
    assert rows["plan"]["b"]["task_id"] == "run-b-plan"
    # the parse that failed is where they part, not the root whose numbers sum it
    assert answer["first_divergence"] == 5
    assert answer["counts"] == {"same": 4, "changed": 3, "added": 1, "removed": 1}
    deltas = answer["deltas"]
    assert deltas["duration_ms"] == 1000
    assert deltas["headline_cost_usd"] == pytest.approx(0.001)
    assert (deltas["input_tokens"], deltas["output_tokens"]) == (300, 0)
    assert (deltas["span_count"], deltas["failed_spans"]) == (0, -1)
    assert answer["cut"] is False
    # the owner sees what changed in the outputs
    assert rows["answer"]["a"]["output"] == '"secret-answer-a"'
    assert rows["answer"]["b"]["output"] == '"secret-answer-b"'


def test_the_page_draws_the_diff_and_links_the_first_divergence(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    show_content(server, runs.login, runs.slug)
    response = fetch(server, f"/u/{runs.path}/runs/{runs.a}/vs/{runs.b}")
    assert response.status_code == 200, response.text[:300]
    html = response.text
    assert 'href="#d-5" data-first-divergence>parse</a>' in html
    assert '<li id="d-5" class="diff-row changed d3 first"' in html
    assert 'data-change="status"' in html and 'data-kind="added" data-name="fetch page 3"' in html
    assert 'data-kind="removed" data-name="review"' in html
    assert f'href="/u/{runs.path}/runs/{runs.b}?span=run-b-parse#span-run-b-parse"' in html
    assert '<span data-delta="duration_ms">+1 s</span>' in html
    assert '<span data-delta="failed_spans">−1</span>' in html
    assert "&#34;secret-answer-b&#34;" in html  # shown content, escaped


def test_a_visitor_sees_no_hidden_content_and_no_sign_that_it_changed(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)  # made by its first batch: inputs and outputs hidden
    answer = diff_json(server, runs)
    rows = by_name(answer)
    assert rows["answer"]["changes"] == ["cost", "tokens", "model"]
    assert rows["parse"]["changes"] == ["status"]
    assert answer["content_compared"] == {"inputs": False, "outputs": False}
    page = fetch(server, f"/u/{runs.path}/runs/{runs.a}/vs/{runs.b}").text
    assert "hidden by the owner and not compared" in page
    for text in (str(answer), page):
        assert not any(secret in text for secret in SECRETS), text[:2000]
    # an agent key of another agent of the same owner is a visitor too
    other = server.create_key(runs.login, "other")
    assert not any(s in str(diff_json(server, runs, other)) for s in SECRETS)


def test_runs_that_are_not_the_agents_or_not_runs_are_not_found(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    for a, b in ((runs.a, "no-such-run"), ("no-such-run", runs.b), (runs.a, "run-b-parse")):
        response = httpx.get(f"{server.url}/api/agents/{runs.path}/runs/{a}/vs/{b}",
                             headers={"X-Bench-Key": runs.key})
        assert response.status_code == 404, response.text
        assert response.json()["error"] == "run not found"
    server.store.agents.update_agent(AgentRef(runs.login, runs.slug), {"visibility": "private"})
    response = httpx.get(f"{server.url}/api/agents/{runs.path}/runs/{runs.a}/vs/{runs.b}")
    assert response.status_code == 404 and response.json()["error"] == "agent not found"
    assert fetch(server, f"/u/{runs.path}/runs/{runs.a}/vs/{runs.b}").status_code == 404


def test_a_big_run_is_compared_on_its_first_spans_and_the_page_says_so(
        server_on_each_store: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_on_each_store
    monkeypatch.setattr(run_diff, "DIFF_SPANS", 40)  # the server runs in this process
    login = new_login()
    key = server.create_key(login)
    for run_id in ("big-a", "big-b"):
        response = post(server, batch("big", tree_run_events(run_id, 61)), key)
        assert response.status_code == 200, response.text
    read = span_reads(server, monkeypatch)
    answer = server.get(f"/api/agents/{login}/big/runs/big-a/vs/big-b", key)
    assert answer["cut"] is True and answer["limit"] == 40
    assert answer["a"]["span_count"] == 61 and answer["a"]["compared_spans"] == 41
    assert len(answer["rows"]) == 41 and answer["first_divergence"] is None
    assert sum(read) <= 80 and max(read) <= 40  # bounded reads, never the whole run
    page = fetch(server, f"/u/{login}/big/runs/big-a/vs/big-b", key).text
    assert "Compared the first 40 spans of each run in start order: A has 61 spans" in page


def test_a_run_is_compared_with_the_previous_run_of_its_name(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    later = [*_renamed(run_events("run-other", 300_000, b=True), "other"),
             *run_events("run-c", 400_000, b=True)]
    assert post(server, batch(runs.slug, later), runs.key).status_code == 200
    base = f"{server.url}/u/{runs.path}/runs"

    def previous(run_id: str) -> httpx.Response:
        return httpx.get(f"{base}/{run_id}/vs-previous", headers={"X-Bench-Key": runs.key},
                         follow_redirects=False)

    assert previous("run-b").headers["location"] == f"/u/{runs.path}/runs/run-a/vs/run-b"
    assert previous("run-c").headers["location"] == f"/u/{runs.path}/runs/run-b/vs/run-c"
    first = previous("run-a")
    assert first.status_code == 404 and "no earlier run named research" in first.text
    assert previous("run-other").status_code == 404
    assert previous("run-b-parse").status_code == 404  # a span is not a run
    run_page = fetch(server, f"/u/{runs.path}/runs/run-c", runs.key).text
    assert f'href="/u/{runs.path}/runs/run-c/vs-previous"' in run_page


def _renamed(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The events with their root renamed."""
    root = events[0]["task_id"]
    return [{**e, "name": name} if e["task_id"] == root else e for e in events]


def test_names_that_are_markup_are_drawn_as_text(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    later = [{**e, "name": HOSTILE} if e["task_id"] == "run-c-review" else e
             for e in run_events("run-c", 400_000, b=False)]
    assert post(server, batch(runs.slug, later), runs.key).status_code == 200
    html = fetch(server, f"/u/{runs.path}/runs/{runs.b}/vs/run-c").text
    assert HOSTILE not in html and "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
