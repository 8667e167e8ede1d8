"""The Store contract for sessions, on every adapter: a run's session and user are its root's as
first recorded; each session's counters are kept as its runs finish; a session's finished runs
come back in the order they started; the sessions list is newest first, paged and filtered."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.sessions import SessionFilter
from bench_core.ports.store import Store

from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")


def ingest(store: Store, events: list[dict[str, Any]]) -> None:
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(events))


def turn(run: str, session: str | None, user: str | None = "u-1", *, status: str = "success",
         cost: float | None = None, tokens: int = 0, parent: str | None = None
         ) -> list[dict[str, Any]]:
    """A run begun in `session` (on its start event, as the SDK sends it)."""
    start, *rest = task_events(run, "answer", status=status, cost=cost, parent=parent)
    start = {**start, **({"session_id": session} if session else {}),
             **({"user_id": user} if user else {})}
    if tokens:
        rest.insert(0, ev("task.log", run, data={
            "label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
            "input_tokens": tokens, "output_tokens": 0}))
    return [start, *rest]


def test_a_runs_session_is_its_roots_as_first_recorded(store: Store) -> None:
    start, *rest = turn("r1", "s-1", "u-1")
    ingest(store, [start])
    ingest(store, [{**rest[0], "session_id": "s-2", "user_id": "u-2"}])  # later: s-1 stays
    root = store.ingest.get_task(REF, "r1")
    assert root is not None and (root.session_id, root.user_id) == ("s-1", "u-1")


def test_a_sessions_runs_come_back_in_order_with_its_counters(store: Store) -> None:
    ingest(store, turn("r1", "s-1", cost=0.5, tokens=100))
    ingest(store, turn("r2", "s-1", status="failed", cost=0.25) + turn("c1", None, parent="r2"))
    ingest(store, turn("r3", "s-2"))
    started, *_ = turn("r4", "s-1")
    ingest(store, [started])  # still running: not yet part of its session's list
    ingest(store, turn("r0", None))
    stats, runs = store.runs.session_runs(REF, "s-1", limit=10)
    assert [r.run_id for r in runs] == ["r1", "r2"]
    assert [r.status for r in runs] == ["success", "failed"]
    assert runs[0].cost_usd == 0.5 and runs[0].tokens == 100 and runs[0].name == "answer"
    assert stats is not None
    assert (stats.runs, stats.successes, stats.tokens, stats.user_id) == (2, 1, 100, "u-1")
    assert abs(stats.cost_usd_total - 0.75) < 1e-9
    assert stats.duration_ms_total == 200
    assert stats.first_at == runs[0].started_at and stats.last_at == runs[1].ended_at
    assert store.runs.session_runs(REF, "s-1", limit=1)[1][0].run_id == "r1"
    assert store.runs.session_runs(REF, "nope", limit=10) == (None, [])
    assert store.runs.session_runs(AgentRef("alice", "other"), "s-1", limit=10) == (None, [])


def test_the_sessions_list_is_newest_first_paged_and_filtered(store: Store) -> None:
    for n in range(5):
        ingest(store, turn(f"r{n}", f"s-{n}", "u-a" if n % 2 else "u-b",
                           status="failed" if n == 3 else "success"))
    first = store.runs.list_sessions(REF, SessionFilter(), limit=2)
    assert [s.session_id for s in first.sessions] == ["s-4", "s-3"]
    second = store.runs.list_sessions(REF, SessionFilter(), limit=2, cursor=first.next_cursor)
    assert [s.session_id for s in second.sessions] == ["s-2", "s-1"]
    last = store.runs.list_sessions(REF, SessionFilter(), limit=2, cursor=second.next_cursor)
    assert [s.session_id for s in last.sessions] == ["s-0"] and last.next_cursor is None
    by_user = store.runs.list_sessions(REF, SessionFilter(user_id="u-a"), limit=10)
    assert [s.session_id for s in by_user.sessions] == ["s-3", "s-1"]
    failed = store.runs.list_sessions(REF, SessionFilter(status="failed"), limit=10)
    assert [s.session_id for s in failed.sessions] == ["s-3"]
    fine = store.runs.list_sessions(REF, SessionFilter(status="success"), limit=10)
    assert [s.session_id for s in fine.sessions] == ["s-4", "s-2", "s-1", "s-0"]
    s1, s3 = (store.runs.session_runs(REF, f"s-{n}", limit=1)[0] for n in (1, 3))
    assert s1 is not None and s3 is not None
    window = SessionFilter(since=s1.first_at, until=s3.first_at)
    assert [s.session_id for s in store.runs.list_sessions(REF, window, limit=10).sessions] \
        == ["s-2", "s-1"]


def test_the_original_clients_metadata_names_the_session(store: Store) -> None:
    events = task_events("r1", "answer")
    events[-1] = {**events[-1], "data": {"sessionId": "chat/7", "userId": 42}}
    ingest(store, events)
    root = store.ingest.get_task(REF, "r1")
    assert root is not None and (root.session_id, root.user_id) == ("chat-7", "42")
    assert [r.run_id for r in store.runs.session_runs(REF, "chat-7", limit=5)[1]] == ["r1"]


def test_a_session_named_on_a_subtask_climbs_to_its_runs_root(store: Store) -> None:
    """As OTLP exporters send a trace span by span, each ending before its parent: the model
    call names the conversation, the root (sent last) names none."""
    ingest(store, turn("call", "conv-9", "u-9", parent="step"))
    ingest(store, turn("step", None, None, parent="root"))
    ingest(store, turn("root", None, None))
    ingest(store, turn("call-2", "conv-9", None, parent="root-2") + turn("root-2", None, None))
    root = store.ingest.get_task(REF, "root")
    assert root is not None and (root.session_id, root.user_id) == ("conv-9", "u-9")
    stats, runs = store.runs.session_runs(REF, "conv-9", limit=10)
    assert [r.run_id for r in runs] == ["root", "root-2"]
    assert stats is not None and stats.runs == 2


def test_sessions_idle_since_their_last_run_are_due_for_a_verdict_until_judged(
        store: Store) -> None:
    """`idle_sessions` finds every agent's sessions whose last run ended before the moment and
    that no verdict covers, oldest first; a verdict takes one off until a later run ends."""
    from bench_core.domain.models import EvalResult

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
