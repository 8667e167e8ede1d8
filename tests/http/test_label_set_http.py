"""An agent's label set over real HTTP: the owner sets it (an owner key on SQLite and DynamoDB
(moto), or the agent's dashboard page), feedback labels are then checked against it (a 400
naming the label, nothing kept), and the run page's form and the annotation queue offer it."""

from __future__ import annotations

import re

import httpx

from tests.conftest import RunningServer
from tests.http.accounts_support import Browser
from tests.http.feedback_support import a_run, give
from tests.http.test_feedback_http import run_json
from tests.http.test_ingest_http import new_login


def put_labels(server: RunningServer, path: str, labels: object, key: str | None
               ) -> httpx.Response:
    return httpx.put(f"{server.url}/api/agents/{path}/labels", json={"labels": labels},
                     headers={"X-Bench-Key": key} if key else {}, timeout=30)


def test_feedback_labels_are_checked_against_the_agents_label_set(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, slug = new_login(), "labelled"
    agent_key, owner_key = server.create_key(login, slug), server.create_key(login)
    run, path = a_run(server, agent_key, slug), f"{login}/{slug}"
    assert give(server, path, run, {"thumbs": "up", "label": "anything"},
                agent_key).status_code == 201  # no set yet: any label goes

    assert put_labels(server, path, ["correct", "wrong-tool"], agent_key).status_code == 404
    assert put_labels(server, path, ["bad,label"], owner_key).status_code == 400
    answer = put_labels(server, path, ["correct", "wrong-tool", "correct"], owner_key)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"labels": ["correct", "wrong-tool"]}
    assert server.get(f"/api/agents/{path}/labels", owner_key) == answer.json()

    refused = give(server, path, run, {"feedback_id": "off", "thumbs": "down",
                                       "label": "off topic"}, agent_key)
    assert refused.status_code == 400
    assert refused.json()["error"] == ("invalid feedback: label: 'off topic' is not in the "
                                       "agent's label set (correct, wrong-tool)")
    assert refused.json()["detail"][0]["loc"] == ["body", "label"]
    assert give(server, path, run, {"thumbs": "down", "label": "wrong-tool"},
                agent_key).status_code == 201
    labels = [f["label"] for f in run_json(server, path, run, owner_key).json()["feedback"]["items"]]
    assert sorted(labels) == ["anything", "wrong-tool"]  # the refused one was not kept

    assert put_labels(server, path, [], owner_key).json() == {"labels": []}
    assert give(server, path, run, {"thumbs": "up", "label": "off topic"},
                agent_key).status_code == 201


def test_the_owner_sets_labels_on_the_dashboard_and_the_run_page_offers_them(
        bench_server: RunningServer) -> None:
    server = bench_server
    owner = Browser(server)
    login = owner.sign_in()
    agent_key = owner.new_agent("annotated")
    run = a_run(server, agent_key, "annotated")
    saved = owner.post("/dashboard/agents/annotated/labels",
                       {"labels": "correct, wrong-tool,\noff topic"},
                       token_from="/dashboard/agents/annotated")
    assert saved.status_code == 303 and saved.headers["location"].endswith("#labels")
    assert server.get(f"/api/agents/{login}/annotated/labels", server.create_key(login)) == \
        {"labels": ["correct", "wrong-tool", "off topic"]}
    settings = owner.get("/dashboard/agents/annotated").text
    assert 'value="correct, wrong-tool, off topic"' in settings
    page = owner.get(f"/u/{login}/annotated/runs/{run}").text
    offered = re.search(r"<select name=\"label\" data-feedback-labels>(.*?)</select>", page)
    assert offered is not None
    assert re.findall(r"<option>([^<]*)</option>", offered.group(1)) == \
        ["correct", "wrong-tool", "off topic"]
    queue = owner.get("/dashboard/agents/annotated/queue").text
    assert '<option value="off topic">off topic (3)</option>' in queue
