"""The Store contract for evaluations, judge spend and failure clusters, on every adapter."""

from __future__ import annotations

import pytest
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult
from bench_core.ports.store import Store

from tests.factories import clean, day_old, task_events

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
WHEN = "2026-12-03T10:00:00.000Z"
EARLY, LATE = "2026-12-01T00:00:00.000Z", "2026-12-31T00:00:00.000Z"


def ingest(store: Store, events, login: str = "alice", slug: str = "agent-1"):
    return store.ingest.ingest(login, AgentMeta(slug=slug), clean(events))


def scored(score: float, judge: str = "heuristic-v1", tokens: int = 0, cost: float = 0.0,
           at: str = WHEN) -> EvalResult:
    return EvalResult(status="scored", judge=judge, at=at, score=score, reasoning="because",
                      prompt_version="judge-v1#abc", input_tokens=tokens, cost_usd=cost,
                      attempts=1)


def other(status: str, reason: str = "why", cost: float = 0.0) -> EvalResult:
    return EvalResult(status=status, judge="heuristic-v1", at=WHEN, reason=reason,  # type: ignore[arg-type]
                      cost_usd=cost, input_tokens=10 if cost else 0)


def test_a_result_is_stored_on_the_task_and_counted_on_the_agent(store: Store) -> None:
    ingest(store, task_events("t1") + task_events("t2"))
    assert store.evals.record_eval(REF, "t1", scored(0.8, tokens=100, cost=0.001)) is True
    assert store.evals.record_eval(REF, "t2", scored(0.4)) is True
    task = store.ingest.get_task(REF, "t1")
    assert task is not None and task.eval is not None
    assert (task.eval.status, task.eval.score, task.eval.reasoning, task.eval.judge) == \
        ("scored", 0.8, "because", "heuristic-v1")
    assert task.eval.prompt_version == "judge-v1#abc"
    listed, _ = store.ingest.list_tasks(REF)
    assert {t.task_id: t.eval.score for t in listed if t.eval} == {"t1": 0.8, "t2": 0.4}
    stats = store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_judge) == (2, "heuristic-v1")
    assert stats.eval_score_sum == pytest.approx(1.2)
    assert (stats.judge_tokens, stats.judge_cost_usd) == (100, pytest.approx(0.001))
    assert store.evals.judge_spend(REF, WHEN[:10]) == pytest.approx(0.001)
    assert store.evals.judge_spend(REF, "2026-12-04") == 0.0


def test_a_rerun_replaces_the_score_without_counting_twice(store: Store) -> None:
    ingest(store, task_events("t1"))
    store.evals.record_eval(REF, "t1", scored(0.2))
    store.evals.record_eval(REF, "t1", scored(0.9, judge="bedrock:m"))
    stats = store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_score_sum) == (1, pytest.approx(0.9))
    assert stats.eval_judge == "mixed"
    assert store.ingest.get_task(REF, "t1").eval.score == 0.9


def test_a_score_is_never_replaced_by_a_skip_or_an_unscored_answer(store: Store) -> None:
    ingest(store, task_events("t1"))
    store.evals.record_eval(REF, "t1", scored(0.7))
    assert store.evals.record_eval(REF, "t1", other("skipped")) is False
    assert store.evals.record_eval(REF, "t1", other("unscored", cost=0.002)) is False
    agent = store.agents.get_agent(REF)
    assert (agent.stats.eval_count, agent.stats.eval_skipped, agent.stats.eval_unscored) == (1, 0, 0)
    assert store.ingest.get_task(REF, "t1").eval.status == "scored"


def test_unscored_and_skipped_results_are_counted_apart_from_scores(store: Store) -> None:
    ingest(store, task_events("t1") + task_events("t2") + task_events("t3"))
    store.evals.record_eval(REF, "t1", other("unscored", "score 2 is outside 0..1", cost=0.003))
    store.evals.record_eval(REF, "t2", other("skipped", "daily judge budget spent"))
    store.evals.record_eval(REF, "t3", other("skipped"))
    store.evals.record_eval(REF, "t3", scored(1.0))  # a later judgement replaces a skip
    s = store.agents.get_agent(REF).stats
    assert (s.eval_count, s.eval_unscored, s.eval_skipped) == (1, 1, 1)
    assert s.eval_score_sum == pytest.approx(1.0)
    assert store.ingest.get_task(REF, "t1").eval.reason == "score 2 is outside 0..1"
    assert store.evals.judge_spend(REF, WHEN[:10]) == pytest.approx(0.003)


def test_subtask_results_are_stored_but_only_runs_make_the_average(store: Store) -> None:
    ingest(store, task_events("sub", parent="root") + task_events("root"))
    assert store.evals.record_eval(REF, "sub", scored(0.1, cost=0.001)) is True
    assert store.ingest.get_task(REF, "sub").eval.score == 0.1
    s = store.agents.get_agent(REF).stats
    assert (s.eval_count, s.judge_cost_usd) == (0, pytest.approx(0.001))


def test_unknown_and_unfinished_tasks_take_no_result(store: Store) -> None:
    ingest(store, task_events("done")[:1])  # started, never ended
    assert store.evals.record_eval(REF, "done", scored(0.5)) is False
    assert store.evals.record_eval(REF, "missing", scored(0.5)) is False
    assert store.evals.record_eval(AgentRef("bob", "x"), "done", scored(0.5)) is False
    assert store.agents.get_agent(REF).stats.eval_count == 0


