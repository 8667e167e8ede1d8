"""The SQLite store's events (`store/sqlite/events.py`): rows of integers and a packed record,
found through hashes of their ids yet deduped and read by the ids themselves; and the
migration that moves an older file's events there, which resumes where it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.field_limits import dumps
from bench_core.domain.models import AgentMeta, AgentRef, CleanEvent
from bench_core.store.sqlite import events
from bench_core.store.sqlite.packing import pack_event, unpack_event
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore

from tests.factories import clean, ev, task_events
from tests.sqlite_layouts import keyed_events, killed_mid_chunk, legacy_events

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
KEYED = MIGRATIONS.index(events.rekey_events)
"""The version of a file from before keyed events."""
GROUPED = MIGRATIONS.index(events.group_events)
"""The version of a file from before grouped events."""
SPAN = "0123456789abcdef0123456789abcdef-9bbd0140bd08b39b"


@pytest.mark.parametrize("body", [
    {"id": f"{SPAN}:start", "kind": "task.start", "ts": "2026-12-02T16:00:00.000Z",
     "task_id": SPAN, "name": "ünïcode ✓", "input": {"q": "x" * 300}},
    {"id": "e2", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z", "data": None},
    {"id": "e3", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z", "task_id": None},
    {"id": "e\"4", "kind": "task.end", "ts": "2026-12-02T16:00:00.000Z", "task_id": "t\n"},
    {"kind": "custom", "id": "e5", "ts": "2026-12-02T16:00:00.000Z"},  # not led by its columns
])
def test_an_event_record_comes_back_as_it_was_sent(body: dict[str, Any]) -> None:
    stored = pack_event(dumps(body), body["id"], body["kind"], body["ts"], body.get("task_id"))
    back = unpack_event(stored, body["ts"])
    assert back == body and list(back) == list(body)


def test_an_id_that_starts_with_its_task_id_costs_a_few_bytes() -> None:
    """An OTLP span's event ids are its task id and a suffix: packed together, the task id is
    stored once."""
    body = {"id": f"{SPAN}:start", "kind": "task.start", "ts": "2026-12-02T16:00:00.000Z",
            "task_id": SPAN, "name": "chat gpt-4o-mini"}
    stored = pack_event(dumps(body), body["id"], body["kind"], body["ts"], SPAN)
    assert len(stored) < len(SPAN) + 30


def test_ids_that_share_a_hash_are_kept_apart(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every id and task id hashed alike (as two in 2^64 are): the dedupe compares the ids,
    and a task's events are its own."""
    monkeypatch.setattr(events, "key", lambda text: 7)
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        first, second = clean(task_events("one")), clean(task_events("two"))
        assert store.ingest.ingest("alice", META, first).accepted == 2
        outcome = store.ingest.ingest("alice", META, [*second, *first])
        assert (outcome.accepted, outcome.duplicates) == (2, 2)
        assert [e["id"] for e in store.ingest.task_events(REF, "two")] == [e.id for e in second]
        assert len(store.ingest.recent_events(REF, 10)) == 4
    finally:
        store.close()


