"""The read API and the owner's privacy settings, over real HTTP."""

from __future__ import annotations

import json

import httpx
import pytest
from bench_core.domain.privacy import HIDDEN

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.test_ingest_http import new_login, post


@pytest.fixture
def agent(bench_server: RunningServer) -> tuple[str, str, str]:
    """An owner with one agent holding a root task with a subtask, a failure and a custom event."""
    login = new_login()
    key = bench_server.create_key(login)
    child = task_events("c1", "fetch", parent="p1", cost=0.002, input={"url": "secret-in"},
                        output="secret-out")
    events = [ev("task.start", "p1", name="research", input={"q": "secret-in"}),
              *child,
              ev("task.log", "p1", name="research", data={"label": "found", "value": "x"}),
              ev("task.end", "p1", name="research", status="success", output="secret-out",
                 duration_ms=50, cost_usd=0.002, data={"note": "secret-meta"}),
              *task_events("f1", status="failed", output="secret-error"),
              ev("custom.thing", data={"k": "secret-data"})]
    assert post(bench_server, batch("agent", events), key).status_code == 200
    return login, "agent", key


def api(server: RunningServer, path: str, key: str | None = None, **params) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.get(server.url + path, headers=headers, params=params)


def test_events_are_newest_first_and_limited(bench_server: RunningServer, agent) -> None:
    login, slug, _ = agent
    events = api(bench_server, f"/api/agents/{login}/{slug}/events", limit=3).json()["events"]
    assert [e["kind"] for e in events] == ["custom.thing", "task.end", "task.start"]
    assert api(bench_server, f"/api/agents/{login}/{slug}/events", limit=0).status_code == 422
    assert api(bench_server, f"/api/agents/{login}/{slug}/events",
               limit=1001).status_code == 422


def test_tasks_list_runs_with_their_subtask_ids(bench_server: RunningServer, agent) -> None:
    login, slug, _ = agent
    body = api(bench_server, f"/api/agents/{login}/{slug}/tasks").json()
    assert [(t["task_id"], t["subtask_ids"]) for t in body["tasks"]] == [("f1", []),
                                                                         ("p1", ["c1"])]
    failed = api(bench_server, f"/api/agents/{login}/{slug}/tasks", status="failed").json()
    assert [t["task_id"] for t in failed["tasks"]] == ["f1"]
    children = api(bench_server, f"/api/agents/{login}/{slug}/tasks", parent="p1").json()
    assert [t["task_id"] for t in children["tasks"]] == ["c1"]
    page = api(bench_server, f"/api/agents/{login}/{slug}/tasks", limit=1).json()
    rest = api(bench_server, f"/api/agents/{login}/{slug}/tasks",
               cursor=page["next_cursor"]).json()
    assert [t["task_id"] for t in page["tasks"] + rest["tasks"]] == ["f1", "p1"]


@pytest.mark.parametrize("params, field", [({"status": "weird"}, "status"),
                                           ({"cursor": "!!!"}, "cursor")])
def test_bad_task_queries_are_400(bench_server: RunningServer, agent, params, field) -> None:
    login, slug, _ = agent
    r = api(bench_server, f"/api/agents/{login}/{slug}/tasks", **params)
    assert r.status_code == 400 and r.json()["detail"][0]["loc"] == ["query", field]


def test_one_task_with_its_events(bench_server: RunningServer, agent) -> None:
    login, slug, _ = agent
    task = api(bench_server, f"/api/agents/{login}/{slug}/tasks/p1").json()
    assert task["subtask_ids"] == ["c1"] and task["cost_usd"] == 0.002
    assert [e["kind"] for e in task["events"]] == ["task.start", "task.log", "task.end"]
    assert api(bench_server, f"/api/agents/{login}/{slug}/tasks/nope").status_code == 404


def test_unknown_agents_are_404_json(bench_server: RunningServer) -> None:
    for path in ("/api/agents/nobody/nothing", "/api/agents/bad login/x", "/nope"):
        r = api(bench_server, path)
        assert r.status_code == 404 and r.json()["error"]


