"""The Store contract for a session's verdict (`EvalStore.idle_sessions`,
`record_session_eval`), on every adapter: a session is due once its last run has ended and no
verdict covers it, oldest first, and a later run makes it due again."""

from __future__ import annotations

from bench_core.domain.models import AgentMeta, EvalResult
from bench_core.domain.sessions import SessionFilter
from bench_core.ports.store import Store

from tests.contract.store.test_runs_sessions import REF, ingest, turn
from tests.factories import clean


def test_sessions_idle_since_their_last_run_are_due_for_a_verdict_until_judged(
        store: Store) -> None:
    """`idle_sessions` finds every agent's sessions whose last run ended before the moment and
    that no verdict covers, oldest first; a verdict takes one off until a later run ends."""
    ingest(store, turn("r1", "s-1") + turn("r2", "s-1"))
    store.ingest.ingest("alice", AgentMeta(slug="agent-2"), clean(turn("q1", "s-9")))
    ingest(store, turn("r3", "s-2"))
    s1, _ = store.runs.session_runs(REF, "s-1", limit=10)
    s2, _ = store.runs.session_runs(REF, "s-2", limit=10)
    assert s1 is not None and s2 is not None and s1.last_at and s2.last_at
    assert s1.eval is None and s1.judged_through is None
    due = store.evals.idle_sessions("9999", limit=10)
    assert [(d.ref.slug, d.session_id) for d in due] == [
        ("agent-1", "s-1"), ("agent-2", "s-9"), ("agent-1", "s-2")]
    assert due[0].last_at == s1.last_at
    assert [d.session_id for d in store.evals.idle_sessions(s2.last_at, limit=10)] == [
        "s-1", "s-9"]  # s-2's last run ended at that moment, not before
    assert len(store.evals.idle_sessions("9999", limit=2)) == 2

    day = s1.last_at[:10]
    spent = store.evals.judge_spend(REF, day)
    verdict = EvalResult(status="scored", judge="heuristic-v1", at=s1.last_at, score=0.75,
                         reasoning="The goal was met by the last turn.", input_tokens=100,
                         output_tokens=20, cost_usd=0.001, private=True)
    assert store.evals.record_session_eval(REF, "s-1", verdict, s1.last_at)
    assert not store.evals.record_session_eval(REF, "nope", verdict, s1.last_at)
    assert abs(store.evals.judge_spend(REF, day) - spent - 0.001) < 1e-9
    assert [d.session_id for d in store.evals.idle_sessions("9999", limit=10)] == ["s-9", "s-2"]
    kept, _ = store.runs.session_runs(REF, "s-1", limit=10)
    assert kept is not None and kept.eval == verdict and kept.judged_through == s1.last_at
    listed = store.runs.list_sessions(REF, SessionFilter(), limit=10).sessions
    assert {s.session_id: s.eval for s in listed}["s-1"] == verdict

    ingest(store, turn("r4", "s-1"))  # a later run: due again, its earlier verdict kept
    again, _ = store.runs.session_runs(REF, "s-1", limit=10)
    assert again is not None and again.eval == verdict and again.runs == 3
    assert [d.session_id for d in store.evals.idle_sessions("9999", limit=10)] == [
        "s-9", "s-2", "s-1"]


def test_a_session_still_going_is_not_idle_whenever_its_first_run_ended(store: Store) -> None:
    ingest(store, turn("r1", "s-1"))
    first, _ = store.runs.session_runs(REF, "s-1", limit=10)
    ingest(store, turn("r2", "s-1"))  # a later batch: the session goes on
    kept, _ = store.runs.session_runs(REF, "s-1", limit=10)
    assert first is not None and kept is not None and first.last_at and kept.last_at
    assert first.last_at < kept.last_at
    between = first.last_at + "~"  # after the first run's end, before the second's
    assert between < kept.last_at
    assert store.evals.idle_sessions(between, limit=10) == []
    assert store.evals.idle_sessions(between, limit=10) == [], "asked again: still going"
    (due,) = store.evals.idle_sessions("9999", limit=10)
    assert (due.session_id, due.last_at) == ("s-1", kept.last_at)
