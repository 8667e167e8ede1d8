"""How the SQLite store lays out what it keeps (`store/sqlite/packing.py`, `repack.py`): rows that
fit their pages, large content on full overflow pages, and an older file packed when it opens,
in a migration that picks up where an interrupted one stopped."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from bench_core.domain.field_limits import dumps
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.sqlite import ingest as sqlite_ingest
from bench_core.store.sqlite import repack
from bench_core.store.sqlite.connection import Database
from bench_core.store.sqlite.ingest import EVENT_COLS, SqliteIngest
from bench_core.store.sqlite.packing import event_body, load, pack_body
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_ids import read_id
from bench_core.store.sqlite.timeseries import COST_SQUARES_SCHEMA, TIMESERIES_SCHEMA

from tests.factories import clean, ev, task_events
from tests.sqlite_layouts import killed_mid_chunk, legacy_events, text_task_ids, todays_events

REF = AgentRef("alice", "agent-1")
PACKED = MIGRATIONS.index(repack.repack)
"""The version of a file from before packing."""


def chat_span(task_id: str, parent: str, input: Any = None) -> list[dict[str, Any]]:
    """A span as OTLP makes them: metadata of ids and attributes, an evidence log, an end."""
    metadata = {"trace_id": task_id[:32].ljust(32, "0"), "span_id": "58f6bbc6cfa2b373",
                "service": "perf-agent", "attributes": {
                    "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 2400,
                    "gen_ai.usage.output_tokens": 200},
                "_bench_public": ["gen_ai.operation.name", "gen_ai.request.model"]}
    evidence = {"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
                "operation": "chat", "input_tokens": 2400, "output_tokens": 200,
                "cost_usd": 0.00048, "price_source": "bench price table 2026-12-02"}
    return [ev("task.start", task_id, name="chat gpt-4o-mini", parent_task_id=parent,
               input=input),
            ev("task.log", task_id, data=evidence),
            ev("task.end", task_id, status="success", duration_ms=150, output=None,
               data=metadata)]


def spans(count: int, input: Any = None) -> list[dict[str, Any]]:
    events = task_events("0123456789abcdef0123456789abcdef-9bbd0140bd08b39b", "invoke_agent")
    for i in range(count):
        events += chat_span(f"0123456789abcdef0123456789abcd{i:02x}-{i:016x}",
                            "0123456789abcdef0123456789abcdef-9bbd0140bd08b39b", input)
    return events


def pages(path: Path, where: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM dbstat WHERE {where}").fetchone()[0])


def test_chat_spans_fit_their_pages_and_large_content_fills_whole_overflow_pages(
        tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(spans(120)))
    assert pages(tmp_path / "bench.db", "pagetype = 'overflow'") == 0
    for size in (1_100, 5_000, 20_000, 100_000):  # through the cap of a field
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"),
                            clean(spans(3, input={"text": "x" * size})))
    store.close()
    assert pages(tmp_path / "bench.db", "pagetype = 'overflow'") > 0
    assert pages(tmp_path / "bench.db", "pagetype = 'overflow' AND unused > pgsize / 2") == 0


@pytest.mark.parametrize("body", [
    {"id": "e1", "kind": "task.start", "ts": "2026-12-02T16:00:00.000Z", "task_id": "t",
     "name": "ünïcode ✓", "input": {"q": "x" * 300}},
    {"id": "e2", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z", "data": None},
    {"id": "e3", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z", "task_id": None},
    {"id": "e4", "kind": "task.end", "ts": "2026-12-02T16:00:00.000Z", "task_id": "t"},
])
def test_an_event_body_comes_back_as_it_was_sent(body: dict[str, Any]) -> None:
    task_id = body.get("task_id")
    stored = pack_body(dumps(body), body["id"], body["kind"], body["ts"], task_id)
    assert isinstance(stored, bytes)
    back = event_body(stored, body["id"], body["kind"], body["ts"], task_id)
    assert back == body and list(back) == list(body)


def test_a_body_that_does_not_lead_with_its_columns_is_kept_whole() -> None:
    body = dumps({"kind": "custom", "id": "e1", "ts": "2026-12-02T16:00:00.000Z"})
    assert pack_body(body, "e1", "custom", "2026-12-02T16:00:00.000Z", None) == body


def old_database(path: Path) -> dict[str, Any]:
    """A file as Bench wrote it before packing: the schema of the migrations before it, every
    JSON value text; and what today's reads give of it (`everything`)."""
    db = Database(path)
    db.migrate(MIGRATIONS[:PACKED], lambda conn, version: None)
    with db.write() as conn:  # what today's ingest writes that came after packing (counters
        # over time, grouped events: taken back below)
        todays_events(conn)
        conn.execute(TIMESERIES_SCHEMA)
        for column in COST_SQUARES_SCHEMA.split(";")[:-1]:
            conn.execute(column)
        conn.execute("ALTER TABLE tasks ADD COLUMN session_id TEXT")
        conn.execute("ALTER TABLE tasks ADD COLUMN user_id TEXT")
    writer = SqliteIngest(db)
    # without the search index's tail (`run_text.py`), which came after packing
    with mock.patch.multiple(sqlite_ingest, index_new_spans=lambda conn: None,
                             unindex=lambda *_: "[]"):
        for i in range(4):
            writer.ingest("alice", AgentMeta(slug="agent-1"), clean(spans(10)))
            writer.ingest("alice", AgentMeta(slug=f"agent-{i + 2}"),
                          clean([*task_events(f"run-{i}", cost=0.5), ev("custom", data={"n": i})]))
    expected = everything(writer)
    with db.write() as conn:
        text_task_ids(conn)
        legacy_events(conn)
        for row in conn.execute(f"SELECT seq, {EVENT_COLS} FROM events").fetchall():
            conn.execute("UPDATE events SET body = ? WHERE seq = ?",
                         (dumps(event_body(*row[1:])), row[0]))
        for column in repack.PACKED_COLUMNS:
            for agent_id, task_id, value in conn.execute(
                    f"SELECT agent_id, task_id, {column} FROM tasks").fetchall():
                conn.execute(f"UPDATE tasks SET {column} = ? WHERE agent_id = ? AND task_id = ?",
                             (None if value is None else dumps(load(value)), agent_id, task_id))
        assert conn.execute("SELECT count(*) FROM events WHERE typeof(body) != 'text'"
                            ).fetchone()[0] == 0
        conn.execute("DROP TABLE agent_series")
    db.close()
    return expected


