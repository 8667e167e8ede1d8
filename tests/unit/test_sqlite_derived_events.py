"""Events whose task's row gives back their fields (`store/sqlite/derived_events.py`): stored
without them, and read back exactly as they were sent, key order included, whatever a later
batch does to their task."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain import field_limits
from bench_core.domain.errors import PayloadTooLarge
from bench_core.domain.field_limits import dumps
from bench_core.domain.models import AgentMeta, AgentRef, CleanEvent, TaskState
from bench_core.store.sqlite import events, slim_events
from bench_core.store.sqlite.ingest import SqliteIngest
from bench_core.store.sqlite.packing import unpack_record
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore

from tests.factories import clean, ev, task_events, ts
from tests.sqlite_layouts import killed_mid_chunk, text_task_ids, written_out_events

SLIMMED = MIGRATIONS.index(slim_events.slim_events)
"""The version of a file from before events without what their tasks give back."""
REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
TRACE = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore.open(tmp_path / "bench.db")
    yield opened
    opened.close()


def _event(event_id: str, kind: str, task_id: str, **fields: Any) -> CleanEvent:
    """An event as `ingest.otlp.mapping` makes one: its fields in the order it sets them."""
    body = {"id": event_id, "kind": kind, "ts": ts(), "task_id": task_id, **fields}
    return CleanEvent(id=event_id, kind=kind, ts=body["ts"], task_id=task_id, body=body)


def span(span_id: str, parent: str | None = None, **end: Any) -> list[CleanEvent]:
    """An OTLP chat span's start, evidence and end."""
    task = f"{TRACE}-{span_id}"
    common: dict[str, Any] = {"name": "chat gpt-4o-mini"}
    if parent is not None:
        common["parent_task_id"] = f"{TRACE}-{parent}"
    evidence = {"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
                "input_tokens": 1200, "output_tokens": 80, "cost_usd": 0.000228}
    metadata = {"trace_id": TRACE, "span_id": span_id, "service": "perf-agent",
                "attributes": {"gen_ai.operation.name": "chat"}}
    return [
        _event(f"{task}:start", "task.start", task, **common,
               input=[{"role": "user", "parts": [{"type": "text", "content": "Plan a trip"}]}]),
        _event(f"{task}:evidence", "task.log", task, **common, data=evidence),
        _event(f"{task}:end", "task.end", task, **{
            **common, "status": "success", "duration_ms": 150.25, "output": None,
            "data": metadata, **end}),
    ]


def entries(store: SqliteStore) -> list[list[Any]]:
    return [entry for (record,) in store.db.reader().execute(
        "SELECT record FROM events ORDER BY seq") for entry in unpack_record(record)[1]]


def assert_read_as_sent(store: SqliteStore, sent: list[CleanEvent]) -> None:
    """Every surface's read of the events gives each back as it was stored before: its body's
    JSON, key order included (the first of an id in its task)."""
    first: dict[tuple[str | None, str], str] = {}
    for event in sent:
        first.setdefault((event.task_id, event.id), dumps(event.body))
    recent = store.ingest.recent_events(REF, 10_000)
    assert sorted(dumps(body) for body in recent) == sorted(first.values())
    for task_id in {task_id for task_id, _ in first if task_id is not None}:
        assert sorted(dumps(body) for body in store.ingest.task_events(REF, task_id)) \
            == sorted(text for (owner, _), text in first.items() if owner == task_id)


def test_a_spans_events_keep_nothing_their_task_row_gives_back(store: SqliteStore) -> None:
    """An OTLP chat span's input, evidence, metadata, name, parent, status and duration are
    its task row's: its entries hold none of them, and read back as they were sent."""
    sent = [*span("a" * 16), *span("b" * 16, parent="a" * 16)]
    store.ingest.ingest("alice", META, sent)
    stored = entries(store)
    assert [entry[3] for entry in stored] == [{}] * 6
    assert [entry[4] for entry in stored[:3]] == ["ni", "nl", "nsuod"]
    assert [entry[4] for entry in stored[3:]] == ["npi", "npl", "npsuod"]
    assert_read_as_sent(store, sent)
    assert [dumps(e) for e in store.ingest.recent_events(REF, 3)] == [
        dumps(e.body) for e in reversed(sent[3:])]


