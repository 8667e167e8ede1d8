"""The Store contract for an agent's versions, on every adapter: a run keeps the version of the
batch that first recorded it, and each version's counters (runs, successes, cost, latency,
scores) are kept as runs and their evals are written, newest version first."""

from __future__ import annotations

import pytest
from bench_core.domain import stats
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult
from bench_core.evals import workflow
from bench_core.ports.store import Store
from bench_core.ports.workflows import eval_start
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.factories import clean, ev, task_events
from tests.unit.test_eval_workflow import ScriptedLLM, verdict

REF = AgentRef("alice", "agent-1")
WHEN = "2026-12-03T10:00:00.000Z"


def ingest(store: Store, events, version: str | None):
    return store.ingest.ingest("alice", AgentMeta(slug="agent-1", version=version), clean(events))


def scored(score: float) -> EvalResult:
    return EvalResult(status="scored", judge="heuristic-v1", at=WHEN, score=score,
                      reasoning="because", prompt_version="judge-v1#abc", attempts=1)


def test_each_run_keeps_the_version_that_first_recorded_it(store: Store) -> None:
    start, *rest = task_events("r1")
    ingest(store, [start], "1.0.0")
    ingest(store, rest, "2.0.0")  # the same run, ended by a later process: still 1.0.0's
    ingest(store, task_events("r2") + task_events("c1", parent="r2"), "2.0.0")
    ingest(store, task_events("r3"), None)
    assert store.ingest.get_task(REF, "r1").agent_version == "1.0.0"
    assert store.ingest.get_task(REF, "r2").agent_version == "2.0.0"
    assert store.ingest.get_task(REF, "r3").agent_version is None
    assert {v.version: v.runs for v in store.agents.agent_versions(REF)} == \
        {"1.0.0": 1, "2.0.0": 1}, "a subtask and a run of no version count for none"


def test_a_versions_counters_are_its_runs_and_their_scores(store: Store) -> None:
    ingest(store, task_events("a1", cost=0.5, duration_ms=100)
           + task_events("a2", status="failed", cost=0.25, duration_ms=4000), "v1")
    ingest(store, task_events("b1", cost=0.1, duration_ms=50), "v2")
    assert store.evals.record_eval(REF, "a1", scored(0.9))
    assert store.evals.record_eval(REF, "a2", scored(0.3))
    assert store.evals.record_eval(REF, "a2", scored(0.5)), "a rescore replaces, once"
    newest, older = store.agents.agent_versions(REF)
    assert (newest.version, older.version) == ("v2", "v1"), "the newest version first"
    assert (older.runs, older.successes, older.failures) == (2, 1, 1)
    assert older.cost_usd_total == pytest.approx(0.75)
    assert sum(older.latency_hist) == 2
    assert older.latency_hist[stats.bucket_index(4000)] == 1
    assert (older.eval_count, older.eval_score_sum) == (2, pytest.approx(1.4))
    assert (newest.runs, newest.eval_count) == (1, 0)
    assert newest.first_run_at is not None and older.last_run_at is not None
    assert older.first_run_at <= older.last_run_at < newest.first_run_at


def test_a_replayed_batch_counts_once_for_its_version(store: Store) -> None:
    events = task_events("r1") + [ev("custom")]
    ingest(store, events, "v1")
    ingest(store, events, "v1")
    (only,) = store.agents.agent_versions(REF)
    assert (only.version, only.runs) == ("v1", 1)


def test_an_agent_without_versions_has_none(store: Store) -> None:
    ingest(store, task_events("r1"), None)
    assert store.agents.agent_versions(REF) == []
    assert store.agents.agent_versions(AgentRef("alice", "nobody")) == []


def test_the_eval_workflow_scores_count_for_each_runs_version(store: Store) -> None:
    """Judged as the deployment judges (`evals.workflow`: results recorded against the tasks as
    the judge step read them, carried in the state)."""
    ingest(store, task_events("a1"), "v1")
    ingest(store, task_events("b1") + task_events("b2"), "v2")
    services = Services(Settings(store="memory"), store).provide(
        llm=ScriptedLLM(verdict(0.4), verdict(0.8), verdict(0.6)))
    final = workflow.run_eval(services, eval_start(REF.path, ["a1", "b1", "b2"]))
    assert set(final["outcomes"].values()) == {"scored"}
    scored = {v.version: (v.eval_count, v.eval_score_sum) for v in store.agents.agent_versions(REF)}
    assert scored["v1"][0] == 1 and scored["v2"][0] == 2
    assert scored["v1"][1] + scored["v2"][1] == pytest.approx(1.8)
