"""A task's row as the SQLite store keeps it (`store/sqlite/task_row.py`): logs and a subtask's
evidence packed, its end and its start as ordered in milliseconds, all read back as
they were sent and listed in the order their text gave; and the migration that rewrites an
older file's rows, which resumes where it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult, TaskState, Usage
from bench_core.domain.run_list import RunFilter
from bench_core.store.sqlite import task_row
from bench_core.store.sqlite.ingest import task_from_row
from bench_core.store.sqlite.packing import PACK_FROM, load
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_ids import read_id, stored_id

from tests.factories import clean, ev, task_events
from tests.sqlite_layouts import reopened_after_kill, text_task_ids, text_task_row
from tests.unit.test_sqlite_packing import chat_span

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
COMPACTED = MIGRATIONS.index(task_row.compact_task_row)
"""The version of a file from before compact task rows."""
ROOT = "0123456789abcdef0123456789abcdef-9bbd0140bd08b39b"
OTLP = f"{ROOT[:33]}58f6bbc6cfa2b373"
"""A span whose metadata's trace and span ids are its task id's halves, as OTLP's are."""


def test_a_chat_spans_row_keeps_its_logs_evidence_and_times_compact(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(
            task_events(ROOT, "invoke_agent") + chat_span(OTLP, ROOT)))
        rows = {read_id(row[0]): row[1:] for row in store.db.reader().execute(
            "SELECT task_id, typeof(logs), length(logs), typeof(evidence), typeof(ended_at), "
            "typeof(sort_ts), length(sort_ts) FROM tasks")}
        span = store.ingest.get_task(REF, OTLP)
        root = store.ingest.get_task(REF, ROOT)
    finally:
        store.close()
    logs, size, evidence, ended, sort_ts, sort_size = rows[OTLP]
    assert (logs, evidence, ended, sort_ts, sort_size) == ("blob", "blob", "blob", "blob", 6)
    assert size < 100  # its text: some 300 characters
    assert rows[ROOT][2:5] == ("text", "blob", "blob")  # SQL reads a root's evidence
    assert span is not None and root is not None
    assert span.logs[0]["data"]["price_source"].startswith("bench price table")
    assert span.evidence is not None and span.evidence.input_tokens == 2400
    assert span.ended_at is not None and span.ended_at.endswith("Z") and len(span.ended_at) == 24
    assert root.evidence is not None and root.evidence.input_tokens == 2400  # its child's


def test_tasks_list_in_the_order_of_their_times_and_cursors(tmp_path: Path) -> None:
    """Starts kept as milliseconds (1970 the first ingest takes) list in their texts' order,
    page by page, and filters compare them to times as they were sent."""
    starts = {"old": "1970-01-01T00:00:00.000Z", "epoch": "1970-01-01T00:00:00.256Z",
              "new": "2026-12-02T16:00:00.000Z", "newer": "2026-12-02T16:00:00.001Z"}
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        for task_id, start in starts.items():
            store.ingest.ingest("alice", META, clean([
                ev("task.start", task_id, name="search", ts=start),
                ev("task.start", f"{task_id}-child", parent_task_id=task_id, ts=start),
                ev("task.end", task_id, status="failed", ts=start)]))
        newest = sorted(starts, key=starts.__getitem__, reverse=True)
        pages, cursor = [], None
        for _ in starts:
            page, cursor = store.ingest.list_tasks(REF, limit=1, cursor=cursor)
            pages += [t.task_id for t in page]
        assert pages == newest and cursor is None
        since = store.runs.list_runs(REF, RunFilter(since=starts["epoch"]), limit=10)
        assert [t.task_id for t in since.runs] == newest[:3]
        until = store.runs.list_runs(REF, RunFilter(until=starts["new"], descending=False),
                                     limit=10)
        assert [t.task_id for t in until.runs] == ["old", "epoch"]
        day = store.runs.list_runs(REF, RunFilter(since="2026-12-02"), limit=10)  # as text
        assert [t.task_id for t in day.runs] == ["newer", "new"]
        oldest = list(reversed(newest))  # none judged: the judge's sweep finds them by end
        assert store.evals.pending_evals("0000", "9999", 10) == [(REF, oldest)]
        assert store.evals.pending_evals("2026", starts["newer"], 10) == [(REF, ["new"])]
        assert [t.task_id for t in store.evals.cluster_candidates(REF, 10)] == newest
        run = store.ingest.get_task(REF, "new")
        assert run is not None
        counts = store.runs.run_counts(REF, run)
        assert counts.spans == 1 and counts.failures == ()
        assert [t.sort_ts for t in store.runs.run_spans(REF, run, limit=5)] == [starts["new"]]
    finally:
        store.close()


def test_a_failed_spans_place_reads_as_its_time(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(
            task_events("run", "agent") + task_events("span", parent="run", status="failed")))
        run = store.ingest.get_task(REF, "run")
        span = store.ingest.get_task(REF, "span")
        assert run is not None and span is not None
        counts = store.runs.run_counts(REF, run)
        assert counts.failures == ((span.sort_ts, "span"),)
        after = store.runs.run_spans(REF, run, limit=5, after=counts.failures[0])
        assert after == []
    finally:
        store.close()


