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
