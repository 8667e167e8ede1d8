"""The session judge over real HTTP on SQLite and DynamoDB (moto): a multi-turn conversation
sent through `/ingest` is judged whole once it has been idle for the idle time, not before,
by the round the local runner's hourly timer runs (`LocalJobs.judge_sessions`); a later turn
makes it due again; a session without content is unscored; the verdict shows on the session
page, its JSON twin and the sessions list, its reasoning hidden from visitors where the owner
hides outputs; a private agent's is not found. Time moves by the store's clock, never today's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import iso
from bench_core.domain.privacy import HIDDEN
from bench_core.evals.session_judge import NO_CONTENT_SESSION
from bench_core.runtime.jobs import LocalJobs
from bench_core.store.sqlite.store import SqliteStore

from tests.conftest import RunningServer, serving
from tests.factories import BASE, batch
from tests.http.surfaces_data import post
from tests.http.test_sessions_http import conversation, turn

IDLE = timedelta(minutes=30)


@pytest.fixture(params=["sqlite", "dynamodb"])
def judged(request: pytest.FixtureRequest, tmp_path: Path
           ) -> Iterator[tuple[RunningServer, FixedClock]]:
    """A server whose store stands at the factories' BASE (the events' time): nothing is idle
    until the test moves the clock."""
    clock = FixedClock(BASE)
    if request.param == "sqlite":
        store = SqliteStore.open(tmp_path / "bench.db", clock=clock)
        with serving(tmp_path, over=store) as running:
            yield running, clock
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store(clock=clock) as dynamo, \
            serving(tmp_path, over=dynamo, store="dynamodb") as running:
        yield running, clock


def judge_round(server: RunningServer) -> None:
    """What the local runner's hourly round does for sessions."""
    LocalJobs(server.services).judge_sessions()


def session(server: RunningServer, login: str, slug: str, sid: str = "chat-1",
            key: str | None = None) -> dict[str, Any]:
    return server.get(f"/api/agents/{login}/{slug}/sessions/{sid}", key)


def at(moment: str, after: timedelta) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")) + after


def test_a_session_is_judged_whole_once_idle_and_again_after_a_new_turn(
        judged: tuple[RunningServer, FixedClock]) -> None:
    server, clock = judged
    login, slug, key = conversation(server)
    first = session(server, login, slug)
    assert first["session_eval"] is None
    clock.set(at(first["last_at"], IDLE - timedelta(minutes=1)))
    judge_round(server)
    assert session(server, login, slug)["session_eval"] is None, "not idle long enough"

    clock.set(at(first["last_at"], IDLE + timedelta(minutes=1)))
    judge_round(server)
    verdict = session(server, login, slug)["session_eval"]
    assert verdict["status"] == "scored" and verdict["judge"] == "heuristic-v1"
    assert verdict["score"] == 0.0, "the conversation ended on a failed turn"
    assert "failed" in verdict["reasoning"]
    listed = server.get(f"/api/agents/{login}/{slug}/sessions")["sessions"]
    assert {s["session_id"]: s["session_eval"]["status"] for s in listed} == {
        "chat-1": "scored", "chat-2": "scored"}
    page = httpx.get(f"{server.url}/u/{login}/{slug}/sessions/chat-1").text
    assert "Judge of the conversation" in page and verdict["reasoning"] in page
    assert "data-session-score>score 0.00" in httpx.get(
        f"{server.url}/u/{login}/{slug}/sessions").text.replace("\n", "")

    now = iso(clock.now())  # a later turn, answered well: due again once idle again
    events = [{**e, "ts": now} for e in turn("chat-1-r3", 1, "chat-1", "alice@example.com")]
    assert post(server, batch(slug, events), key).status_code == 200
    judge_round(server)
    again = session(server, login, slug)
    assert again["run_count"] == 4 and again["session_eval"] == verdict, "not idle yet"
    clock.set(at(again["last_at"], IDLE + timedelta(minutes=1)))
    judge_round(server)
    rejudged = session(server, login, slug)["session_eval"]
    assert rejudged["status"] == "scored" and rejudged["score"] > 0.5
    assert rejudged["at"] > verdict["at"]
    judge_round(server)
    assert session(server, login, slug)["session_eval"] == rejudged, "judged once"


def test_a_session_without_content_is_unscored(judged: tuple[RunningServer, FixedClock]
                                               ) -> None:
    server, clock = judged
    login, slug = "quiet", "helper"
    key = server.create_key(login)
    server.showing_content(login, slug)
    events = []
    for n in range(2):
        start, end = turn(f"q{n}", n, "mute", "u")[::2]
        events += [{k: v for k, v in start.items() if k != "input"},
                   {k: v for k, v in end.items() if k != "output"}]
    assert post(server, batch(slug, events), key).status_code == 200
    last = session(server, login, slug, "mute")["last_at"]
    clock.set(at(last, IDLE + timedelta(minutes=1)))
    judge_round(server)
    verdict = session(server, login, slug, "mute")["session_eval"]
    assert verdict["status"] == "unscored" and verdict["score"] is None
    assert verdict["reason"] == NO_CONTENT_SESSION
    assert NO_CONTENT_SESSION in httpx.get(f"{server.url}/u/{login}/{slug}/sessions/mute").text


def test_the_verdicts_reasoning_is_hidden_from_visitors_where_outputs_are(
        judged: tuple[RunningServer, FixedClock]) -> None:
    server, clock = judged
    login, slug, key = conversation(server, shown=False)  # a first batch hides content
    clock.set(at(session(server, login, slug)["last_at"], IDLE + timedelta(minutes=1)))
    judge_round(server)
    owner = session(server, login, slug, key=key)["session_eval"]
    assert owner["reasoning"] and owner["reasoning"] != HIDDEN and owner["private"] is True
    visitor = session(server, login, slug)["session_eval"]
    assert visitor["reasoning"] == HIDDEN and visitor["score"] == owner["score"]
    page = httpx.get(f"{server.url}/u/{login}/{slug}/sessions/chat-1").text
    assert owner["reasoning"] not in page and HIDDEN in page


def test_a_private_agents_session_verdict_is_not_found(
        judged: tuple[RunningServer, FixedClock]) -> None:
    server, clock = judged
    login, slug, key = conversation(server)
    clock.set(at(session(server, login, slug)["last_at"], IDLE + timedelta(minutes=1)))
    judge_round(server)
    made_private = httpx.patch(f"{server.url}/api/agents/{login}/{slug}",
                               json={"visibility": "private"}, headers={"X-Bench-Key": key})
    assert made_private.status_code == 200
    for path in (f"/api/agents/{login}/{slug}/sessions/chat-1",
                 f"/api/agents/{login}/{slug}/sessions", f"/u/{login}/{slug}/sessions/chat-1"):
        assert httpx.get(server.url + path).status_code == 404
    assert session(server, login, slug, key=key)["session_eval"]["status"] == "scored"