def test_settings_need_the_owners_key(bench_server: RunningServer, agent) -> None:
    login, slug, key = agent
    path = f"{bench_server.url}/api/agents/{login}/{slug}"
    assert httpx.patch(path, json={"hide_inputs": False}).status_code == 401
    stranger = bench_server.create_key(new_login())
    r = httpx.patch(path, json={"hide_inputs": False}, headers={"X-Bench-Key": stranger})
    assert r.status_code == 404
    agent_key = bench_server.create_key(login, slug)
    r = httpx.patch(path, json={"hide_inputs": False}, headers={"X-Bench-Key": agent_key})
    assert r.status_code == 403
    r = httpx.patch(path, json={"visibility": "secret"}, headers={"X-Bench-Key": key})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "visibility"
    r = httpx.patch(path, json={"runs": 5}, headers={"X-Bench-Key": key})
    assert r.status_code == 422
    assert bench_server.get(f"/api/agents/{login}/{slug}")["hide_inputs"] is True, \
        "unchanged: hidden, as an agent made by its first batch starts"


def test_a_private_agent_is_not_found_for_anyone_but_its_owner(bench_server: RunningServer,
                                                               agent) -> None:
    login, slug, key = agent
    r = httpx.patch(f"{bench_server.url}/api/agents/{login}/{slug}",
                    json={"visibility": "private"}, headers={"X-Bench-Key": key})
    assert r.status_code == 200 and r.json()["visibility"] == "private"
    stranger = bench_server.create_key(new_login())
    for path in ("", "/events", "/tasks", "/tasks/p1"):
        for who in (None, stranger):
            assert api(bench_server, f"/api/agents/{login}/{slug}{path}", who).status_code == 404
        assert api(bench_server, f"/api/agents/{login}/{slug}{path}", key).status_code == 200


def test_hidden_inputs_and_outputs_never_reach_others(bench_server: RunningServer,
                                                      agent) -> None:
    login, slug, key = agent
    r = httpx.patch(f"{bench_server.url}/api/agents/{login}/{slug}",
                    json={"hide_inputs": True, "hide_outputs": True},
                    headers={"X-Bench-Key": key})
    assert r.status_code == 200
    base = f"/api/agents/{login}/{slug}"
    public = [api(bench_server, base + p).text
              for p in ("", "/events", "/tasks", "/tasks/p1", "/tasks/c1", "/tasks/f1")]
    for text in public:
        assert "secret" not in text and HIDDEN in text
    owner_view = api(bench_server, base + "/tasks/p1", key).json()
    assert owner_view["input"] == {"q": "secret-in"} and owner_view["output"] == "secret-out"


def test_a_bad_key_on_a_read_is_401_not_anonymous(bench_server: RunningServer, agent) -> None:
    login, slug, _ = agent
    r = api(bench_server, f"/api/agents/{login}/{slug}", "bk_" + "q" * 40)
    assert r.status_code == 401


def test_evidence_stays_visible_when_content_is_hidden(bench_server: RunningServer) -> None:
    login, slug = new_login(), "caller"
    key = bench_server.create_key(login)
    start, end = task_events("t1", "chat gpt-4o", input={"prompt": "secret-in"},
                             output="secret-out")
    record = {"label": "evidence", "provider": "openai", "model": "gpt-4o", "operation": "chat",
              "input_tokens": 1000, "output_tokens": 500, "cache_read_input_tokens": 200,
              "messages": "secret-smuggled"}
    assert post(bench_server, batch(slug, [start, ev("task.log", "t1", data=record), end]),
                key).status_code == 200
    base = f"/api/agents/{login}/{slug}"
    for hide in (False, True):
        r = httpx.patch(bench_server.url + base, json={"hide_inputs": hide, "hide_outputs": hide},
                        headers={"X-Bench-Key": key})
        assert r.status_code == 200
        listed = api(bench_server, base + "/tasks").json()["tasks"][0]
        recent = api(bench_server, base).json()["recent_tasks"][0]
        detail = api(bench_server, base + "/tasks/t1").json()
        for task in (listed, recent, detail):
            evidence = task["evidence"]
            assert (evidence["input_tokens"], evidence["output_tokens"], evidence["calls"]) == (
                1000, 500, 1)
            assert evidence["cost_usd"] == pytest.approx(0.00725)
            assert task["outputs_hidden"] is hide
        [shown] = detail["evidence"]["records"]
        assert (shown["provider"], shown["model"], shown["input_tokens"]) == ("openai", "gpt-4o",
                                                                              1000)
        assert shown["price_source"].startswith("bench price table")
        logged = next(e["data"] for e in detail["events"] if e["kind"] == "task.log")
        assert logged["model"] == "gpt-4o" and logged["cost_usd"] == pytest.approx(0.00725)
        assert ("secret" in json.dumps(detail)) is not hide
    owner_log = next(e["data"] for e in api(bench_server, base + "/tasks/t1", key).json()["events"]
                     if e["kind"] == "task.log")
    assert "messages" not in owner_log, "evidence holds names and numbers only: dropped at ingest"