def everything(store: SqliteIngest) -> dict[str, Any]:
    """All that the store's reads of events and tasks give of the file."""
    out: dict[str, Any] = {}
    for slug in ("agent-1", "agent-2", "agent-3", "agent-4", "agent-5"):
        ref = AgentRef("alice", slug)
        ids = [read_id(r[0]) for r in store.db.reader().execute(
            "SELECT task_id FROM tasks JOIN agents ON agents.id = agent_id WHERE slug = ? "
            "ORDER BY task_id", (slug,))]
        out[slug] = {"recent": store.recent_events(ref, 1_000),
                     "tasks": [store.get_task(ref, t) for t in ids],
                     "events": [store.task_events(ref, t) for t in ids],
                     "roots": store.list_tasks(ref, limit=100),
                     "failed": store.list_tasks(ref, status="failed", limit=100)}
    return out


class Stop(Exception):
    """Stands for the process being killed."""


def stop_after(monkeypatch: pytest.MonkeyPatch, name: str, calls: int) -> None:
    """`repack.<name>` raises `Stop` once it has run `calls` times."""
    real, done = getattr(repack, name), []

    def stopping(*args: Any) -> Any:
        if len(done) == calls:
            raise Stop(name)
        done.append(1)
        return real(*args)

    monkeypatch.setattr(repack, name, stopping)


def test_an_old_database_is_packed_on_open_by_a_migration_that_resumes_where_it_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bench.db"
    expected = old_database(path)
    with sqlite3.connect(path) as conn:
        assert "WITHOUT ROWID" in conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'tasks'").fetchone()[0]
    monkeypatch.setattr(repack, "CHUNK", 7)
    for name, calls in (("_pack_events", 3), ("_copy_tasks", 2)):
        with monkeypatch.context() as stopped:
            stop_after(stopped, name, calls)
            with pytest.raises(Stop):
                SqliteStore.open(path)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == PACKED
    with sqlite3.connect(path) as conn:  # stopped half-way through copying the tasks
        copied = conn.execute("SELECT count(*) FROM tasks_packed").fetchone()[0]
        assert 0 < copied < conn.execute("SELECT count(*) FROM tasks").fetchone()[0]
    store = SqliteStore.open(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert everything(store.ingest) == expected
        conn = store.db.reader()
        assert conn.execute("SELECT count(*) FROM events WHERE typeof(record) != 'blob'"
                            ).fetchone()[0] == 0
        assert "WITHOUT ROWID" not in conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'tasks'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'tasks_packed'"
                            ).fetchone()[0] == 0
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0  # vacuumed
        repack.repack(store.db, len(MIGRATIONS))  # as another process opening it meanwhile
        assert everything(store.ingest) == expected
        events = clean(task_events("new-run"))
        assert store.ingest.ingest("alice", AgentMeta(slug="agent-1"), events).accepted == 2
        assert store.ingest.ingest("alice", AgentMeta(slug="agent-1"), events).duplicates == 2
        assert store.ingest.get_task(REF, "new-run") is not None
    finally:
        store.close()


