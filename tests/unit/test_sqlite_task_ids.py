"""A task's ids as the SQLite store keeps them (`store/sqlite/task_ids.py`): an OTLP span's as
24 bytes in its row and indexes, read back as sent, found, listed and paged by every read; and
the migration that rewrites an older file's, which resumes where it stopped."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.run_list import RunFilter
from bench_core.store.sqlite import task_ids
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_ids import id_order, read_id, stored_id

from tests.factories import clean, task_events, ts
from tests.sqlite_layouts import reopened_after_kill, text_task_ids
from tests.unit.test_sqlite_packing import chat_span

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
BINARY = MIGRATIONS.index(task_ids.binary_task_ids)
"""The version of a file from before binary task ids."""
TRACE = "0123456789abcdef0123456789abcdef"
ROOT = f"{TRACE}-9bbd0140bd08b39b"


def span_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}"


def test_an_otlp_spans_ids_are_kept_as_their_bytes_and_every_other_id_as_text(
        tmp_path: Path) -> None:
    """The root, its chat span (task, parent and run ids all a span's) as 24 bytes; a tool
    with an id of another kind and an id in capitals as text; every read gives them back as
    they were sent."""
    chat, shouted = f"{TRACE}-58f6bbc6cfa2b373", f"{TRACE.upper()}-58F6BBC6CFA2B373"
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(
            task_events(ROOT, "invoke_agent") + chat_span(chat, ROOT)
            + task_events("tool-1", parent=ROOT, status="failed")
            + task_events(shouted, parent=chat)))
        rows = {read_id(row[0]): row[1:] for row in store.db.reader().execute(
            "SELECT task_id, typeof(task_id), length(task_id), typeof(parent_task_id), "
            "length(parent_task_id), typeof(run_id), length(run_id) FROM tasks")}
        root = store.ingest.get_task(REF, ROOT)
        assert root is not None
        spans = store.runs.run_spans(REF, root, limit=10)
        counts = store.runs.run_counts(REF, root)
        runs = store.runs.list_runs(REF, RunFilter(), limit=10).runs
        children = store.ingest.list_tasks(REF, parent=ROOT, limit=10)[0]
        subtasks = store.ingest.subtask_ids(REF, [ROOT, chat])
        events = store.ingest.task_events(REF, chat)
    finally:
        store.close()
    assert rows[ROOT] == ("blob", 24, "null", None, "blob", 24)
    assert rows[chat] == ("blob", 24, "blob", 24, "blob", 24)
    assert rows["tool-1"] == ("text", 6, "blob", 24, "blob", 24)
    assert rows[shouted] == ("text", 49, "blob", 24, "blob", 24)
    assert root.task_id == ROOT and root.run_id == ROOT and root.parent_task_id is None
    assert {(s.task_id, s.parent_task_id, s.run_id) for s in spans} == {
        (chat, ROOT, ROOT), ("tool-1", ROOT, ROOT), (shouted, chat, ROOT)}
    assert counts.spans == 3 and counts.failed == 1 and counts.first_failed == "tool-1"
    assert [r.task_id for r in runs] == [ROOT]
    assert {t.task_id for t in children} == {chat, "tool-1"}
    assert subtasks == {ROOT: [chat, "tool-1"], chat: [shouted]}  # in start order
    assert {e["task_id"] for e in events} == {chat}


def test_ids_keep_their_text_equality_and_the_order_sqlite_gives_them(tmp_path: Path) -> None:
    """Span ids, near misses (capitals, a dash elsewhere, a character short or over, a letter
    past f) and other ids: each given back exactly, bytes only for a span's; and SQLite puts
    the kept ids in `id_order`'s order, which is the texts' own among ids of one kind."""
    rng = random.Random(5)
    spans = [span_id(rng) for _ in range(40)]
    ids = [*spans, spans[0].upper(), spans[1].replace("-", "") + "-",
           spans[2][:-1], spans[3] + "0", "g" + spans[4][1:], "run-1", "a1", "", "é-span"]
    kept = [stored_id(i) for i in ids]
    assert [read_id(k) for k in kept] == ids
    assert [isinstance(k, bytes) for k in kept] == [True] * 40 + [False] * 9
    assert sorted(spans, key=id_order) == sorted(spans)
    with sqlite3.connect(tmp_path / "order.db") as conn:
        conn.execute("CREATE TABLE ids (id TEXT)")
        conn.executemany("INSERT INTO ids VALUES (?)", [(k,) for k in kept])
        ordered = [read_id(k) for (k,) in conn.execute("SELECT id FROM ids ORDER BY id")]
        (equal,) = conn.execute("SELECT count(*) FROM ids a JOIN ids b ON a.id = b.id"
                                ).fetchone()
    assert ordered == sorted(ids, key=id_order)
    assert equal == len(ids)


def test_ties_of_a_moment_page_in_one_order_whatever_kind_their_ids(tmp_path: Path) -> None:
    """Roots and a run's spans that start in one millisecond, their ids of both kinds: the
    runs list, the task list and the run's pages, one to a page, give each once, in
    `id_order`."""
    rng = random.Random(11)
    roots = [span_id(rng) for _ in range(3)] + ["b-run", "a-run"]
    run = roots[0]
    kids = [f"{run[:33]}{rng.getrandbits(64):016x}" for _ in range(3)] + ["kid-b", "kid-a"]
    at = ts(10_000)
    events = [{**e, "ts": at} for r in roots for e in task_events(r)]
    events += [{**e, "ts": at} for k in kids for e in task_events(k, parent=run)]
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(events))
        root = store.ingest.get_task(REF, run)
        assert root is not None
        listed = {way: _pages(lambda cursor, way=way: _runs(store, way, cursor))
                  for way in ("newest", "oldest")}
        tasks = _pages(lambda cursor: store.ingest.list_tasks(REF, limit=1, cursor=cursor))
        spans: list[str] = []
        after: tuple[str, str] | None = None
        while (page := store.runs.run_spans(REF, root, limit=1, after=after)) and len(spans) < 9:
            spans.append(page[0].task_id)
            after = (page[0].sort_ts, page[0].task_id)
    finally:
        store.close()
    in_order = sorted(roots, key=id_order)
    assert listed == {"newest": in_order[::-1], "oldest": in_order}
    assert tasks == in_order[::-1]
    assert spans == sorted(kids, key=id_order)


def _runs(store: SqliteStore, way: str, cursor: str | None) -> tuple[list[Any], str | None]:
    page = store.runs.list_runs(REF, RunFilter(descending=way != "oldest"),
                                limit=1, cursor=cursor)
    return page.runs, page.next_cursor


def _pages(read: Any) -> list[str]:
    """Every page's ids, to the last (or the ninth, where a cursor goes round)."""
    found: list[str] = []
    cursor = None
    while len(found) < 9:
        tasks, cursor = read(cursor)
        found += [t.task_id for t in tasks]
        if cursor is None:
            break
    return found


def test_an_old_files_ids_are_made_bytes_on_open_by_a_migration_killed_and_resumed(
        tmp_path: Path) -> None:
    """A file whose ids are all text (as before the step): a hard kill (no rollback, no
    Python cleanup) inside a chunk's transaction leaves the chunks before it rewritten, the
    next open finishes; every read gives what it did, nothing is left to rewrite, and a second
    run changes nothing."""
    path = tmp_path / "bench.db"
    rng = random.Random(3)
    store = SqliteStore.open(path)
    runs = [span_id(rng) for _ in range(3)]
    for run in runs:
        store.ingest.ingest("alice", META, clean(task_events(run, "invoke_agent") + [
            e for _ in range(3) for e in chat_span(f"{run[:33]}{rng.getrandbits(64):016x}", run)]))
    store.ingest.ingest("alice", META, clean(task_events("sdk-run", status="failed")))
    expected = _seen(store, runs)
    with store.db.write() as conn:
        text_task_ids(conn)
        assert conn.execute(f"SELECT count(*) FROM tasks WHERE {task_ids._TO_DO}"
                            ).fetchone()[0] == 12
        conn.execute(f"PRAGMA user_version = {BINARY}")
    store.close()
    store = reopened_after_kill(path, "task_ids", version=BINARY, tasks=13,
                                done="typeof(task_id) = 'blob'")
    try:
        assert _seen(store, runs) == expected
        conn = store.db.reader()
        assert conn.execute(f"SELECT count(*) FROM tasks WHERE {task_ids._TO_DO}"
                            ).fetchone()[0] == 0
        assert not task_ids.binary_task_ids(store.db, len(MIGRATIONS))  # as another process
        assert _seen(store, runs) == expected
    finally:
        store.close()


def _seen(store: SqliteStore, runs: list[str]) -> dict[str, Any]:
    heads = [store.ingest.get_task(REF, run) for run in runs]
    return {"runs": store.runs.list_runs(REF, RunFilter(), limit=10).runs,
            "spans": [store.runs.run_spans(REF, head, limit=100) for head in heads if head],
            "counts": [store.runs.run_counts(REF, head) for head in heads if head],
            "children": [store.ingest.subtask_ids(REF, runs)],
            "events": [store.ingest.task_events(REF, run) for run in runs]}
