"""Feedback from people over real HTTP: `POST /api/agents/{login}/{slug}/runs/{run}/feedback`
with the agent's key, an owner key or the owner's browser session (CSRF-checked), kept once per
feedback id, refused with a 400 naming the field, not found for anyone who does not own the
run; shown in the run's JSON and page, comments only to those who may see content. The
store-backed rules run on SQLite and DynamoDB (moto)."""

from __future__ import annotations

import httpx
import pytest
from bench_core.domain.privacy import HIDDEN
from markupsafe import escape

from tests.conftest import RunningServer
from tests.http.accounts_support import Browser
from tests.http.feedback_support import a_run, give
from tests.http.test_ingest_http import new_login
from tests.http.test_privacy_defaults import patch

COMMENT = "The <b>answer</b> quoted the user's address"


def run_json(server: RunningServer, path: str, run: str, key: str | None = None
             ) -> httpx.Response:
    return httpx.get(f"{server.url}/api/agents/{path}/runs/{run}", timeout=30,
                     headers={"X-Bench-Key": key} if key else {})


def test_feedback_is_kept_once_per_id_and_the_run_shows_it(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, slug = new_login(), "helper"
    agent_key, owner_key = server.create_key(login, slug), server.create_key(login)
    run, path = a_run(server, agent_key, slug), f"{login}/{slug}"

    first = give(server, path, run, {"feedback_id": "fb-1", "thumbs": "up"}, agent_key)
    assert first.status_code == 201, first.text
    again = give(server, path, run, {"feedback_id": "fb-1", "thumbs": "down"}, agent_key)
    assert again.status_code == 200, again.text
    assert again.json() == {**first.json(), "created": False}
    assert first.json()["feedback"] | {"created_at": None} == {
        "feedback_id": "fb-1", "kind": "thumbs", "score": 1.0, "thumbs": "up", "label": None,
        "comment": None, "comment_hidden": False, "source": "agent", "created_at": None}
    scored = give(server, path, run, {"feedback_id": "fb-2", "score": 0.25,
                                      "label": "wrong-tool", "comment": COMMENT}, owner_key)
    assert scored.status_code == 201, scored.text

    shown = run_json(server, path, run, owner_key).json()["feedback"]
    assert (shown["count"], shown["mean_score"], shown["up"], shown["down"]) == (2, 0.625, 1, 0)
    assert [(f["feedback_id"], f["source"], f["label"], f["comment"]) for f in shown["items"]] \
        == [("fb-1", "agent", None, None), ("fb-2", "owner", "wrong-tool", COMMENT)]
    page = httpx.get(f"{server.url}/u/{path}/runs/{run}", headers={"X-Bench-Key": owner_key},
                     timeout=30).text
    assert str(escape(COMMENT)) in page and COMMENT not in page
    assert "wrong-tool" in page and 'data-feedback-form' not in page  # a key has no form


def test_a_visitor_never_sees_a_hidden_agents_comments(server_on_each_store: RunningServer
                                                       ) -> None:
    server = server_on_each_store
    login, slug = new_login(), "private-notes"
    owner_key = server.create_key(login)
    run, path = a_run(server, owner_key, slug), f"{login}/{slug}"
    assert give(server, path, run, {"score": 0.8, "label": "polite", "comment": COMMENT},
                owner_key).status_code == 201

    seen = run_json(server, path, run).json()["feedback"]
    assert (seen["count"], seen["mean_score"]) == (1, 0.8)
    assert seen["items"][0] | {"created_at": None} == {
        "feedback_id": seen["items"][0]["feedback_id"], "kind": "score", "score": 0.8,
        "thumbs": None, "label": "polite", "comment": HIDDEN, "comment_hidden": True,
        "source": "owner", "created_at": None}
    for path_seen in (f"/u/{path}/runs/{run}", f"/api/agents/{path}/runs/{run}"):
        text = httpx.get(server.url + path_seen, timeout=30).text
        assert "address" not in text, path_seen
    stranger = server.create_key(new_login())
    assert "address" not in run_json(server, path, run, stranger).text

    patch(server, path, owner_key, hide_inputs=False, hide_outputs=False)
    assert run_json(server, path, run).json()["feedback"]["items"][0]["comment"] == COMMENT
    patch(server, path, owner_key, visibility="private")
    assert run_json(server, path, run).status_code == 404
    assert run_json(server, path, run, stranger).status_code == 404


# ---- the route's refusals (the in-memory store: they are not about a store) -----------------


@pytest.fixture
def agent(bench_server: RunningServer) -> tuple[str, str, str]:
    """An agent's path, its key and a run of it."""
    login, slug = new_login(), "bot"
    key = bench_server.create_key(login, slug)
    return f"{login}/{slug}", key, a_run(bench_server, key, slug)


@pytest.mark.parametrize(("body", "field"), [
    ({"score": 1.5}, "score"), ({"score": -0.1}, "score"), ({"thumbs": "sideways"}, "thumbs"),
    ({"score": 0.5, "label": "two\nlines"}, "label"), ({"score": 0.5, "label": "x" * 65}, "label"),
    ({"score": 0.5, "comment": "x" * 4001}, "comment"), ({"score": 0.5, "mood": "happy"}, "mood"),
    ({"score": 0.5, "feedback_id": "a/b"}, "feedback_id"),
])
def test_bad_feedback_is_a_400_naming_the_field(bench_server: RunningServer, agent,
                                                body: dict[str, object], field: str) -> None:
    path, key, run = agent
    answer = give(bench_server, path, run, body, key)
    assert answer.status_code == 400, answer.text
    assert field in answer.json()["error"]
    assert run_json(bench_server, path, run, key).json()["feedback"]["count"] == 0


@pytest.mark.parametrize("body", [{}, {"score": 0.5, "thumbs": "up"}, b"{not json", b"[]"])
def test_feedback_needs_one_verdict_in_a_json_object(bench_server: RunningServer, agent,
                                                     body: object) -> None:
    path, key, run = agent
    answer = give(bench_server, path, run, body, key, **{"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert set(answer.json()) == {"error", "detail"}


def test_only_the_runs_owner_or_agent_may_give_feedback(bench_server: RunningServer,
                                                        agent) -> None:
    path, key, run = agent
    login = path.split("/")[0]
    body = {"thumbs": "down"}
    assert give(bench_server, path, run, body).status_code == 401
    assert give(bench_server, path, run, body, "bk_" + "x" * 40).status_code == 401
    others = (bench_server.create_key(new_login()), bench_server.create_key(login, "sibling"))
    for other in others:  # another account, another agent's key of the same account
        answer = give(bench_server, path, run, body, other)
        assert (answer.status_code, answer.json()["error"]) == (404, "agent not found")
    for missing in ("no-such-run", f"{run}-child"):  # feedback goes on a run's root
        assert give(bench_server, path, missing, body, key).status_code == 404
    assert give(bench_server, f"{login}/nobody", run, body, key).status_code == 404
    assert run_json(bench_server, path, run, key).json()["feedback"]["count"] == 0


# ---- the owner's browser ---------------------------------------------------------------------


def test_the_owner_annotates_on_the_run_page_without_javascript(bench_server: RunningServer
                                                                ) -> None:
    owner = Browser(bench_server)
    login = owner.sign_in()
    key = owner.new_agent("annotated", hide_inputs="on", hide_outputs="on")
    run = a_run(bench_server, key, "annotated")
    page_path = f"/u/{login}/annotated/runs/{run}"
    form = owner.get(page_path)
    assert 'data-feedback-form' in form.text
    action = f"/dashboard/agents/annotated/runs/{run}/feedback"
    sent = owner.post(action, {"thumbs": "down", "score": "", "label": "wrong-tool",
                               "comment": COMMENT, "feedback_id": "form-1"}, token_from=page_path)
    assert (sent.status_code, sent.headers["location"]) == (303, page_path + "#feedback")
    resent = owner.post(action, {"thumbs": "down", "feedback_id": "form-1"},
                        token_from=page_path)
    assert resent.status_code == 303
    scored = owner.post(action, {"score": "0.7", "comment": ""}, token_from=page_path)
    assert scored.status_code == 303
    shown = owner.get(page_path).text
    assert str(escape(COMMENT)) in shown and "thumbs down" in shown and "0.70" in shown
    answer = run_json(bench_server, f"{login}/annotated", run, key).json()["feedback"]
    assert [(f["kind"], f["score"], f["comment"]) for f in answer["items"]] \
        in ([("thumbs", 0.0, COMMENT), ("score", 0.7, None)],
            [("score", 0.7, None), ("thumbs", 0.0, COMMENT)])

    forged = owner.post(action, {"thumbs": "up", "csrf": "forged"})
    assert forged.status_code == 403
    bad = owner.post(action, {"score": "2"}, token_from=page_path)
    assert bad.status_code == 400 and "score" in bad.text
    visitor = httpx.get(bench_server.url + page_path, timeout=30).text
    assert 'data-feedback-form' not in visitor and "address" not in visitor
    assert "thumbs down" in visitor
    assert run_json(bench_server, f"{login}/annotated", run, key).json()["feedback"]["count"] == 2


def test_a_session_posts_json_feedback_with_the_pages_csrf_token(bench_server: RunningServer
                                                                 ) -> None:
    owner = Browser(bench_server)
    login = owner.sign_in()
    key = owner.new_agent("scripted")
    run = a_run(bench_server, key, "scripted")
    url = f"/api/agents/{login}/scripted/runs/{run}/feedback"
    assert owner.http.post(url, json={"thumbs": "up"}).status_code == 403
    token = owner.csrf(f"/u/{login}/scripted/runs/{run}")
    sent = owner.http.post(url, json={"thumbs": "up"}, headers={"X-CSRF-Token": token})
    assert sent.status_code == 201, sent.text
    assert sent.json()["feedback"]["source"] == "owner"
    stranger = Browser(bench_server)
    stranger.sign_in()
    their_token = stranger.csrf("/dashboard")
    refused = stranger.http.post(url, json={"thumbs": "down"},
                                 headers={"X-CSRF-Token": their_token})
    assert refused.status_code == 404