def test_a_migration_killed_mid_transaction_resumes_from_its_last_commit(tmp_path: Path) -> None:
    """A hard kill (no rollback, no Python cleanup) inside a chunk's transaction: the next
    open finds the chunks before it, not the half-written one, and finishes."""
    path = tmp_path / "bench.db"
    expected = old_database(path)
    killed_mid_chunk(path, "repack", "_copy_tasks",
                     "INSERT INTO tasks_packed (agent_id, task_id, status, sort_ts) "
                     "VALUES (999, 'half-written', 'running', '')", staged="tasks_packed",
                     version=PACKED, copied=8)  # of 15
    store = SqliteStore.open(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert everything(store.ingest) == expected
        assert store.db.reader().execute(
            "SELECT count(*) FROM tasks WHERE task_id = 'half-written'").fetchone()[0] == 0
    finally:
        store.close()


def test_values_packed_in_every_earlier_format_still_read() -> None:
    """Files hold format 1 (a 1 KB window) from before format 2, format 2 from before format 3
    and format 3 from before format 5; all read, and today's is no longer than any."""
    from bench_core.store.sqlite import packing

    text = dumps(chat_span("t", "p")[2]["data"])
    older = [bytes((form,)) + packing._deflate(text.encode(), form) for form in (1, 2, 3)]
    new = packing.pack(text)
    assert isinstance(new, bytes) and new[0] == 5 and len(new) <= min(map(len, older))
    assert load(older[0]) == load(older[1]) == load(older[2]) == load(new) == load(text)


def test_a_packed_value_cut_short_is_refused_not_read_in_part() -> None:
    from bench_core.store.sqlite import packing

    packed = packing.pack(dumps(chat_span("t", "p")[2]["data"]))
    assert isinstance(packed, bytes)
    with pytest.raises(ValueError, match="cut short"):
        load(packed[:-3])


def test_the_offline_judges_evaluation_packs_small() -> None:
    """What every run's root holds when no model judges: a few dozen bytes, not a hundred."""
    from bench_core.store.sqlite import packing

    verdict = {"status": "scored", "judge": "heuristic-v1", "at": "2027-03-01T08:00:00.000Z",
               "score": 1.0, "reasoning": "The task succeeded with a non-empty output; no "
               "warning signs.", "reason": None, "prompt_version": "heuristic-v1",
               "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "attempts": 1,
               "private": True}
    wide = bytes((2,)) + packing._deflate(dumps(verdict).encode(), 2)
    packed = packing.pack_json(verdict)
    assert isinstance(packed, bytes) and len(packed) < 40 < len(wide)
    assert load(packed) == verdict


def test_the_offline_judges_evaluation_of_a_run_without_root_content_packs_small() -> None:
    """An OTLP agent's usual run: its root span holds no content, so the judge reads its model
    calls and says so first (`evals/conversation.py`)."""
    from bench_core.evals.conversation import NOTE
    from bench_core.store.sqlite import packing

    verdict = {"status": "scored", "judge": "heuristic-v1", "at": "2027-03-01T08:00:00.000Z",
               "score": 0.2, "reasoning": f"{NOTE} The task succeeded, but the output is empty.",
               "reason": None, "prompt_version": "heuristic-v1", "input_tokens": 0,
               "output_tokens": 0, "cost_usd": 0.0, "attempts": 1, "private": True}
    judged = bytes((3,)) + packing._deflate(dumps(verdict).encode(), 3)
    packed = packing.pack_json(verdict)
    assert isinstance(packed, bytes) and len(packed) < 45 < 75 < len(judged)
    assert load(packed) == verdict


def test_a_tasks_usage_is_stored_without_its_defaults_and_reads_back_whole(
        tmp_path: Path) -> None:
    """A count reported as 0 stays 0; one no record gave, and no unpriced calls, are left
    out of the row and read back as they were."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        evidence = {"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
                    "operation": "chat", "input_tokens": 0, "output_tokens": 5}
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean([
            ev("task.start", "t1", name="chat"), ev("task.log", "t1", data=evidence),
            ev("task.end", "t1", status="success", duration_ms=1)]))
        task = store.ingest.get_task(REF, "t1")
        assert task is not None and task.evidence is not None
        assert (task.evidence.input_tokens, task.evidence.output_tokens) == (0, 5)
        assert task.evidence.cache_read_input_tokens is None
        assert (task.evidence.calls, task.evidence.unpriced_calls) == (1, 0)
        (stored,) = store.db.reader().execute(
            "SELECT evidence FROM tasks WHERE task_id = 't1'").fetchone()
        assert "null" not in stored and "unpriced_calls" not in stored
    finally:
        store.close()
