"""The Store contract for an agent's newest run and newest failure (`AgentStats.latest_run`,
`latest_failure`): recorded by the write of the batch that finishes the run, so listings link
to them without reading tasks; newest (by start, as the runs list orders) wins whatever order
batches arrive in, and only root tasks are runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench_core.domain.models import AgentMeta, AgentRef, RunRef
from bench_core.ports.store import Store
from bench_core.store.sqlite.agents import LATEST_RUNS_SCHEMA
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore

from tests.concurrency import in_parallel
from tests.contract.store.test_run_list import without_run_text
from tests.factories import clean, ev, ts

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")


def ingest(store: Store, events):
    return store.ingest.ingest("alice", META, clean(events))


def run(task_id: str, at_ms: int, name: str = "search", status: str = "success",
        parent: str | None = None) -> list[dict]:
    """A task started at `at_ms` and ended a second later."""
    return [ev("task.start", task_id, ts=ts(at_ms), name=name, parent_task_id=parent),
            ev("task.end", task_id, ts=ts(at_ms + 1_000), name=name, parent_task_id=parent,
               status=status, output="ok", duration_ms=1_000)]


def latest(store: Store) -> tuple[RunRef | None, RunRef | None]:
    s = store.agents.get_agent(REF).stats
    return s.latest_run, s.latest_failure


def test_a_batch_records_its_newest_run_and_its_newest_failure(store: Store) -> None:
    ingest(store, [*run("r1", 1_000), *run("r2", 2_000, "fetch", "failed"),
                   *run("r3", 3_000, "answer"), *run("r0", 500, "old", "failed")])
    assert latest(store) == (RunRef("r3", "answer", "success", ts(3_000)),
                             RunRef("r2", "fetch", "failed", ts(2_000)))


def test_an_agent_without_a_finished_run_has_none(store: Store) -> None:
    ingest(store, [ev("task.start", "r1", name="search"), ev("custom", data={"k": 1})])
    assert latest(store) == (None, None)


def test_an_older_batch_does_not_replace_a_newer_run(store: Store) -> None:
    ingest(store, run("new", 5_000, "newer"))
    ingest(store, run("old", 1_000, "older"))
    assert latest(store)[0] == RunRef("new", "newer", "success", ts(5_000))
    ingest(store, run("newest", 9_000, "newest"))
    assert latest(store)[0].run_id == "newest"


def test_an_old_failure_is_still_the_newest_failure_known(store: Store) -> None:
    """Out of order: the old batch's run is older than the recorded run, but it is the first
    failure, so it is recorded as that while the newest run stays."""
    ingest(store, run("new", 5_000))
    ingest(store, run("old", 1_000, status="failed"))
    assert latest(store) == (RunRef("new", "search", "success", ts(5_000)),
                             RunRef("old", "search", "failed", ts(1_000)))
    ingest(store, run("older", 500, status="failed"))
    assert latest(store)[1].run_id == "old"


def test_a_late_end_of_an_old_run_in_a_new_batch_keeps_the_newer_run(store: Store) -> None:
    """The batch holds the newest event so far (its time moves forward) but finishes a run
    that started before the one recorded."""
    start, end = run("slow", 1_000)
    ingest(store, [start])
    ingest(store, run("quick", 3_000))
    ingest(store, [{**end, "ts": ts(20_000)}, ev("custom", ts=ts(21_000))])
    s = store.agents.get_agent(REF).stats
    assert s.latest_run == RunRef("quick", "search", "success", ts(3_000))
    assert s.last_event_at == ts(21_000) and s.runs == 2


def test_a_run_whose_start_came_earlier_is_recorded_by_its_end(store: Store) -> None:
    start, end = run("r1", 4_000, "plan")
    ingest(store, [start])
    assert latest(store) == (None, None)
    ingest(store, [{**end, "name": None}])
    assert latest(store)[0] == RunRef("r1", "plan", "success", ts(4_000))


def test_subtasks_are_not_runs(store: Store) -> None:
    ingest(store, [*run("root", 1_000, "agent"), *run("step", 8_000, "tool", "failed",
                                                        parent="root")])
    assert latest(store) == (RunRef("root", "agent", "success", ts(1_000)), None)


def test_a_replayed_batch_changes_nothing(store: Store) -> None:
    old = run("old", 1_000)
    ingest(store, old)
    ingest(store, run("new", 5_000))
    ingest(store, old)
    assert latest(store)[0].run_id == "new"


def test_an_end_without_its_start_is_ordered_by_its_end(store: Store) -> None:
    ingest(store, [ev("task.end", "r1", ts=ts(7_000), name="late", status="failed",
                      output="boom")])
    assert latest(store) == (RunRef("r1", "late", "failed", ts(7_000)),) * 2


def test_concurrent_batches_leave_the_newest_run(store: Store) -> None:
    """Eight senders at once, each with one run: whatever order the writes land in, the
    newest is what stays, and the event window is still the widest."""
    batches = [[*run(f"r{i}", 1_000 * i, status="failed" if i % 2 else "success"),
                ev("custom", ts=ts(50_000 - 1_000 * i))] for i in range(1, 9)]
    in_parallel(*(lambda b=b: ingest(store, b) for b in batches))
    s = store.agents.get_agent(REF).stats
    assert (s.latest_run.run_id, s.latest_failure.run_id) == ("r8", "r7")
    assert (s.first_event_at, s.last_event_at) == (ts(1_000), ts(49_000))
    assert s.runs == 8


def test_an_agent_stored_before_latest_runs_existed_gets_one_from_its_next_run(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = SqliteStore.open(path)
    ingest(old, run("before", 1_000))
    old.close()
    conn = sqlite3.connect(path)  # back to the schema before the migration that added them
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(LATEST_RUNS_SCHEMA)}")
    conn.execute("ALTER TABLE agents DROP COLUMN latest_run")
    conn.execute("ALTER TABLE agents DROP COLUMN latest_failure")
    conn.execute("ALTER TABLE invocation_usage DROP COLUMN caller_agent")  # later migrations'
    conn.execute("DROP INDEX tasks_failed_by_run")
    without_run_text(conn)
    conn.execute("ALTER TABLE tasks DROP COLUMN recorded")
    conn.execute("ALTER TABLE tasks DROP COLUMN called_model")
    conn.execute("ALTER TABLE tasks DROP COLUMN agent_version")
    conn.execute("DROP TABLE agent_versions")
    conn.commit()
    conn.close()
    upgraded = SqliteStore.open(path)
    try:
        assert upgraded.schema_version == len(MIGRATIONS)
        assert latest(upgraded) == (None, None)
        ingest(upgraded, run("after", 500))
        assert latest(upgraded)[0].run_id == "after"
        assert upgraded.agents.get_agent(REF).stats.runs == 2
    finally:
        upgraded.close()