def test_a_repeated_id_within_a_batch_is_stored_once(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        start = ev("task.start", "t1", name="x")
        outcome = store.ingest.ingest("alice", META, clean([start, start]))
        assert (outcome.accepted, outcome.duplicates) == (1, 1)
        assert store.ingest.task_events(REF, "t1") == [start]
    finally:
        store.close()


def test_a_time_its_column_cannot_give_back_is_kept_in_the_record(tmp_path: Path) -> None:
    """The column keeps milliseconds; a time in another form than ingest's (as an older
    version may have stored) comes back as it was, in its place among the others."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        odd = {"id": "odd", "kind": "custom", "ts": "2026-12-02T16:00:01Z", "n": 1}
        events = [*clean([ev("custom", ts="2026-12-02T16:00:00.500Z"),
                          ev("custom", ts="2026-12-02T16:00:01.500Z")]),
                  CleanEvent(id="odd", kind="custom", ts=odd["ts"], task_id=None, body=odd)]
        store.ingest.ingest("alice", META, events)
        recent = store.ingest.recent_events(REF, 10)
        assert [e["ts"] for e in recent] == [
            "2026-12-02T16:00:01.500Z", "2026-12-02T16:00:01Z", "2026-12-02T16:00:00.500Z"]
        assert recent[1] == odd and list(recent[1]) == list(odd)
    finally:
        store.close()


def old_file(path: Path, version: int) -> dict[str, Any]:
    """A file with events of several agents and tasks (a task's events over batches), taken
    back to `version` (before keyed events, or before grouped ones); and what today's reads
    gave of it."""
    store = SqliteStore.open(path)
    for i in range(5):
        store.ingest.ingest("alice", AgentMeta(slug=f"agent-{i % 2}"), clean([
            *task_events(f"run-{i}", cost=0.5), ev("custom", data={"n": i}),
            ev("task.log", f"run-{i}", data={"label": "note", "value": i})]))
        store.ingest.ingest("alice", AgentMeta(slug=f"agent-{i % 2}"), clean([
            ev("task.log", f"run-{i // 2}", data={"label": "later", "value": i})]))
    expected = seen(store)
    with store.db.write() as conn:
        (legacy_events if version == KEYED else keyed_events)(conn)
        conn.execute(f"PRAGMA user_version = {version}")
    store.close()
    return expected


def seen(store: SqliteStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for slug in ("agent-0", "agent-1"):
        ref = AgentRef("alice", slug)
        out[slug] = {"recent": store.ingest.recent_events(ref, 100),
                     "tasks": [store.ingest.task_events(ref, f"run-{i}") for i in range(5)]}
    return out


@pytest.mark.parametrize(("version", "copy", "staged"), [
    (KEYED, "copy_events", "events_keyed"), (GROUPED, "copy_groups", "events_grouped")])
def test_an_old_files_events_are_moved_on_open_by_a_migration_killed_and_resumed(
        tmp_path: Path, version: int, copy: str, staged: str) -> None:
    """A hard kill (no rollback, no Python cleanup) inside a chunk's transaction of either
    migration: the next open finds the chunks before it, not the half-written one, and
    finishes; the events read as they did, a resent one is still a duplicate, and no text id
    is left in a column."""
    path = tmp_path / "bench.db"
    expected = old_file(path, version)
    killed_mid_chunk(path, "events", copy,
                     f"INSERT INTO {staged} (seq, agent_id, id_key, ts, record"
                     f"{', n' if version == GROUPED else ''}) VALUES (9999, 999, 1, 0, x'c0'"
                     f"{', 1' if version == GROUPED else ''})", staged=staged, version=version,
                     copied=8 if version == KEYED else 4)  # of 30 events; 4 rows hold 8
    store = SqliteStore.open(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert seen(store) == expected
        conn = store.db.reader()
        assert conn.execute("SELECT count(*) FROM events WHERE agent_id = 999").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'events_%' "
                            "AND type = 'table'").fetchone()[0] == 0
        columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
        assert columns == {"seq", "agent_id", "id_key", "task_key", "ts", "n", "record"}
        (rows, held) = conn.execute("SELECT count(*), sum(n) FROM events").fetchone()
        assert held == 30 and rows < held
        resent = [dict(e) for e in expected["agent-0"]["tasks"][0]]
        outcome = store.ingest.ingest("alice", AgentMeta(slug="agent-0"), clean(resent))
        assert (outcome.accepted, outcome.duplicates) == (0, len(resent))
        events.group_events(store.db, len(MIGRATIONS))  # as another process opening it meanwhile
        assert seen(store) == expected
    finally:
        store.close()


def test_a_tasks_events_of_one_batch_are_one_row(tmp_path: Path) -> None:
    """An OTLP span's start, evidence and end, and the SDK's task of start, log and end: one
    row and one record each, read back one by one in the order they were sent."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        sent = clean([*task_events("t1"), ev("task.log", "t1", data={"label": "x"}),
                      *task_events("t2"), ev("custom", data={"n": 1})])
        store.ingest.ingest("alice", META, sent)
        conn = store.db.reader()
        assert [tuple(row) for row in conn.execute(
            "SELECT task_key IS NULL, n FROM events ORDER BY seq")] \
            == [(0, 3), (0, 2), (1, 1)]
        assert [e["id"] for e in store.ingest.task_events(REF, "t1")] == [
            e.id for e in sent[:3]]
        assert store.ingest.recent_events(REF, 10) == [e.body for e in reversed(sent)]
    finally:
        store.close()


def test_a_tasks_events_are_read_from_its_stretch_of_the_task_index(tmp_path: Path) -> None:
    """Not by walking the agent's every event in time order (what a planner without
    statistics picks for `ORDER BY ts, seq` unless told)."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(task_events("t1")))
        reader = store.db.reader()
        statements: list[str] = []
        reader.set_trace_callback(statements.append)
        store.ingest.task_events(REF, "t1")
        reader.set_trace_callback(None)
        read = next(s for s in statements if "FROM events" in s)
        plan = " ".join(row[3] for row in reader.execute(f"EXPLAIN QUERY PLAN {read}"))
        assert "INDEX events_by_task" in plan, plan
    finally:
        store.close()


def test_the_purge_spares_exactly_the_newest_events_though_a_row_holds_older_ones(
        tmp_path: Path) -> None:
    """Events past the retention go but the newest `spared`: whole rows where all of theirs
    go, and the older events of a row whose newest is spared taken out of its record."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        times = [f"2026-12-02T16:00:0{i}.000Z" for i in range(6)]
        store.ingest.ingest("alice", META, clean([
            ev("task.start", "old", ts=times[0]), ev("task.end", "old", ts=times[1], status="success")]))
        store.ingest.ingest("alice", META, clean([
            ev("task.start", "t", ts=times[2]), ev("task.log", "t", ts=times[3]),
            ev("task.end", "t", ts=times[4], status="success"), ev("custom", ts=times[5])]))
        before = store.ingest.recent_events(REF, 10)
        cutoff, _ = events.millis("2026-12-03T00:00:00.000Z")
        with store.db.write() as conn:
            assert events.purge(conn, 1, cutoff, 3) == 3
            assert events.purge(conn, 1, cutoff, 3) == 0
        assert store.ingest.recent_events(REF, 10) == before[:3]
        assert [e["kind"] for e in store.ingest.task_events(REF, "t")] == ["task.log", "task.end"]
        assert store.ingest.task_events(REF, "old") == []
        held = store.db.reader().execute("SELECT sum(n), count(*) FROM events").fetchone()
        assert tuple(held) == (3, 2)
    finally:
        store.close()
