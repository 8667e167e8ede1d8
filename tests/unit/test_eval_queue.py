"""Evals from the queue (`evals/queue.py`): an agent's messages judged together, the ones the
judge could not get through put back with a growing wait, rounds not started when time runs
out, and messages past two days given up, on the in-memory store with a scripted judge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import AgentMeta, AgentRef, iso
from bench_core.evals import queue
from bench_core.ports.llm import Completion, LLMUnavailable
from bench_core.ports.workflows import eval_start
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.factories import clean, task_events

REF = AgentRef("alice", "agent-1")
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
PLENTY = timedelta(minutes=5)


class Judge:
    """A model that gives every run 0.7, and counts its calls; `down` names runs it cannot
    reach (the judge throttled for them)."""

    label = "openai_compat:scripted"

    def __init__(self, *down: str) -> None:
        self.down = set(down)
        self.calls = 0

    def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
        self.calls += 1
        if any(run in str(messages) for run in self.down):
            raise LLMUnavailable("throttled")
        return Completion(json.dumps({"score": 0.7, "reasoning": "Fine."}), 100, 20)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"), FixedClock(NOW))
    yield s
    s.close()


def judged_by(services: Services, judge: Judge) -> Services:
    settings = replace(services.settings, llm=replace(services.settings.llm, price_per_mtok_usd=0.72))
    return Services(settings, services.store).provide(llm=judge)


def ingest(services: Services, *runs: str, slug: str = "agent-1") -> None:
    services.store.ingest.ingest("alice", AgentMeta(slug=slug),
                                 clean([e for r in runs for e in task_events(r)]))


def message(n: int, *runs: str, agent: str = REF.path, queued_at: datetime = NOW,
            deliveries: int = 1) -> queue.Queued:
    state = eval_start(agent, list(runs), private=False, queued_at=iso(queued_at))
    return queue.queued(f"m{n}", json.dumps(state), queued_at, deliveries)


def score_of(services: Services, run: str, ref: AgentRef = REF) -> float | None:
    task = services.store.ingest.get_task(ref, run)
    assert task is not None
    return None if task.eval is None else task.eval.score


def test_an_agents_messages_are_judged_together_and_each_agent_apart(services: Services) -> None:
    ingest(services, "a1", "a2", "a3")
    ingest(services, "b1", slug="agent-2")
    s = judged_by(services, Judge())
    again = queue.judge_messages(s, [message(1, "a1"), message(2, "b1", agent="alice/agent-2"),
                                     message(3, "a2", "a3")], lambda: PLENTY)
    assert again == {}
    assert [score_of(s, r) for r in ("a1", "a2", "a3")] == [0.7] * 3
    assert score_of(s, "b1", AgentRef("alice", "agent-2")) == 0.7
    assert s.store.agents.get_agent(REF).stats.eval_count == 3


def test_a_judge_out_of_reach_puts_the_messages_back_waiting_longer_each_time(
        services: Services) -> None:
    ingest(services, "a1", "a2", "c1")
    s = judged_by(services, Judge("a2"))
    again = queue.judge_messages(s, [message(1, "a1", "a2", deliveries=3), message(2, "c1")],
                                 lambda: PLENTY)
    # one round for the agent: its judged runs are recorded, the whole round comes back
    assert again == {"m1": timedelta(minutes=20), "m2": timedelta(minutes=5)}
    assert (score_of(s, "a1"), score_of(s, "a2"), score_of(s, "c1")) == (0.7, None, 0.7)
    assert [queue.retry_delay(n) for n in (1, 2, 3, 8, 9, 50)] == [
        timedelta(minutes=5), timedelta(minutes=10), timedelta(minutes=20),
        timedelta(minutes=640), timedelta(hours=12), timedelta(hours=12)]
    judge = Judge()
    later = queue.judge_messages(judged_by(services, judge), [message(1, "a1", "a2", deliveries=4)],
                                 lambda: PLENTY)
    assert later == {} and score_of(s, "a2") == 0.7 and judge.calls == 1  # a1 was judged


def test_a_judge_down_for_every_run_records_nothing_and_puts_all_back(services: Services) -> None:
    ingest(services, "a1")
    s = judged_by(services, Judge("a1"))
    assert queue.judge_messages(s, [message(1, "a1")], lambda: PLENTY) == {"m1": timedelta(minutes=5)}
    assert score_of(s, "a1") is None


def test_rounds_start_only_while_a_judgement_fits_the_time_left(services: Services) -> None:
    runs = [f"r{n:02d}" for n in range(queue.RUNS_AT_ONCE + 1)]
    ingest(services, *runs)
    s = judged_by(services, Judge())
    left = iter([queue.JUDGEMENT, queue.JUDGEMENT - timedelta(seconds=1)])
    again = queue.judge_messages(s, [message(1, *runs[:-1]), message(2, runs[-1])],
                                 lambda: next(left))
    assert again == {"m2": timedelta(0)}  # the second round did not start: back at once
    assert score_of(s, runs[0]) == 0.7 and score_of(s, runs[-1]) is None


def test_a_message_past_two_days_is_given_up_saying_why(services: Services) -> None:
    ingest(services, "old", "done")
    s = judged_by(services, Judge())
    queue.judge_messages(s, [message(1, "done")], lambda: PLENTY)
    stale = NOW - queue.GIVE_UP_AFTER - timedelta(minutes=1)
    judge = Judge()
    again = queue.judge_messages(judged_by(services, judge), [message(2, "old", "done", queued_at=stale)],
                                 lambda: PLENTY)
    assert again == {} and judge.calls == 0
    task = s.store.ingest.get_task(REF, "old")
    assert (task.eval.status, task.eval.reason) == ("unscored", queue.GAVE_UP)
    assert score_of(s, "done") == 0.7  # a result is never replaced by giving up


def test_a_body_that_is_no_eval_state_is_refused() -> None:
    for body in ("{", "[]", json.dumps({"agent": "nobody", "task_ids": ["t"]}),
                 json.dumps({"agent": "a/b", "task_id": "t"})):
        with pytest.raises(ValueError):
            queue.queued("m", body, NOW, 1)