def test_the_sdks_task_reads_back_as_sent_its_exact_fields_given_back(
        store: SqliteStore) -> None:
    """The SDK's start, log and end: what the row gives back exactly is left out; an
    integer duration (its column gives back a float) stays in the entry."""
    sent = clean([*task_events("t1", cost=0.5, output=[1, 2, 3]),
                  ev("task.log", "t1", name="search", data={"label": "found", "value": 3})])
    store.ingest.ingest("alice", META, sent)
    stored = entries(store)
    assert {name for entry in stored for name in entry[3]} <= {"duration_ms"}
    assert_read_as_sent(store, sent)


@pytest.mark.parametrize("end", [
    {"duration_ms": 150},  # an integer: the REAL column gives back 150.0
    {"duration_ms": -0.0},  # SQLite gives back 0.0
    {"name": "another name"},  # the task keeps its start's name
    {"status": "failed", "output": "boom", "data": {"retry": True}, "cost_usd": 0.1},
])
def test_a_field_its_task_gives_back_otherwise_stays_in_the_entry(
        store: SqliteStore, end: dict[str, Any]) -> None:
    sent = span("c" * 16, **end)
    store.ingest.ingest("alice", META, sent)
    assert_read_as_sent(store, sent)


def test_a_later_batch_that_changes_its_task_leaves_its_events_as_they_were(
        store: SqliteStore) -> None:
    """A second start renames a task and replaces its input, content adds to its input and
    output: the events that took them from the row are written out whole before it changes."""
    first = [*span("d" * 16, output=["x"]), *clean(task_events("t2", output=["y"]))]
    store.ingest.ingest("alice", META, first)
    task = f"{TRACE}-{'d' * 16}"
    later = [
        _event("content", "task.content", task, input=[{"role": "user", "parts": []}],
               output=["more"]),
        *clean([ev("task.start", "t2", name="renamed", input={"q": "again"})]),
    ]
    store.ingest.ingest("alice", META, later)
    changed = store.ingest.get_task(REF, task)
    assert changed is not None and changed.output == ["x", "more"] and len(changed.input) == 2
    renamed = store.ingest.get_task(REF, "t2")
    assert renamed is not None and renamed.name == "renamed" and renamed.input == {"q": "again"}
    assert_read_as_sent(store, first + later)


def test_events_read_as_sent_through_any_order_of_batches(store: SqliteStore) -> None:
    """Random batches of starts, logs, content and ends over a few tasks, some repeated:
    after each, every event reads back as it was first stored."""
    rng = random.Random(31)
    sent: list[CleanEvent] = []
    values: list[Any] = [None, "text", ["a"], ["b", "c"], {"k": 1}, 2, 2.5]
    for batch in range(40):
        events_of_batch = []
        for _ in range(rng.randint(1, 6)):
            task = f"task-{rng.randint(0, 4)}"
            kind = rng.choice(["task.start", "task.log", "task.content", "task.end"])
            fields: dict[str, Any] = {"name": rng.choice(["a", "b"])}
            if rng.random() < 0.3:
                fields["parent_task_id"] = "task-0" if task != "task-0" else None
            if kind == "task.start":
                fields["input"] = rng.choice(values)
            elif kind == "task.log":
                fields["data"] = rng.choice(values)
            elif kind == "task.content":
                fields.update(input=rng.choice(values), output=rng.choice(values))
            else:
                fields.update(status=rng.choice(["success", "failed"]),
                              duration_ms=rng.choice([None, 10, 12.5]),
                              output=rng.choice(values), data=rng.choice(values))
            if rng.random() < 0.2 and sent:
                events_of_batch.append(rng.choice(sent))  # a replay
            else:
                events_of_batch.append(_event(f"e{batch}-{len(events_of_batch)}", kind, task,
                                              **fields))
        store.ingest.ingest("alice", META, events_of_batch)
        sent += events_of_batch
        assert_read_as_sent(store, sent)
    assert any(len(entry) >= 5 for entry in entries(store))


def test_the_purge_keeps_what_is_left_of_a_row_readable(store: SqliteStore) -> None:
    sent = span("e" * 16)
    store.ingest.ingest("alice", META, sent)
    cutoff, _ = events.millis("2030-01-01T00:00:00.000Z")
    with store.db.write() as conn:
        assert events.purge(conn, 1, cutoff, 2) == 1
    assert [dumps(e) for e in store.ingest.task_events(REF, sent[0].task_id or "")] == [
        dumps(e.body) for e in sent[1:]]