def test_pending_evals_are_finished_runs_without_a_result_until_recorded(store: Store) -> None:
    ingest(store, task_events("t1") + task_events("t2") + task_events("sub", parent="t1")
           + task_events("open")[:1])
    ingest(store, task_events("b1"), login="bob", slug="b")
    store.evals.mark_evals_pending(REF, ["t1", "t2"], WHEN)
    store.evals.mark_evals_pending(AgentRef("bob", "b"), ["b1"], WHEN)
    pending = {(ref, tuple(sorted(ids))) for ref, ids in store.evals.pending_evals(EARLY, LATE, 100)}
    assert pending == {(REF, ("t1", "t2")), (AgentRef("bob", "b"), ("b1",))}
    store.evals.record_eval(REF, "t1", scored(0.5))
    assert REF in {ref for ref, _ in store.evals.pending_evals(EARLY, LATE, 100)}
    store.evals.record_eval(REF, "t2", other("skipped"))
    assert store.evals.pending_evals(EARLY, LATE, 100) == [(AgentRef("bob", "b"), ["b1"])]
    assert store.evals.pending_evals(LATE, "2027-01-01T00:00:00.000Z", 100) == []
    assert len(store.evals.pending_evals(EARLY, LATE, 1)) == 1


def test_cluster_candidates_are_failed_and_low_scored_runs_newest_first(store: Store) -> None:
    ingest(store, task_events("f1", status="failed", output="TimeoutError")
           + task_events("ok", output="fine") + task_events("low", output="meh")
           + task_events("f2", status="failed", output="429")
           + task_events("fsub", parent="ok", status="failed"))
    store.evals.record_eval(REF, "low", scored(0.2))
    store.evals.record_eval(REF, "ok", scored(0.9))
    ids = [t.task_id for t in store.evals.cluster_candidates(REF, 10)]
    assert ids == ["f2", "low", "f1"]
    assert [t.task_id for t in store.evals.cluster_candidates(REF, 2)] == ["f2", "low"]
    assert store.evals.cluster_candidates(AgentRef("bob", "none"), 10) == []


def test_failed_or_low_scored_results_make_an_agent_due_until_its_insights_are_saved(
        store: Store) -> None:
    ingest(store, task_events("ok") + task_events("f1", status="failed"))
    ingest(store, task_events("b1"), login="bob", slug="b")
    store.evals.record_eval(REF, "ok", scored(0.9))
    store.evals.record_eval(AgentRef("bob", "b"), "b1", scored(0.95))
    assert store.evals.clusters_due(10) == []
    store.evals.record_eval(REF, "f1", scored(0.0))
    assert store.evals.clusters_due(10) == [REF]
    insights = {"computed_at": "2026-12-03T11:00:00.000Z", "clusters": [{"label": "timeouts"}]}
    store.evals.save_insights(REF, insights)
    assert store.evals.get_insights(REF) == insights
    assert store.evals.clusters_due(10) == []
    assert store.evals.get_insights(AgentRef("bob", "b")) is None


def test_a_failure_recorded_while_clustering_keeps_the_agent_due(store: Store) -> None:
    ingest(store, task_events("f1", status="failed"))
    store.evals.record_eval(REF, "f1", scored(0.0, at="2026-12-03T12:00:00.000Z"))
    store.evals.save_insights(REF, {"computed_at": "2026-12-03T11:59:00.000Z", "clusters": []})
    assert store.evals.clusters_due(10) == [REF]


def test_owner_sets_the_judge_budget_and_sampling_rate(store: Store) -> None:
    ingest(store, task_events("t1"))
    agent = store.agents.update_agent(REF, {"judge_daily_budget_usd": 2.5, "judge_sample_rate": 0.25})
    assert (agent.judge_daily_budget_usd, agent.judge_sample_rate) == (2.5, 0.25)
    assert store.agents.get_agent(REF).judge_sample_rate == 0.25


def test_scores_move_the_agent_on_the_eval_score_leaderboard(store: Store) -> None:
    from bench_core.domain.ranking import MIN_RUNS

    store.agents.create_agent(day_old(REF.login, REF.slug))  # a day old: its runs rank it
    ingest(store, [e for i in range(MIN_RUNS) for e in task_events(f"t{i}")])
    for i in range(MIN_RUNS):
        store.evals.record_eval(REF, f"t{i}", scored(0.5))
    (ranked,) = store.leaderboard.leaderboard("score")
    assert ranked.stats.eval_score_sum / ranked.stats.eval_count == pytest.approx(0.5)
    store.evals.record_eval(REF, "t0", scored(1.0))
    (ranked,) = store.leaderboard.leaderboard("score")
    assert ranked.stats.eval_score_sum == pytest.approx(5.5)


def test_results_recorded_together_apply_like_one_by_one_and_clear_their_queue(store: Store) -> None:
    ingest(store, task_events("t1") + task_events("t2") + task_events("t3", status="failed")
           + task_events("open")[:1])
    store.evals.mark_evals_pending(REF, ["t1", "t2", "t3", "open"], WHEN)
    store.evals.record_eval(REF, "t2", scored(0.9))
    recorded = store.evals.record_evals(REF, {
        "t1": scored(0.2, tokens=100, cost=0.001), "t2": other("skipped"),
        "t3": scored(0.6, judge="bedrock:m"), "open": scored(0.5), "nope": scored(0.5)},
        queued=["t1", "t2", "t3", "open"])
    assert recorded == {"t1", "t3"}  # a skip never replaces a score; unfinished, unknown: no
    stats = store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_score_sum) == (3, pytest.approx(1.7))
    assert stats.eval_judge == "mixed" and stats.judge_tokens == 100
    assert [t.task_id for t in store.evals.cluster_candidates(REF, 10)] == ["t3", "t1"]
    assert store.evals.pending_evals(EARLY, LATE, 100) == []
    assert store.evals.record_evals(REF, {}, queued=["t1"]) == set()