def test_a_parent_known_first_from_its_childs_evidence_packs_it_once_it_has_a_parent(
        tmp_path: Path) -> None:
    """The child's evidence makes a placeholder of its parent (a root until its start comes,
    whose evidence SQL reads as text), and the parent's start with a parent of its own makes
    it a subtask, its evidence packed; both read back whole, and the run sorts by its cost."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(chat_span("child", "middle")))
        assert _types(store, "middle") == ("text", None)
        store.ingest.ingest("alice", META, clean(
            task_events("middle", parent="run") + task_events("run", "agent")))
        assert _types(store, "middle") == ("blob", "blob")
        middle = store.ingest.get_task(REF, "middle")
        assert middle is not None and middle.evidence is not None
        assert middle.evidence.output_tokens == 200
        by_cost = store.runs.list_runs(REF, RunFilter(sort="cost"), limit=10)
        assert [t.task_id for t in by_cost.runs] == ["run"]
    finally:
        store.close()


def _types(store: SqliteStore, task_id: str) -> tuple[str | None, str | None]:
    row = store.db.reader().execute(
        "SELECT typeof(evidence), CASE WHEN ended_at IS NOT NULL THEN typeof(ended_at) END "
        "FROM tasks WHERE task_id = ?", (stored_id(task_id),)).fetchone()
    return row[0], row[1]


def test_an_old_files_rows_are_compacted_on_open_by_a_migration_killed_and_resumed(
        tmp_path: Path) -> None:
    """A hard kill (no rollback, no Python cleanup) inside a chunk's transaction: the next open
    finds the chunks before it rewritten, not the half-written one, and finishes; every task,
    list and run reads as it did, and nothing is left to rewrite."""
    path = tmp_path / "bench.db"
    expected = _old_file(path)
    store = reopened_after_kill(path, "task_row", version=COMPACTED, tasks=15,
                                done="typeof(sort_ts) = 'blob'")
    try:
        assert _seen(store) == expected
        conn = store.db.reader()
        assert conn.execute(
            f"SELECT count(*) FROM tasks WHERE {task_row._TO_DO}",
            (PACK_FROM,)).fetchone()[0] == 0
        (metadata,) = conn.execute("SELECT metadata FROM tasks WHERE task_id = ?",
                                   (stored_id(OTLP),)).fetchone()
        assert metadata[0] == 4  # without its ids
        task_row.compact_task_row(store.db, len(MIGRATIONS))  # as another process meanwhile
        assert _seen(store) == expected
    finally:
        store.close()


def _old_file(path: Path) -> dict[str, Any]:
    """A file of runs with chat spans (one of OTLP's ids), a failed one and a parent that never
    came, taken back to text rows; and what today's reads gave of it."""
    store = SqliteStore.open(path)
    for i in range(3):
        run = f"run-{i}"
        store.ingest.ingest("alice", META, clean(
            task_events(run, "agent", status="failed" if i == 1 else "success")
            + chat_span(f"{run}-a", run) + chat_span(f"{run}-b", run)
            + task_events(f"{run}-tool", parent=run, status="failed")))
    store.ingest.ingest("alice", META, clean(task_events("orphan", parent="never-came")))
    store.ingest.ingest("alice", META, clean(task_events(ROOT, "agent") + chat_span(OTLP, ROOT)))
    expected = _seen(store)
    with store.db.write() as conn:
        text_task_ids(conn)
        text_task_row(conn)
        assert conn.execute(
            f"SELECT count(*) FROM tasks WHERE {task_row._TO_DO}",
            (PACK_FROM,)).fetchone()[0] == 15  # every one
        conn.execute(f"PRAGMA user_version = {COMPACTED}")
    store.close()
    return expected


def _seen(store: SqliteStore) -> dict[str, Any]:
    ids = [r[0] for r in store.db.reader().execute("SELECT task_id FROM tasks ORDER BY task_id")]
    runs = [store.ingest.get_task(REF, f"run-{i}") for i in range(3)]
    return {"tasks": [store.ingest.get_task(REF, t) for t in ids],
            "roots": store.ingest.list_tasks(REF, limit=100),
            "by cost": store.runs.list_runs(REF, RunFilter(sort="cost"), limit=2),
            "spans": [store.runs.run_spans(REF, run, limit=100) for run in runs if run],
            "counts": [store.runs.run_counts(REF, run).failures for run in runs if run],
            "children": store.ingest.subtask_ids(REF, ["run-0", "never-came"])}


def test_an_otlp_spans_metadata_is_kept_without_the_ids_its_task_id_holds(
        tmp_path: Path) -> None:
    """Its trace and span ids are its task id's halves: left out, read back in their place
    (by the run's reads and the list's metadata filter); metadata whose ids are another's is
    packed whole, and `load`, which has no task id, refuses the former."""
    run = OTLP  # a root here
    events = chat_span(run, None) + chat_span("other-span", run)
    sent = {e["task_id"]: e["data"] for e in events if e["kind"] == "task.end"}
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", META, clean(events))
        stored = {read_id(task_id): metadata for task_id, metadata
                  in store.db.reader().execute("SELECT task_id, metadata FROM tasks")}
        tasks = {t: store.ingest.get_task(REF, t) for t in stored}
        trace = store.runs.list_runs(REF, RunFilter(meta=(("trace_id", ROOT[:32]),)), limit=5)
        other = store.runs.list_runs(REF, RunFilter(meta=(("trace_id", "f" * 32),)), limit=5)
    finally:
        store.close()
    assert stored[run][0] == 4 and len(stored[run]) < 60  # its JSON: some 330 characters
    assert stored["other-span"][0] == 5  # its trace id is not its task id's: packed whole
    for task_id, metadata in sent.items():
        task = tasks[task_id]
        assert task is not None and task.metadata == metadata
        assert list(task.metadata) == list(metadata)  # in the order it was sent
    assert [t.task_id for t in trace.runs] == [run] and other.runs == []
    with pytest.raises(ValueError, match="unknown packing format 4"):
        load(stored[run])


def test_roots_of_one_start_list_by_task_id_page_by_page_from_indexes_without_it(
        tmp_path: Path) -> None:
    """`tasks_roots` and `tasks_by_status` hold no task ids: the roots that start in one
    millisecond come in task id order all the same, newest first and oldest first, one to a
    page, by status too, each page one range of the index."""
    start = "2026-12-02T16:00:00.000Z"
    ids = ["b", "d", "a", "c", "e"]
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        for task_id in ids:
            store.ingest.ingest("alice", META, clean([
                ev("task.start", task_id, name="search", ts=start),
                ev("task.end", task_id, status="failed" if task_id in "ace" else "success",
                   ts="2026-12-02T16:00:01.000Z")]))
        ids.append("later")
        store.ingest.ingest("alice", META, clean(task_events("later")))
        reader = store.db.reader()
        for index in task_row.ROOT_INDEXES:
            assert "task_id" not in {c[2] for c in reader.execute(f"PRAGMA index_info({index})")}
        statements: list[str] = []
        reader.set_trace_callback(statements.append)
        for where, expected in ((RunFilter(), sorted(ids, reverse=True)),
                                (RunFilter(descending=False), sorted(ids)),
                                (RunFilter(status="failed"), ["e", "c", "a"])):
            listed, cursor = [], None
            for _ in range(len(expected) + 1):
                page = store.runs.list_runs(REF, where, limit=1, cursor=cursor)
                listed += [t.task_id for t in page.runs]
                if (cursor := page.next_cursor) is None:
                    break
            assert listed == expected, where
        tasks, cursor = [], None
        while True:
            page_tasks, cursor = store.ingest.list_tasks(REF, status="failed", limit=2,
                                                         cursor=cursor)
            tasks += [t.task_id for t in page_tasks]
            if cursor is None:
                break
        assert tasks == ["e", "c", "a"]
        reader.set_trace_callback(None)
        listings = [s for s in statements if "FROM tasks" in s and "ORDER BY" in s]
        assert len(listings) >= 15
        for statement in listings:
            plan = " ".join(row[3] for row in reader.execute(f"EXPLAIN QUERY PLAN {statement}"))
            assert "INDEX tasks_roots " in plan or "INDEX tasks_by_status " in plan, plan
    finally:
        store.close()


def test_a_row_is_read_into_the_field_of_each_column() -> None:
    """`task_from_row` makes a task by position (the dataclass's order): each column of a row
    as text lands in its own field."""
    row = ("t1", "p1", "plan", "failed", '"asked"', '"answered"', '{"k": 1}', 1.5, 2.5, 3.5,
           4.5, 5.5, '[{"amount_usd": 1}]', "2026-01-01T00:00:00.000Z",
           "2026-01-01T00:00:01.000Z", 7, '{"status": "scored", "judge": "j", "at": "x", "score": 0.5}', '{"calls": 2}',
           "r1", '[{"ts": "2026-01-01T00:00:00.500Z", "data": "note"}]', "rec", "gpt-4o", "v1",
           "s1", "u1")
    task = task_from_row(row)
    assert task == TaskState(
        task_id="t1", parent_task_id="p1", name="plan", status="failed", input="asked",
        output="answered", metadata={"k": 1}, duration_ms=1.5, cost_usd=2.5,
        reported_cost_usd=3.5, cost_logged_usd=4.5, child_cost_usd=5.5,
        cost_breakdown=[{"amount_usd": 1}], started_at="2026-01-01T00:00:00.000Z",
        ended_at="2026-01-01T00:00:01.000Z", version=7,
        eval=EvalResult("scored", "j", "x", 0.5), eval_version=0,
        evidence=Usage(calls=2), run_id="r1",
        logs=[{"ts": "2026-01-01T00:00:00.500Z", "data": "note"}], recorded="rec",
        model="gpt-4o", agent_version="v1", session_id="s1", user_id="u1")
