"""A run's indexes on SQLite (`store/sqlite/runs.py` `SPANS_BY_RUN`): its spans without its
root, read and counted from them alone."""

from __future__ import annotations

from pathlib import Path

from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.sqlite.store import SqliteStore

from tests.factories import clean, task_events

REF = AgentRef("alice", "agent-1")


def test_a_runs_indexes_leave_its_root_out_and_its_counts_read_them_alone(
        tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean([
            *task_events("root"), *task_events("kid", parent="root"),
            *task_events("bad", parent="kid", status="failed")]))
        reader = store.db.reader()
        partial = {row[1]: row[4] for row in reader.execute("PRAGMA index_list(tasks)")}
        assert partial["tasks_by_run"] == partial["tasks_failed_by_run"] == 1
        for index, also, held in (("tasks_by_run", "", ["bad", "kid"]),
                                  ("tasks_failed_by_run", "AND status = 'failed'", ["bad"])):
            assert [row[0] for row in reader.execute(
                f"SELECT task_id FROM tasks INDEXED BY {index} WHERE agent_id = 1 "
                f"AND run_id = 'root' AND run_id != task_id {also} ORDER BY task_id")] == held
        root = store.ingest.get_task(REF, "root")
        assert root is not None
        statements: list[str] = []
        reader.set_trace_callback(statements.append)
        counts = store.runs.run_counts(REF, root)
        spans = store.runs.run_spans(REF, root, limit=10)
        reader.set_trace_callback(None)
        assert (counts.spans, counts.failed, counts.first_failed) == (2, 1, "bad")
        assert sorted(t.task_id for t in spans) == ["bad", "kid"]
        for statement in statements:
            if "COUNT(*) FROM tasks" in statement:
                plan = " ".join(row[3] for row in reader.execute(
                    f"EXPLAIN QUERY PLAN {statement}"))
                assert "COVERING INDEX tasks_" in plan, plan
    finally:
        store.close()
