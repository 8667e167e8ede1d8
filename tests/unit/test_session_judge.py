"""The session judge's budget and what it reads: a session's verdict counts in the day's judge
spend, which the daily budget then refuses the next one for; a sample rate of 0 skips it; the
model reads the turns in order with the last answer as the one judged; the local runner's
hourly round runs it. By the store's clock, never today's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import AgentMeta, AgentRef, iso
from bench_core.evals.judge import ModelJudge
from bench_core.evals.session_judge import judge_sessions
from bench_core.ports.llm import Completion
from bench_core.runtime.adapters import Services
from bench_core.runtime.jobs import LocalJobs
from bench_core.settings import JudgeSettings, Settings
from bench_core.workflows.local import LocalRunner

from tests.factories import BASE, clean, task_events

REF = AgentRef("alice", "agent-1")


class Model:
    """An LLM port answering every judge prompt with one verdict, keeping the prompts."""

    label = "openai_compat:test"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, system: str, messages: list[Any], *, max_tokens: int) -> Completion:
        self.prompts.append(messages[0]["content"])
        return Completion('{"score": 0.9, "reasoning": "The user got the river."}', 1000, 100)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[tuple[Services, FixedClock]]:
    clock = FixedClock(BASE)
    settings = Settings(data_dir=tmp_path, judge=JudgeSettings(daily_budget_usd=0.001))
    s = Services.from_settings(settings, clock)
    yield s.provide(judge=ModelJudge(Model(), max_attempts=1, price_per_mtok_usd=1.0,
                                     clock=clock)), clock
    s.close()


def chat(services: Services, session: str, turns: list[tuple[str, str]]) -> None:
    events = []
    for n, (asked, answered) in enumerate(turns):
        start, end = task_events(f"{session}-{n}", "answer", input=asked, output=answered)
        events += [{**start, "session_id": session}, end]
    services.store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))


def verdict(services: Services, session: str) -> Any:
    kept, _ = services.store.runs.session_runs(REF, session, limit=10)
    return kept.eval if kept is not None else None


def test_a_sessions_verdict_counts_in_the_days_spend_and_the_budget_stops_the_next(
        services: tuple[Services, FixedClock]) -> None:
    s, clock = services
    chat(s, "chat-1", [("Where is Lisbon?", "In Portugal."), ("And its river?", "The Tagus.")])
    clock.set(BASE + timedelta(hours=1))
    assert judge_sessions(s, {})["sessions_judged"] == {"scored": 1}
    chat(s, "chat-2", [("Hello", "Hi")])  # the budget is spent by the next round
    assert judge_sessions(s, {})["sessions_judged"] == {"skipped": 1}
    first, second = verdict(s, "chat-1"), verdict(s, "chat-2")
    assert first.status == "scored" and first.score == 0.9 and first.cost_usd == pytest.approx(0.0011)
    assert s.store.evals.judge_spend(REF, iso(clock.now())[:10]) == pytest.approx(0.0011)
    assert second.status == "skipped" and "daily judge budget" in second.reason
    (prompt,) = s.judge.llm.prompts  # type: ignore[attr-defined]
    assert prompt.index("Where is Lisbon?") < prompt.index("In Portugal.") < prompt.index(
        "And its river?") < prompt.index("The Tagus.")
    assert "A conversation of 2 turns" in prompt


def test_a_sample_rate_of_zero_skips_the_session(services: tuple[Services, FixedClock]) -> None:
    s, clock = services
    chat(s, "chat-1", [("Where is Lisbon?", "In Portugal.")])
    s.store.agents.update_agent(REF, {"judge_sample_rate": 0.0})
    clock.set(BASE + timedelta(hours=1))
    judge_sessions(s, {})
    assert verdict(s, "chat-1").status == "skipped"
    assert "not sampled" in verdict(s, "chat-1").reason
    assert s.judge.llm.prompts == []  # type: ignore[attr-defined]


def test_the_local_runners_hourly_round_judges_the_sessions_that_ended(
        services: tuple[Services, FixedClock]) -> None:
    s, clock = services
    chat(s, "chat-1", [("Where is Lisbon?", "In Portugal.")])
    runner = LocalRunner(LocalJobs(s), workers=1, clock=clock)
    runner.scheduled_round()
    assert verdict(s, "chat-1") is None, "not idle yet"
    clock.set(BASE + timedelta(minutes=45))
    runner.scheduled_round()
    assert verdict(s, "chat-1").status == "scored"
