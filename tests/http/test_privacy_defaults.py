"""The privacy gate on both stores, over real HTTP: an agent key reads its own agent only, and
an agent created by its first batch or span shows its numbers but not its content."""

from __future__ import annotations

import httpx
from bench_core.domain.privacy import HIDDEN

from tests.conftest import RunningServer
from tests.factories import batch, task_events
from tests.http.test_ingest_http import new_login, post


def get(server: RunningServer, path: str, key: str | None = None) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.get(server.url + path, headers=headers, timeout=30)


def patch(server: RunningServer, path: str, key: str, **changes: object) -> None:
    r = httpx.patch(f"{server.url}/api/agents/{path}", json=changes,
                    headers={"X-Bench-Key": key}, timeout=30)
    assert r.status_code == 200, r.text


def seed(server: RunningServer, key: str, slug: str, task_id: str) -> None:
    events = task_events(task_id, input={"secret": f"in-{slug}"}, output=f"out-{slug}")
    assert post(server, batch(slug, events), key).status_code == 200


def surfaces(login: str, slug: str, task_id: str) -> list[str]:
    path = f"{login}/{slug}"
    return [f"/api/agents/{path}", f"/api/agents/{path}/tasks", f"/api/agents/{path}/events",
            f"/api/agents/{path}/tasks/{task_id}", f"/api/agents/{path}/insights",
            f"/u/{path}"]


def test_an_agent_key_reads_its_own_agent_and_nothing_else_of_its_owner(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    owner_key = server.create_key(login)
    for slug in ("mine", "secret", "shown"):
        seed(server, owner_key, slug, f"t-{slug}")
    patch(server, f"{login}/secret", owner_key, visibility="private")
    patch(server, f"{login}/mine", owner_key, hide_inputs=True, hide_outputs=True)
    agent_key = server.create_key(login, "mine")

    for path in surfaces(login, "secret", "t-secret"):
        assert get(server, path, owner_key).status_code == 200, path
        r = get(server, path, agent_key)
        assert r.status_code == 404, path
        assert "in-secret" not in r.text and "out-secret" not in r.text, path
    compare = f"/vs/@{login}/mine/@{login}/secret"
    assert get(server, compare, owner_key).status_code == 200
    assert get(server, compare, agent_key).status_code == 404

    own = get(server, f"/api/agents/{login}/mine/tasks/t-mine", agent_key).json()
    assert own["input"] == {"secret": "in-mine"} and own["output"] == "out-mine"
    assert get(server, f"/api/agents/{login}/mine", agent_key).json()["dropped_events"] == 0

    patch(server, f"{login}/shown", owner_key, hide_inputs=True, hide_outputs=True)
    sibling = get(server, f"/api/agents/{login}/shown/tasks/t-shown", agent_key).json()
    assert sibling["input"] == HIDDEN and sibling["output"] == HIDDEN
    assert get(server, f"/api/agents/{login}/shown", agent_key).json()["dropped_events"] is None
    assert get(server, f"/api/agents/{login}/shown/tasks/t-shown",
               owner_key).json()["output"] == "out-shown"


def test_an_agent_created_by_its_first_batch_is_public_with_its_content_hidden(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    seed(server, key, "fresh", "t1")

    public = get(server, f"/api/agents/{login}/fresh").json()
    assert public["visibility"] == "public" and public["runs"] == 1
    assert public["hide_inputs"] is True and public["hide_outputs"] is True
    task = get(server, f"/api/agents/{login}/fresh/tasks/t1").json()
    assert task["input"] == HIDDEN and task["output"] == HIDDEN
    assert "in-fresh" not in get(server, f"/u/{login}/fresh").text
    assert get(server, f"/badge/{login}/fresh.svg").status_code == 200
    assert get(server, f"/api/agents/{login}/fresh/tasks/t1", key).json()["output"] == "out-fresh"

    patch(server, f"{login}/fresh", key, hide_inputs=False, hide_outputs=False)
    seed(server, key, "fresh", "t2")  # a later batch keeps the owner's settings
    shown = get(server, f"/api/agents/{login}/fresh/tasks/t2").json()
    assert shown["input"] == {"secret": "in-fresh"} and shown["output"] == "out-fresh"


def test_an_agent_created_by_its_first_span_hides_its_content(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat", "kind": 1,
            "startTimeUnixNano": "1764700000000000000", "endTimeUnixNano": "1764700001000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "gen_ai.prompt", "value": {"stringValue": "my secret prompt"}}],
            "status": {"code": 1}}
    body = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]}
    r = httpx.post(server.url + "/v1/traces", json=body, timeout=30,
                   headers={"X-Bench-Key": key, "X-Bench-Agent": "otel-agent"})
    assert r.status_code == 200, r.text
    agent = get(server, f"/api/agents/{login}/otel-agent").json()
    assert agent["visibility"] == "public"
    assert agent["hide_inputs"] is True and agent["hide_outputs"] is True
    tasks = get(server, f"/api/agents/{login}/otel-agent/tasks").json()["tasks"]
    assert tasks and all(t["input"] == HIDDEN for t in tasks)


