"""The owner's annotation queue over real HTTP (the in-memory store; a server whose judge
samples nothing, so the tests set each run's score): the JSON twin lists the newest runs where
the judge was least sure first, then where it disagreed with a person, then runs nobody has
looked at, and leaves out runs whose verdicts agree; only the owner sees it, on the page too."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from bench_core.domain.models import AgentRef, EvalResult
from bench_core.settings import JudgeSettings

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.accounts_support import Browser
from tests.http.feedback_support import give
from tests.http.test_ingest_http import new_login, post

SCORES = {"sure-pass": 0.9, "close-above": 0.55, "clear-fail": 0.3, "closest": 0.48,
          "disputed": 0.8, "agreed": 0.2}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serving(tmp_path_factory.mktemp("queue"), store="memory",
                 judge=JudgeSettings(sample_rate=0.0)) as running:
        yield running


def seeded(server: RunningServer) -> tuple[str, str]:
    """An agent with runs scored as `SCORES`, one never scored (`unjudged`) and one only people
    judged (`people-only`); people disagree on `disputed` and agree on `agreed`. Its login and
    owner key."""
    login = new_login()
    owner_key, agent_key = server.create_key(login), server.create_key(login, "queued")
    runs = [*SCORES, "unjudged", "people-only"]
    events = [e for run in runs for e in task_events(run, "answer", output="an answer")]
    assert post(server, batch("queued", events), agent_key).status_code == 200
    ref = AgentRef(login, "queued")
    for run, score in SCORES.items():
        assert server.store.evals.record_eval(ref, run, EvalResult(
            status="scored", judge="scripted", at="2026-12-05T00:00:00.000Z", score=score))
    for run, thumbs in (("disputed", "down"), ("agreed", "down"), ("people-only", "up")):
        assert give(server, f"{login}/queued", run, {"thumbs": thumbs}, owner_key).status_code == 201
    return login, owner_key


def test_the_queue_puts_the_judges_doubts_first_then_disputes_then_the_unseen(
        server: RunningServer) -> None:
    login, owner_key = seeded(server)
    queue = server.get(f"/api/agents/{login}/queued/queue", owner_key)
    assert [(i["run_id"], i["reason"]) for i in queue["runs"]] == [
        ("closest", "unsure"), ("close-above", "unsure"), ("clear-fail", "unsure"),
        ("disputed", "disagreed"), ("unjudged", "unlooked"), ("sure-pass", "unlooked")]
    disputed = queue["runs"][3]
    assert (disputed["score"], disputed["cell"]) == (0.8, "pf")
    assert disputed["feedback_url"] == f"/api/agents/{login}/queued/runs/disputed/feedback"
    assert queue["window"] == 8


def test_only_the_owner_sees_the_queue(server: RunningServer) -> None:
    login, owner_key = seeded(server)
    path = f"{server.url}/api/agents/{login}/queued/queue"
    for key in (server.create_key(login, "queued"), server.create_key(new_login()), None):
        answer = httpx.get(path, headers={"X-Bench-Key": key} if key else {}, timeout=30)
        assert answer.status_code == 404, (key, answer.text)
        assert "closest" not in answer.text
    stranger = Browser(server)
    stranger.sign_in()
    assert stranger.get("/dashboard/agents/queued/queue").status_code == 404
    owner = Browser(server)
    owner.sign_in(login)
    page = owner.get("/dashboard/agents/queued/queue")
    assert page.status_code == 200 and "no-store" in page.headers["cache-control"]
    assert page.text.index('data-run="closest"') < page.text.index('data-run="unjudged"')
    assert 'data-run="agreed"' not in page.text and "data-csrf=" in page.text


def test_a_verdict_from_the_queue_takes_the_run_out_of_it(server: RunningServer) -> None:
    login, owner_key = seeded(server)
    assert give(server, f"{login}/queued", "closest", {"thumbs": "down"},
                owner_key).status_code == 201
    queue = server.get(f"/api/agents/{login}/queued/queue", owner_key)
    assert "closest" not in [i["run_id"] for i in queue["runs"]]
    agreement = server.get(f"/api/agents/{login}/queued", owner_key)["judge_agreement"]
    assert agreement["table"] == {"pp": 0, "pf": 1, "fp": 0, "ff": 2}