def test_a_tasks_event_count_is_its_own_though_another_shares_its_hash(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tasks' ids hashed alike: each counts its own events against the limit (counted by
    hash, they counted together), and the limit still holds."""
    monkeypatch.setattr(events, "key", lambda text: 7)
    monkeypatch.setattr(field_limits, "MAX_TASK_EVENTS", 4)
    assert store.ingest.ingest("alice", META, clean(task_events("one", cost=1.0))).accepted == 3
    assert store.ingest.ingest("alice", META, clean(task_events("two", cost=1.0))).accepted == 3
    with pytest.raises(PayloadTooLarge):
        store.ingest.ingest("alice", META, clean([ev("task.log", "one"), ev("task.log", "one")]))
    assert store.ingest.ingest("alice", META, clean([ev("task.log", "two")])).accepted == 1


def _reads(store: SqliteStore, task_ids: list[str]) -> list[str]:
    return [dumps(store.ingest.recent_events(REF, 10_000)),
            *(dumps(store.ingest.task_events(REF, task_id)) for task_id in task_ids)]


def test_an_old_files_events_are_slimmed_on_open_by_a_migration_killed_and_resumed(
        tmp_path: Path) -> None:
    """A file whose events hold every field (as before the step): a hard kill (no rollback,
    no Python cleanup) inside a chunk's transaction leaves the chunks before it slimmed, the
    next open finishes; every read gives what it did, and a second run changes nothing."""
    path = tmp_path / "bench.db"
    store = SqliteStore.open(path)
    sent = [event for i in range(6) for event in span(f"{i:016x}")]
    sdk = clean([event for i in range(6) for event in task_events(f"sdk-{i}", cost=0.5)])
    store.ingest.ingest("alice", META, [*sent, *sdk, *clean([ev("custom", data={"n": 1})])])
    task_ids = sorted({e.task_id for e in sent + sdk if e.task_id is not None})
    expected = _reads(store, task_ids)
    derived = sum(len(entry) >= 5 for entry in entries(store))
    with store.db.write() as conn:
        text_task_ids(conn)
        assert written_out_events(conn) == 12
        conn.execute(f"PRAGMA user_version = {SLIMMED}")
    store.close()
    killed_mid_chunk(path, "slim_events", "_slim", "UPDATE events SET n = 99",
                     staged="events_slimmed_upto", version=SLIMMED, copied=1)
    with sqlite3.connect(path) as raw:
        slimmed = [any(len(entry) >= 5 for entry in unpack_record(record)[1])
                   for (record,) in raw.execute("SELECT record FROM events ORDER BY seq")]
    assert slimmed == [True] * 8 + [False] * 5  # two chunks of 4
    store = SqliteStore.open(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert _reads(store, task_ids) == expected
        assert sum(len(entry) >= 5 for entry in entries(store)) == derived
        conn = store.db.reader()
        assert conn.execute("SELECT count(*) FROM events WHERE n = 99").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM sqlite_master "
                            "WHERE name = 'events_slimmed_upto'").fetchone()[0] == 0
        slim_events.slim_events(store.db, len(MIGRATIONS))  # as another process meanwhile
        with store.db.write() as write:
            write.execute(f"PRAGMA user_version = {SLIMMED}")  # the step once more
        assert slim_events.slim_events(store.db, SLIMMED + 1)
        assert _reads(store, task_ids) == expected
        assert sum(len(entry) >= 5 for entry in entries(store)) == derived
    finally:
        store.close()


def test_a_read_sees_its_rows_and_their_tasks_in_one_snapshot(store: SqliteStore) -> None:
    """A batch that changes a task and writes out its events, committed between a read of the
    rows and of the tasks they take fields from, changes neither: both are of one snapshot."""
    sent = span("f" * 16, output=["x"])
    store.ingest.ingest("alice", META, sent)
    task = sent[0].task_id or ""
    reader = store.db.reader()
    (agent_id,) = reader.execute("SELECT id FROM agents").fetchone()
    content = iter(range(2))
    ingest = store.ingest
    assert isinstance(ingest, SqliteIngest)

    def changed_meanwhile(conn: sqlite3.Connection, agent: int, task_ids: set[str]
                          ) -> dict[str, TaskState]:
        ingest.ingest("alice", META, [_event(f"more-{next(content)}", "task.content", task,
                                             output=["more"])])
        return ingest._load_tasks(conn, agent, task_ids)

    ids = {event.id for event in sent}
    newest = [e for e in events.recent(reader, agent_id, 10, changed_meanwhile) if e["id"] in ids]
    assert [dumps(e) for e in newest] == [dumps(e.body) for e in reversed(sent)]
    of_task = [e for e in events.of_task(reader, agent_id, task, changed_meanwhile)
               if e["id"] in ids]
    assert [dumps(e) for e in of_task] == [dumps(e.body) for e in sent]
    later = store.ingest.get_task(REF, task)
    assert later is not None and later.output == ["x", "more"]