def test_the_new_agent_form_starts_with_content_hidden(bench_server: RunningServer) -> None:
    from tests.http.accounts_support import Browser

    browser = Browser(bench_server)
    browser.sign_in()
    form = browser.get("/dashboard/new").text
    assert 'name="hide_inputs" checked' in form and 'name="hide_outputs" checked' in form


def test_evidence_holds_names_and_numbers_only(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    events = task_events("t1", output="out")
    evidence = {"label": "evidence", "provider": {"leak": "secret-provider"},
                "model": "gpt-4o", "operation": "say secret-operation now",
                "input_tokens": 10, "output_tokens": "many", "prompt": "secret-prompt"}
    events.insert(1, {**events[0], "id": "e-evidence", "kind": "task.log", "data": evidence,
                      "input": None})
    r = post(server, batch("ev", events), key)
    assert r.status_code == 200, r.text
    dropped = {tuple(d["loc"]): d["msg"] for d in r.json()["dropped"]}
    assert set(dropped) == {("events", 1, "data", name)
                            for name in ("provider", "operation", "output_tokens", "prompt")}
    for viewer in (None, key):
        task = get(server, f"/api/agents/{login}/ev/tasks/t1", viewer)
        assert "secret-" not in task.text
        record, = task.json()["evidence"]["records"]
        assert record["provider"] is None and record["model"] == "gpt-4o"
        assert record["input_tokens"] == 10 and record["output_tokens"] is None
        assert "secret-" not in get(server, f"/api/agents/{login}/ev/events", viewer).text


def test_an_agent_created_by_a_benchmark_submission_hides_its_content(
        bench_server: RunningServer) -> None:
    """On DynamoDB (graded by Step Functions): tests/aws/test_benchmark_handlers.py."""
    from tests.benchmark_support import SUITE, graded_run, run_body

    server = bench_server
    login = new_login()
    key = server.create_key(login)
    r = httpx.post(f"{server.url}/api/benchmarks/{SUITE}/runs", timeout=60,
                   headers={"X-Bench-Key": key}, json=run_body("benched", repeats=1))
    run = graded_run(server.url, r, key)

    agent = get(server, f"/api/agents/{login}/benched").json()
    assert agent["visibility"] == "public"
    assert agent["hide_inputs"] is True and agent["hide_outputs"] is True
    public = get(server, f"/api/benchmarks/runs/{run['run_id']}").json()
    assert public["summary"] == run["summary"]
    assert all(a["input"] == a["output"] == a["output_hash"] == HIDDEN
               for a in public["attempts"])
    own = get(server, f"/api/benchmarks/runs/{run['run_id']}", key).json()
    assert all(a["output_hash"].startswith("sha256:") for a in own["attempts"])
    assert own["attempts"][0]["input"]["question"]


def test_a_private_agents_runs_and_their_span_rows_stay_its_owners(
        server_on_each_store: RunningServer) -> None:
    """A run's spans are read from their rows (DynamoDB's `spans` index): neither the page,
    its JSON nor the runs list shows a private agent's span to anyone but its owner."""
    server = server_on_each_store
    login = new_login()
    owner_key, stranger_key = server.create_key(login), server.create_key(new_login())
    events = task_events("root", name="plan-secret-root") + task_events(
        "child", name="span-secret-child", parent="root")
    assert post(server, batch("hush", events), owner_key).status_code == 200
    patch(server, f"{login}/hush", owner_key, visibility="private")
    paths = [f"/u/{login}/hush/runs/root?span=child", f"/api/agents/{login}/hush/runs/root",
             f"/u/{login}/hush/runs", f"/api/agents/{login}/hush/runs"]
    for path in paths:
        assert get(server, path, owner_key).status_code == 200, path
        for key in (None, stranger_key):
            r = get(server, path, key)
            assert r.status_code == 404, path
            assert "span-secret-child" not in r.text and "plan-secret-root" not in r.text, path
    owned = get(server, f"/api/agents/{login}/hush/runs/root", owner_key).json()
    assert [s["name"] for s in owned["spans"]] == ["plan-secret-root", "span-secret-child"]
