"""The runs list exported, `/api/agents/{login}/{slug}/runs.jsonl` and `runs.csv`, over real
HTTP on both stores: the list's filters, spans on request, streamed a page at a time, and
the privacy gate (a visitor's export holds no hidden content)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.domain.models import AgentRef
from bench_core.domain.privacy import HIDDEN
from bench_core.reads import export

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.feedback_support import a_run, give
from tests.http.run_diff_data import SECRETS, seed_two_runs, span_reads
from tests.http.runs_data import tree_run_events
from tests.http.surfaces_data import seed_agent
from tests.http.test_ingest_http import new_login, post


def exported(server: RunningServer, path: str, form: str, key: str | None = None,
             **params: Any) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.get(f"{server.url}/api/agents/{path}/runs.{form}", params=params,
                     headers=headers, timeout=60)


def lines(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"] == "application/x-ndjson"
    return [json.loads(line) for line in response.text.splitlines()]


def rows(response: httpx.Response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.text)))


def test_the_export_keeps_the_lists_filters_in_both_formats(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    agent = seed_agent(server, runs=12, failures=3)
    everything = lines(exported(server, agent.path, "jsonl"))
    assert [r["record"] for r in everything] == ["run"] * 12 + ["end"]
    assert everything[-1] == {"record": "end", "runs": 12, "more": False,
                              "limit": export.MAX_RUNS}
    listed = server.get(f"/api/agents/{agent.path}/runs", limit=50)["runs"]
    assert [r["run_id"] for r in everything[:-1]] == [r["run_id"] for r in listed]
    failed = lines(exported(server, agent.path, "jsonl", status="failed"))
    assert [r["status"] for r in failed[:-1]] == ["failed"] * 3
    assert failed[0]["output"].startswith("secret-output-")  # shown by its owner's choice
    table = rows(exported(server, agent.path, "csv", status="failed"))
    assert tuple(table[0]) == export.COLUMNS
    assert [r["run_id"] for r in table] == [r["run_id"] for r in failed[:-1]]
    assert {r["record"] for r in table} == {"run"}
    assert table[0]["duration_ms"] == str(failed[0]["duration_ms"])
    assert json.loads(table[0]["input"]) == failed[0]["input"]
    first_two = lines(exported(server, agent.path, "jsonl", limit=2))
    assert len(first_two) == 3 and first_two[-1]["more"] is True


def test_spans_follow_each_run_when_asked_for(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    records = lines(exported(server, runs.path, "jsonl", runs.key, spans=1))
    assert [(r["record"], r["run_id"]) for r in records[:2]] == [("run", "run-b"),
                                                                ("span", "run-b")]
    spans_b = [r for r in records if r["record"] == "span" and r["run_id"] == "run-b"]
    assert [s["name"] for s in spans_b] == ["plan", "search", "fetch page 1", "fetch page 2",
                                            "parse", "fetch page 3", "answer"]
    answer = next(s for s in spans_b if s["name"] == "answer")
    assert answer["output"] == "secret-answer-b" and answer["model"] == "gpt-4o"
    assert answer["evidence"]["input_tokens"] == 1500
    table = rows(exported(server, runs.path, "csv", runs.key, spans=1))
    assert [r["record"] for r in table].count("span") == 7 + 7
    parse = next(r for r in table if r["task_id"] == "run-a-parse")
    assert (parse["run_id"], parse["parent_id"], parse["status"]) == ("run-a", "run-a-fetch-2",
                                                                      "failed")
    assert next(r for r in table if r["task_id"] == "run-b-answer")["input_tokens"] == "1500"


def test_a_visitor_exports_no_hidden_content(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)  # made by its first batch: inputs and outputs hidden
    for form in ("jsonl", "csv"):
        owner = exported(server, runs.path, form, runs.key, spans=1).text
        assert all(secret in owner for secret in SECRETS), form
        for key in (None, server.create_key(runs.login, "another-agent")):
            text = exported(server, runs.path, form, key, spans=1).text
            assert not any(secret in text for secret in SECRETS), (form, text[:1000])
            assert HIDDEN in text and "gpt-4o-mini" in text  # usage stays public
    # the owner's search of content is the owner's: a visitor's `q` looks at names only
    assert len(lines(exported(server, runs.path, "jsonl", runs.key, q="secret-final"))) == 3
    assert len(lines(exported(server, runs.path, "jsonl", q="secret-final"))) == 1


def test_refusals_are_json_errors_before_anything_is_streamed(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = seed_two_runs(server)
    bad = exported(server, runs.path, "jsonl", runs.key, status="nope")
    assert bad.status_code == 400 and "unknown status" in bad.json()["error"]
    assert exported(server, runs.path, "xml", runs.key).status_code == 422
    server.store.agents.update_agent(AgentRef(runs.login, runs.slug), {"visibility": "private"})
    hidden = exported(server, runs.path, "csv")
    assert hidden.status_code == 404 and hidden.json()["error"] == "agent not found"
    assert exported(server, runs.path, "csv", runs.key).status_code == 200


def test_a_formula_in_a_name_stays_text_in_the_csv(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    events = task_events("formula-run", '=HYPERLINK("http://evil.example","x")')
    assert post(server, batch("sheet", events), key).status_code == 200
    table = rows(exported(server, f"{login}/sheet", "csv", key))
    assert table[0]["name"] == "'=HYPERLINK(\"http://evil.example\",\"x\")"


def test_a_big_run_is_exported_a_page_of_spans_at_a_time(
        server_on_each_store: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    assert post(server, batch("big", tree_run_events("big", 250)), key).status_code == 200
    read = span_reads(server, monkeypatch)
    with httpx.stream("GET", f"{server.url}/api/agents/{login}/big/runs.jsonl",
                      params={"spans": 1}, headers={"X-Bench-Key": key}) as response:
        assert response.headers.get("transfer-encoding") == "chunked"
        records = [json.loads(line) for line in response.iter_lines()]
    assert [r["record"] for r in records] == ["run"] + ["span"] * 249 + ["end"]
    assert len({r["task_id"] for r in records[1:-1]}) == 249
    assert read == [100, 100, 100]


def test_an_export_gives_its_turn_back_even_when_abandoned(tmp_path: Path) -> None:
    with serving(tmp_path, store="memory", heavy_reads=1, heavy_read_wait_s=0.5) as server:
        agent = seed_agent(server, runs=30, failures=0)
        for _ in range(3):
            with httpx.stream("GET", f"{server.url}/api/agents/{agent.path}/runs.csv") as r:
                assert r.status_code == 200
                next(r.iter_bytes())  # the header, then the reader goes away
        assert rows(exported(server, agent.path, "csv"))[0]["record"] == "run"
        assert httpx.get(f"{server.url}/api/agents/{agent.path}/runs").status_code == 200


def test_the_runs_list_links_the_export_with_its_filters(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    agent = seed_agent(server, runs=4, failures=1)
    html = httpx.get(f"{server.url}/u/{agent.path}/runs", params={"status": "failed"}).text
    href = f"/api/agents/{agent.path}/runs.csv?status=failed"
    assert f'href="{href}" data-export="csv"' in html
    assert [r["status"] for r in rows(httpx.get(server.url + href))] == ["failed"]


def test_feedback_and_labels_export_with_their_runs(server_on_each_store: RunningServer) -> None:
    """JSON Lines: each run's feedback as the run's JSON shows it (a comment is content,
    hidden from a visitor while the agent hides content); CSV: its count, mean and labels."""
    server = server_on_each_store
    login, slug = new_login(), "exported"
    owner_key = server.create_key(login)
    labelled, quiet = a_run(server, owner_key, slug), a_run(server, owner_key, slug)
    path = f"{login}/{slug}"
    for body in ({"thumbs": "up", "label": "correct", "comment": "secret-praise"},
                 {"score": 0.25, "label": "wrong-tool"}, {"score": 0.5, "label": "correct"}):
        assert give(server, path, labelled, body, owner_key).status_code == 201

    owned = {r["run_id"]: r for r in lines(exported(server, path, "jsonl", owner_key))
             if r["record"] == "run"}
    shown = owned[labelled]["feedback"]
    assert (shown["count"], shown["up"], shown["down"]) == (3, 1, 0)
    assert shown["mean_score"] == pytest.approx((1 + 0.25 + 0.5) / 3)
    assert "secret-praise" in [f["comment"] for f in shown["items"]]
    assert owned[quiet]["feedback"] == {"count": 0, "mean_score": None, "up": 0, "down": 0,
                                        "items": []}
    visitor = exported(server, path, "jsonl").text
    assert "secret-praise" not in visitor and HIDDEN in visitor

    table = {r["run_id"]: r for r in rows(exported(server, path, "csv", owner_key))}
    assert table[labelled]["feedback_count"] == "3"
    assert float(table[labelled]["feedback_mean_score"]) == pytest.approx(0.5833, abs=1e-4)
    assert set(table[labelled]["feedback_labels"].split(";")) == {"correct", "wrong-tool"}
    assert (table[quiet]["feedback_count"], table[quiet]["feedback_labels"]) == ("0", "")
    assert "secret-praise" not in exported(server, path, "csv", owner_key).text
