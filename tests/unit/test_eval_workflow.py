"""The eval steps, run directly over a real SQLite store with a scripted model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.privacy import HIDDEN, Viewer, task_view
from bench_core.evals import workflow
from bench_core.ingest.pipeline import queue_evals
from bench_core.ports.llm import Completion, LLMUnavailable
from bench_core.ports.workflows import eval_start
from bench_core.reads.agents import agent_summary
from bench_core.runtime.adapters import Services
from bench_core.settings import JudgeSettings, Settings

from tests.factories import clean, task_events

REF = AgentRef("alice", "agent-1")


class ScriptedLLM:
    """A model that answers from a script (the last answer repeats), or is unavailable."""

    label = "openai_compat:scripted"

    def __init__(self, *answers: str, tokens: tuple[int, int] = (100, 20)) -> None:
        self.answers = list(answers)
        self.tokens = tokens
        self.calls = 0

    def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
        self.calls += 1
        if not self.answers:
            raise LLMUnavailable("scripted outage")
        text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return Completion(text, *self.tokens)


def verdict(score: float) -> str:
    return json.dumps({"score": score, "reasoning": f"It deserves {score}."})


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    yield s
    s.close()


def with_llm(services: Services, llm: ScriptedLLM, price: float = 0.72, **judge: object) -> Services:
    settings = replace(services.settings, llm=replace(services.settings.llm, price_per_mtok_usd=price),
                       judge=replace(JudgeSettings(), **judge))
    return Services(settings, services.store).provide(llm=llm)


def ingest(services: Services, *tasks: str, status: str = "success", output: object = "an answer",
           slug: str = "agent-1") -> None:
    events = [e for t in tasks for e in task_events(t, status=status, output=output)]
    services.store.ingest.ingest("alice", AgentMeta(slug=slug), clean(events))


def run(services: Services, task_id: str, **options: object) -> str:
    """What the workflow did with the run `task_id`, judged alone."""
    final = workflow.run_eval(services, eval_start(REF.path, [task_id], **options))
    assert final["next"] == "done"
    return final["outcomes"][task_id]


def test_offline_judge_scores_a_finished_run_and_labels_it(services: Services) -> None:
    ingest(services, "t1")
    assert run(services, "t1") == "scored"
    result = services.store.ingest.get_task(REF, "t1").eval
    assert (result.status, result.judge, result.score) == ("scored", "heuristic-v1", 1.0)
    assert result.cost_usd == 0 and result.input_tokens == 0
    summary = agent_summary(services.store.agents.get_agent(REF), Viewer())
    assert summary["avg_eval_score"] == 1.0 and summary["avg_eval_score_judge"] == "heuristic-v1"
    assert summary["judged_share"] == 1.0


def test_a_model_judge_records_its_tokens_and_cost_on_task_and_agent(services: Services) -> None:
    ingest(services, "t1")
    s = with_llm(services, ScriptedLLM(verdict(0.6)))
    run(s, "t1")
    result = s.store.ingest.get_task(REF, "t1").eval
    assert (result.score, result.judge, result.input_tokens, result.output_tokens) == \
        (0.6, "openai_compat:scripted", 100, 20)
    assert result.cost_usd == pytest.approx(120 * 0.72 / 1e6)
    evals = agent_summary(s.store.agents.get_agent(REF), Viewer())["evals"]
    assert evals["judge_tokens"] == 120 and evals["judge_cost_usd"] == pytest.approx(result.cost_usd, abs=1e-6)


def test_an_invalid_answer_ends_unscored_and_never_enters_the_average(services: Services) -> None:
    ingest(services, "t1", "t2")
    s = with_llm(services, ScriptedLLM(verdict(0.5), "not json at all"), max_attempts=2)
    run(s, "t1")
    run(s, "t2")
    assert s.store.ingest.get_task(REF, "t2").eval.status == "unscored"
    assert "not valid JSON" in s.store.ingest.get_task(REF, "t2").eval.reason
    summary = agent_summary(s.store.agents.get_agent(REF), Viewer())
    assert summary["avg_eval_score"] == 0.5 and summary["eval_count"] == 1
    assert summary["evals"]["unscored"] == 1 and summary["judged_share"] == 1.0


def test_an_unavailable_judge_leaves_the_task_pending_for_the_sweep(services: Services) -> None:
    ingest(services, "t1")
    s = with_llm(services, ScriptedLLM())
    with pytest.raises(LLMUnavailable):
        run(s, "t1")
    assert s.store.ingest.get_task(REF, "t1").eval is None
    assert s.store.evals.pending_evals("2026-01-01", "2027-01-01", 10) == [(REF, ["t1"])]


def test_a_judged_task_is_not_judged_again_unless_forced(services: Services) -> None:
    ingest(services, "t1")
    llm = ScriptedLLM(verdict(0.3), verdict(0.8))
    s = with_llm(services, llm)
    run(s, "t1")
    assert run(s, "t1") == "already scored" and llm.calls == 1
    run(s, "t1", force=True)
    stats = s.store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_score_sum) == (1, pytest.approx(0.8))


def test_running_and_unknown_tasks_are_left_alone(services: Services) -> None:
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("open")[:1]))
    assert run(services, "open") == "no finished task to judge"
    assert run(services, "nope") == "no finished task to judge"


def test_a_spent_daily_budget_skips_tasks_and_says_so(services: Services) -> None:
    ingest(services, "t1", "t2")
    s = with_llm(services, ScriptedLLM(verdict(0.9), tokens=(600_000, 400_000)), price=0.72,
                 daily_budget_usd=0.5)
    run(s, "t1")  # costs $0.72: the budget is spent after it
    outcome = run(s, "t2")
    result = s.store.ingest.get_task(REF, "t2").eval
    assert outcome == "skipped" and result.status == "skipped" and result.score is None
    assert "budget" in result.reason
    evals = agent_summary(s.store.agents.get_agent(REF), Viewer())["evals"]
    assert (evals["scored"], evals["skipped"], evals["judged_share"]) == (1, 1, 0.5)


def test_the_owners_sampling_rate_decides_the_same_way_every_time(services: Services) -> None:
    ingest(services, *[f"t{i}" for i in range(40)])
    services.store.agents.update_agent(REF, {"judge_sample_rate": 0.5})
    outcomes = [run(services, f"t{i}") for i in range(40)]
    assert 5 < outcomes.count("skipped") < 35 and outcomes.count("scored") + outcomes.count("skipped") == 40
    again = [run(services, f"t{i}", force=True) for i in range(40)]
    assert [o == "skipped" for o in outcomes] == [o in ("skipped", "kept the earlier result")
                                                  for o in again]


def test_a_zero_budget_turns_judging_off_for_the_agent(services: Services) -> None:
    ingest(services, "t1")
    services.store.agents.update_agent(REF, {"judge_daily_budget_usd": 0.0})
    assert run(services, "t1") == "skipped"


def test_reasoning_written_while_outputs_are_hidden_stays_private(services: Services) -> None:
    ingest(services, "t1", status="failed", output="secret stack trace")
    services.store.agents.update_agent(REF, {"hide_outputs": True})
    run(services, "t1")
    task = services.store.ingest.get_task(REF, "t1")
    assert task.eval.private and "secret" in task.eval.reasoning
    agent = services.store.agents.update_agent(REF, {"hide_outputs": False})
    public = task_view(task, agent, Viewer())["eval"]
    assert public["reasoning"] == HIDDEN and public["score"] == 0.0
    assert task_view(task, agent, Viewer("alice"))["eval"]["reasoning"].startswith("The task failed")


def test_queue_evals_starts_evals_of_runs_only_unless_subtasks_are_configured(
        services: Services) -> None:
    started: list[tuple[AgentRef, list[str]]] = []

    class Recorder:
        def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                        private: bool | None = None) -> None:
            started.append((ref, task_ids))

        def start_clusters(self, refs: list[AgentRef]) -> None:
            raise AssertionError("not expected")

    outcome = services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
        task_events("sub", parent="root") + task_events("root")))
    queue_evals(services.provide(workflows=Recorder()), REF, outcome)
    with_subtasks = Services(replace(services.settings, judge=JudgeSettings(subtasks=True)),
                             services.store).provide(workflows=Recorder())
    queue_evals(with_subtasks, REF, outcome)
    assert started == [(REF, ["root"]), (REF, ["sub", "root"])]


def test_a_failing_start_never_fails_the_ingest(services: Services) -> None:
    class Broken:
        def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                        private: bool | None = None) -> None:
            raise RuntimeError("state machine gone")

    outcome = services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("t1")))
    queue_evals(services.provide(workflows=Broken()), REF, outcome)


class Started:
    """A workflows port that records what it was asked to start."""

    def __init__(self) -> None:
        self.started: list[tuple[list[str], bool | None]] = []

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None) -> None:
        self.started.append((task_ids, private))


def test_runs_the_budget_leaves_out_are_recorded_skipped_at_ingest_and_start_nothing(
        services: Services) -> None:
    starter = Started()
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("t0")[:1]))
    services.store.agents.update_agent(REF, {"judge_sample_rate": 0.5, "hide_outputs": True})
    outcome = services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
        [e for t in [f"t{i}" for i in range(20)] for e in task_events(t)]))
    queue_evals(services.provide(workflows=starter), REF, outcome)
    (judged, private), = starter.started
    skipped = {t.task_id for t in (services.store.ingest.get_task(REF, f"t{i}") for i in range(20))
               if t.eval is not None}
    assert skipped and judged and skipped.isdisjoint(judged) and len(skipped) + len(judged) == 20
    assert private is True
    result = services.store.ingest.get_task(REF, next(iter(skipped))).eval
    assert (result.status, result.judge) == ("skipped", "budget") and "sampl" in result.reason
    assert agent_summary(services.store.agents.get_agent(REF), Viewer())["evals"]["skipped"] == len(skipped)
    services.store.agents.update_agent(REF, {"judge_daily_budget_usd": 0.0})
    more = services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("late")))
    queue_evals(services.provide(workflows=starter), REF, more)
    assert len(starter.started) == 1  # a spent budget starts no workflow either
    assert services.store.ingest.get_task(REF, "late").eval.status == "skipped"


def test_the_runs_of_one_batch_are_judged_and_recorded_together(services: Services) -> None:
    ingest(services, "t1", "t2", "t3")
    llm = ScriptedLLM(verdict(0.2), verdict(0.9), verdict(0.6))
    s = with_llm(services, llm)
    final = workflow.run_eval(s, eval_start(REF.path, ["t1", "t2", "t3"], private=False))
    assert sorted(final["outcomes"].values()) == ["scored"] * 3 and llm.calls == 3
    stats = s.store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_score_sum) == (3, pytest.approx(1.7))
    assert s.store.evals.judge_spend(REF, s.store.ingest.get_task(REF, "t1").eval.at[:10]) > 0


def test_a_judge_reached_for_some_runs_records_them_and_leaves_the_rest_pending(
        services: Services) -> None:
    ingest(services, "t1", "t2")

    class Flaky(ScriptedLLM):
        def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201
            if "t2" in str(messages):
                raise LLMUnavailable("throttled")
            return super().complete(system, messages, max_tokens=max_tokens)

    s = with_llm(services, Flaky(verdict(0.7)))
    final = workflow.run_eval(s, eval_start(REF.path, ["t1", "t2"], queued_at="2026-01-02T00:00:00.000Z"))
    assert final["outcomes"] == {"t1": "scored", "t2": "left for later"}
    assert s.store.ingest.get_task(REF, "t2").eval is None
    assert s.store.evals.pending_evals("2000-01-01", "2999-01-01", 10) == [(REF, ["t2"])]
