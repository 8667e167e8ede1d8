"""Sessions over real HTTP on each store: a multi-turn conversation sent through `/ingest` with
its session and user, its page and JSON twin (the runs in order, each turn's messages, the
session's numbers), the sessions list with its filters, the run page's link to its session, and
the privacy rules: a private agent's sessions are not found, hidden content hides the
conversation, a visitor sees the user only as a pseudonym and may not look sessions up by user."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from bench_core.domain.models import AgentRef
from bench_core.domain.privacy import pseudonym

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.surfaces_data import new_login, post

QUESTIONS = ["Where is Lisbon?", "And its river?", "How long is it?"]
ANSWERS = ["In Portugal.", "The Tagus.", "About 1,000 km."]


def turn(run: str, i: int, session: str, user: str, *, status: str = "success"
         ) -> list[dict[str, Any]]:
    start, end = task_events(run, "answer", status=status, duration_ms=100 + i,
                             input={"messages": [{"role": "user", "content": QUESTIONS[i]}]},
                             output=ANSWERS[i] if status == "success" else "tool failed")
    return [{**start, "session_id": session, "user_id": user},
            ev("task.log", run, data={"label": "evidence", "provider": "openai",
                                      "model": "gpt-4o-mini", "input_tokens": 10 * (i + 1),
                                      "output_tokens": 5}),
            end]


def conversation(server: RunningServer, *, shown: bool = True, session: str = "chat-1",
                 user: str = "alice@example.com") -> tuple[str, str, str]:
    """Three turns of one session (the last failed) and a run of another; (login, slug, key)."""
    login, slug = new_login(), "helper"
    key = server.create_key(login)
    if shown:
        server.showing_content(login, slug)
    events = []
    for i in range(3):
        events += turn(f"{session}-r{i}", i, session, user, status="failed" if i == 2 else "success")
    events += turn("other-r0", 0, "chat-2", "bob")
    assert post(server, batch(slug, events), key).status_code == 200
    return login, slug, key


def test_a_sessions_runs_are_one_conversation_in_order(server_on_each_store: RunningServer
                                                         ) -> None:
    server = server_on_each_store
    login, slug, key = conversation(server)
    answer = server.get(f"/api/agents/{login}/{slug}/sessions/chat-1")
    assert [r["run_id"] for r in answer["runs"]] == ["chat-1-r0", "chat-1-r1", "chat-1-r2"]
    assert [r["status"] for r in answer["runs"]] == ["success", "success", "failed"]
    assert (answer["run_count"], answer["successes"], answer["failures"]) == (3, 2, 1)
    assert answer["tokens"] == 10 + 20 + 30 + 15
    assert answer["duration_ms_total"] == 100 + 101 + 102
    assert answer["headline_cost_source"] == "provider evidence"
    first = answer["runs"][0]["messages"]
    assert [(m["role"], m["parts"][0]["text"]) for m in first] == [
        ("user", QUESTIONS[0]), ("assistant", ANSWERS[0])]
    failed = answer["runs"][2]["messages"]
    assert [(m["label"], m["parts"][0]["text"]) for m in failed][-1] == ("error", "tool failed")
    assert answer["user"] == pseudonym(AgentRef(login, slug), "alice@example.com")
    assert "alice" not in httpx.get(f"{server.url}/u/{login}/{slug}/sessions/chat-1").text
    owner = server.get(f"/api/agents/{login}/{slug}/sessions/chat-1", key)
    assert owner["user"] == "alice@example.com"
    page = httpx.get(f"{server.url}/u/{login}/{slug}/sessions/chat-1")
    assert page.status_code == 200
    for text in (*QUESTIONS, *ANSWERS[:2]):
        assert text in page.text
    assert page.text.index(QUESTIONS[0]) < page.text.index(QUESTIONS[1]) < page.text.index(
        QUESTIONS[2])
    run_page = httpx.get(f"{server.url}/u/{login}/{slug}/runs/chat-1-r1").text
    assert f'href="/u/{login}/{slug}/sessions/chat-1"' in run_page
    assert server.get(f"/api/agents/{login}/{slug}/runs/chat-1-r1")["session_id"] == "chat-1"


def test_the_sessions_list_filters_and_keeps_users_to_the_owner(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, slug, key = conversation(server)
    listed = server.get(f"/api/agents/{login}/{slug}/sessions")["sessions"]
    assert [s["session_id"] for s in listed] == ["chat-2", "chat-1"]
    assert {s["user"] for s in listed} == {pseudonym(AgentRef(login, slug), u)
                                           for u in ("alice@example.com", "bob")}
    failed = server.get(f"/api/agents/{login}/{slug}/sessions", status="failed")["sessions"]
    assert [s["session_id"] for s in failed] == ["chat-1"]
    mine = server.get(f"/api/agents/{login}/{slug}/sessions", key, user="bob")["sessions"]
    assert [(s["session_id"], s["user"]) for s in mine] == [("chat-2", "bob")]
    refused = httpx.get(f"{server.url}/api/agents/{login}/{slug}/sessions", params={"user": "bob"})
    assert refused.status_code == 403 and refused.json()["error"]
    by_pseudonym = httpx.get(f"{server.url}/api/agents/{login}/{slug}/sessions",
                             params={"user": listed[0]["user"]})
    assert by_pseudonym.status_code == 403
    bad = httpx.get(f"{server.url}/api/agents/{login}/{slug}/sessions", params={"status": "x"})
    assert bad.status_code == 400 and "status" in bad.json()["error"]
    page = httpx.get(f"{server.url}/u/{login}/{slug}/sessions")
    assert page.status_code == 200 and "chat-1" in page.text and "bob" not in page.text
    assert 'name="user"' not in page.text, "no user filter for a visitor"


def test_hidden_content_hides_the_conversation(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, slug, key = conversation(server, shown=False)  # a first batch hides content
    answer = server.get(f"/api/agents/{login}/{slug}/sessions/chat-1")
    assert answer["content_hidden"] is True
    assert [r["messages"] for r in answer["runs"]] == [None, None, None]
    assert answer["run_count"] == 3, "the numbers stay"
    page = httpx.get(f"{server.url}/u/{login}/{slug}/sessions/chat-1").text
    assert QUESTIONS[0] not in page and ANSWERS[0] not in page
    owner = server.get(f"/api/agents/{login}/{slug}/sessions/chat-1", key)
    assert owner["runs"][0]["messages"][0]["parts"][0]["text"] == QUESTIONS[0]


@pytest.mark.parametrize("path", ["/api/agents/{p}/sessions/chat-1", "/api/agents/{p}/sessions",
                                  "/u/{p}/sessions/chat-1", "/u/{p}/sessions"])
def test_a_private_agents_sessions_are_not_found(server_on_each_store: RunningServer,
                                                  path: str) -> None:
    server = server_on_each_store
    login, slug, key = conversation(server)
    made_private = httpx.patch(f"{server.url}/api/agents/{login}/{slug}",
                               json={"visibility": "private"}, headers={"X-Bench-Key": key})
    assert made_private.status_code == 200
    address = server.url + path.format(p=f"{login}/{slug}")
    assert httpx.get(address).status_code == 404
    assert httpx.get(address, headers={"X-Bench-Key": key}).status_code == 200
    assert httpx.get(f"{server.url}/api/agents/{login}/{slug}/sessions/nope",
                     headers={"X-Bench-Key": key}).status_code == 404
