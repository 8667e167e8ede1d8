"""The runs list's contract (`Store.list_runs` with `domain/run_list.py` `RunFilter`): every
adapter keeps the same runs in the same order for every filter and sort, a span filter or search
looks at every span of a run (not the root alone), and a filter that is not the owner's sees no
content (metadata, inputs, outputs)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult
from bench_core.domain.run_list import Range, RunFilter
from bench_core.ports.store import Store
from bench_core.store.sqlite import run_list as sqlite_run_list
from bench_core.store.sqlite import run_text
from bench_core.store.sqlite.connection import Migration
from bench_core.store.sqlite.events import group_events, rekey_events
from bench_core.store.sqlite.run_list import add_run_text, narrow_run_text, pend_run_text
from bench_core.store.sqlite.runs import RUN_FAILURES_SCHEMA, SPANS_BY_RUN
from bench_core.store.sqlite.slim_events import slim_events
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_ids import binary_task_ids
from bench_core.store.sqlite.task_row import compact_task_row
from bench_core.store.sqlite.task_times import compact_task_times

from tests.factories import clean, ev, task_events, ts
from tests.sqlite_layouts import (
    keyed_events,
    legacy_events,
    text_task_ids,
    text_task_row,
    text_task_times,
    written_out_events,
)

REF = AgentRef("alice", "agent-1")
HOUR = 3_600_000


def _at(events: list[dict[str, Any]], start_ms: int) -> list[dict[str, Any]]:
    """`events` a millisecond apart from `start_ms` on."""
    return [{**e, "ts": ts(start_ms + i)} for i, e in enumerate(events)]


def _run(run_id: str, name: str, *, status: str = "success", duration_ms: int, cost: float = 0.0,
         metadata: Any = None, child: str, model: str | None = None, tokens: tuple[int, int] = (0, 0),
         provider: str = "openai", output: str = "ok") -> list[dict[str, Any]]:
    events = [ev("task.start", run_id, name=name, input={"q": run_id}),
              ev("task.start", f"{run_id}-c", name=child, parent_task_id=run_id)]
    if model:
        events.append(ev("task.log", f"{run_id}-c", data={
            "label": "evidence", "provider": provider, "model": model,
            "input_tokens": tokens[0], "output_tokens": tokens[1]}))
    events += [ev("task.end", f"{run_id}-c", status="success", output=output, duration_ms=5),
               ev("task.end", run_id, status=status, output="done", duration_ms=duration_ms,
                  cost_usd=cost, data=metadata)]
    return events


@pytest.fixture
def runs(store: Store) -> Store:
    return seed(store)


def seed(store: Store) -> Store:
    """r1 (day one, 00:00), r2 (an hour later), r3 (the next day): see each line."""
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean([
        *_at(_run("r1", "plan", duration_ms=50, cost=0.5,
                  metadata={"env": "prod", "tags": ["beta", "eu"], "attempt": 2},
                  child="llm", model="gpt-4o-mini", tokens=(100, 20),
                  output="Lisbon is the capital of Portugal"), 0),
        *_at(_run("r2", "fetch", status="failed", duration_ms=900, metadata={"env": "dev"},
                  child="llm", model="claude-3-5-sonnet", tokens=(1000, 500),
                  provider="anthropic"), HOUR),
        *_at(_run("r3", "search", duration_ms=2000, child="Portugal lookup"), 25 * HOUR)]))
    for run_id, score in (("r1", 0.9), ("r2", 0.3)):
        store.evals.record_eval(REF, run_id, EvalResult(status="scored", judge="test",
                                                        at=ts(30 * HOUR), score=score))
    return store


def ids(store: Store, where: RunFilter, **kw: Any) -> list[str]:
    return [t.task_id for t in store.runs.list_runs(REF, where, **kw).runs]


def all_pages(store: Store, where: RunFilter) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        found = store.runs.list_runs(REF, where, limit=1, cursor=cursor)
        pages.append([t.task_id for t in found.runs])
        if (cursor := found.next_cursor) is None:
            return pages


CASES = [
    (RunFilter(), ["r3", "r2", "r1"]),
    (RunFilter(model="gpt-4o-mini"), ["r1"]),
    (RunFilter(model="gpt-4o"), []),
    (RunFilter(provider="anthropic"), ["r2"]),
    (RunFilter(provider="openai", status="failed"), []),
    (RunFilter(since=ts(30 * 60_000)), ["r3", "r2"]),
    (RunFilter(until=ts(2 * HOUR)), ["r2", "r1"]),
    (RunFilter(since=ts(0), until=ts(HOUR)), ["r1"]),
    (RunFilter(cost=Range(low=0.1)), ["r1"]),
    (RunFilter(cost=Range(high=0.0)), ["r3"]),
    (RunFilter(tokens=Range(low=1000)), ["r2"]),
    (RunFilter(tokens=Range(high=200)), ["r1"]),
    (RunFilter(duration=Range(100, 1000)), ["r2"]),
    (RunFilter(score=Range(low=0.5)), ["r1"]),
    (RunFilter(score=Range(high=0.5)), ["r2"]),
    (RunFilter(text="portugal"), ["r3"]),
    (RunFilter(text="portugal", content=True), ["r3", "r1"]),
    (RunFilter(text="LOOK"), ["r3"]),
    (RunFilter(text="ug"), ["r3"]),
    (RunFilter(text="ug", content=True), ["r3", "r1"]),
    (RunFilter(text="portugal", content=True, status="success", model="gpt-4o-mini"), ["r1"]),
    (RunFilter(text="plan", model="gpt-4o-mini"), ["r1"]),
    (RunFilter(text="lookup", model="gpt-4o-mini"), []),
    (RunFilter(text="ll", provider="anthropic"), ["r2"]),
    (RunFilter(tag="beta", content=True), ["r1"]),
    (RunFilter(tag="nope", content=True), []),
    (RunFilter(meta=(("env", "prod"),), content=True), ["r1"]),
    (RunFilter(meta=(("env", "dev"), ("attempt", "2")), content=True), []),
    (RunFilter(meta=(("attempt", "2"),), tag="eu", content=True), ["r1"]),
]


@pytest.mark.parametrize(("where", "expected"), CASES)
def test_each_filter_keeps_the_same_runs_on_every_store(runs: Store, where: RunFilter,
                                                        expected: list[str]) -> None:
    assert ids(runs, where) == expected


@pytest.mark.parametrize("where", [RunFilter(tag="beta"), RunFilter(meta=(("env", "prod"),))])
def test_a_visitors_filter_reads_no_hidden_metadata(runs: Store, where: RunFilter) -> None:
    """The SDK's metadata is content: a filter that is not the owner's cannot tell it."""
    assert ids(runs, where) == []


@pytest.mark.parametrize(("sort", "descending", "expected"), [
    ("started", False, ["r1", "r2", "r3"]),
    ("duration", True, ["r3", "r2", "r1"]),
    ("duration", False, ["r1", "r2", "r3"]),
    ("cost", True, ["r1", "r2", "r3"]),
    ("tokens", True, ["r2", "r1", "r3"]),
    ("tokens", False, ["r3", "r1", "r2"]),
    ("score", True, ["r1", "r2", "r3"]),
    ("score", False, ["r3", "r2", "r1"]),
])
def test_every_sort_orders_and_pages_alike_runs_without_the_value_lowest(
        runs: Store, sort: str, descending: bool, expected: list[str]) -> None:
    where = RunFilter(sort=sort, descending=descending)
    assert ids(runs, where) == expected
    assert all_pages(runs, where) == [[i] for i in expected]


def test_a_sorted_and_filtered_list_pages_through_what_it_keeps(runs: Store) -> None:
    where = RunFilter(sort="tokens", descending=False, text="l", content=True)
    assert all_pages(runs, where) == [["r3"], ["r1"], ["r2"]]


def test_a_cursor_of_another_order_is_refused(runs: Store) -> None:
    cursor = runs.runs.list_runs(REF, RunFilter(), limit=1).next_cursor
    assert cursor
    with pytest.raises(ValueError):
        runs.runs.list_runs(REF, RunFilter(sort="cost"), limit=1, cursor=cursor)


def test_content_that_arrives_later_is_found_and_a_changed_name_is_found_by_its_new_one(
        store: Store) -> None:
    """SQLite's index follows each task's changes (its triggers): a span stored without
    output, then given one."""
    meta = AgentMeta(slug="agent-1")
    store.ingest.ingest("alice", meta, clean([
        ev("task.start", "late", name="draft"),
        ev("task.start", "late-c", name="call", parent_task_id="late")]))
    assert ids(store, RunFilter(text="Lisbon", content=True)) == []
    store.ingest.ingest("alice", meta, clean([
        ev("task.end", "late-c", status="success", output="Lisbon", duration_ms=1),
        ev("task.end", "late", status="success", output="ok", duration_ms=2)]))
    assert ids(store, RunFilter(text="lisbon", content=True)) == ["late"]
    assert ids(store, RunFilter(text="lisbon")) == []


def test_sqlite_answers_alike_from_the_index_and_from_each_runs_spans(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A span filter the index finds many spans for is answered run by run (`PROBE`): both
    ways keep the same runs."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        indexed = seed(store)
        monkeypatch.setattr(sqlite_run_list, "PROBE", 0)
        for where, expected in CASES:
            assert ids(indexed, where) == expected, where
    finally:
        store.close()


def index_checks(store: SqliteStore) -> None:
    """The spans not in the index yet indexed now, and the index as FTS5 would build it from
    every span: what each change took out of it was what it held."""
    with store.db.write() as conn:
        chunk, run_text.CHUNK = run_text.CHUNK, 0
        try:
            run_text.index_new_spans(conn)
        finally:
            run_text.CHUNK = chunk
        conn.execute("INSERT INTO tasks_text (tasks_text, rank) VALUES ('integrity-check', 1)")


@pytest.mark.parametrize("chunk", [1, 3, run_text.CHUNK])
def test_sqlite_finds_spans_in_the_search_index_and_not_yet_in_it_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """New spans join the index `run_text.CHUNK` at a time: each batch's (1), the seed's but not
    the later batches' (3), none yet. A search finds the same runs every way, a span's new text
    and not its old, and the index holds what the spans hold."""
    monkeypatch.setattr(run_text, "CHUNK", chunk)
    store = SqliteStore.open(tmp_path / "bench.db")
    meta = AgentMeta(slug="agent-1")
    try:
        seed(store)
        for where, expected in CASES:
            assert ids(store, where) == expected, where
        store.ingest.ingest("alice", meta, clean([
            ev("task.start", "late", name="draft", input="Madrid"),
            ev("task.start", "late-c", name="call", parent_task_id="late")]))
        store.ingest.ingest("alice", meta, clean([
            ev("task.start", "late", name="redraft"),
            ev("task.end", "late-c", status="success", output="Oporto", duration_ms=1),
            ev("task.end", "late", status="success", output="ok", duration_ms=2)]))
        assert ids(store, RunFilter(text="oporto", content=True)) == ["late"]
        assert ids(store, RunFilter(text="redraft")) == ["late"]
        assert ids(store, RunFilter(text="madrid", content=True)) == ["late"]
        index_checks(store)
    finally:
        store.close()


def test_sqlite_finds_a_span_given_the_rowid_of_a_deleted_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new span given the rowid of the last span, indexed and deleted (SQLite gives the rowid
    after the last) is read beside the index, as the mark comes back with the deletion."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        monkeypatch.setattr(run_text, "CHUNK", 1)
        seed(store)
        with store.db.write() as conn:
            conn.execute("DELETE FROM tasks WHERE rowid = (SELECT max(rowid) FROM tasks)")
        monkeypatch.setattr(run_text, "CHUNK", 1000)
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean([
            ev("task.start", "new", name="Zanzibar"),
            ev("task.end", "new", status="success", duration_ms=1)]))
        assert ids(store, RunFilter(text="zanzibar")) == ["new"]
        index_checks(store)
    finally:
        store.close()


def without_run_text(conn: sqlite3.Connection) -> None:
    """A SQLite file taken back to before the runs list's migration (`add_run_text`) and the
    ones after it: its search index and triggers, the roots' indexes by sortable column, and
    what each later migration's schema creates (tables, indexes, columns), gone."""
    for trigger in ("insert", "update", "delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS tasks_text_{trigger}")  # none on insert now
    conn.execute("DROP TABLE tasks_text")
    for column in ("duration", "cost", "tokens", "score"):
        conn.execute(f"DROP INDEX tasks_roots_by_{column}")
    for later in reversed(MIGRATIONS[MIGRATIONS.index(add_run_text) + 1:]):
        if later is rekey_events:
            legacy_events(conn)
            continue
        if later is slim_events:  # while every column of `tasks` is there to give them back
            written_out_events(conn)
            continue
        if later in (narrow_run_text, group_events):  # its index dropped above; the events
            continue  # taken back to before either by `legacy_events`
        if later is SPANS_BY_RUN:  # the run's indexes (those left) as they were, roots in them
            for name, before in (("tasks_by_run", "CREATE INDEX tasks_by_run ON tasks "
                                  "(agent_id, run_id, sort_ts, task_id)"),
                                 ("tasks_failed_by_run", RUN_FAILURES_SCHEMA)):
                if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (name,)).fetchone():
                    conn.execute(f"DROP INDEX {name}")
                    conn.execute(before)
            continue
        if later is pend_run_text:  # its triggers dropped above
            conn.execute("DROP TABLE tasks_text_upto")
            continue
        if later is compact_task_times:
            text_task_times(conn)
            continue
        if later is compact_task_row:
            text_task_row(conn)
            continue
        if later is binary_task_ids:
            text_task_ids(conn)
            continue
        assert isinstance(later, str), f"take {later} back here too"
        for index in re.findall(r"CREATE (?:UNIQUE )?INDEX (?:IF NOT EXISTS )?(\w+)", later):
            conn.execute(f"DROP INDEX IF EXISTS {index}")
        for table, column in re.findall(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", later):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        for table in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", later):
            conn.execute(f"DROP TABLE {table}")


def before_pending_text(conn: sqlite3.Connection) -> None:
    """The search index's triggers as they were before `pend_run_text`: every span indexed as
    it is written."""
    conn.execute("DROP TABLE tasks_text_upto")
    for trigger in ("insert", "update", "delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS tasks_text_{trigger}")  # none on insert now
    for statement in sqlite_run_list.RUN_TEXT_SCHEMA[1:4]:
        conn.execute(statement)


def reopened(store: SqliteStore, path: Path, step: Migration,
             take_back: Callable[[sqlite3.Connection], None]) -> SqliteStore:
    """The store's file taken back (`take_back`) to before migration `step`, closed and opened
    again: every migration from `step` on has run."""
    with store.db.write() as conn:
        take_back(conn)
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(step)}")
    store.close()
    store = SqliteStore.open(path)
    assert store.schema_version == len(MIGRATIONS)
    return store


def test_sqlite_builds_the_indexes_of_tasks_stored_before_them(tmp_path: Path) -> None:
    path = tmp_path / "bench.db"
    store = SqliteStore.open(path)
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean([
        *task_events("old", "before the index", output="stored long ago")]))
    store = reopened(store, path, add_run_text, without_run_text)  # as before the index
    try:
        assert ids(store, RunFilter(text="long ago", content=True)) == ["old"]
        assert ids(store, RunFilter(text="INDEX")) == ["old"]
        assert ids(store, RunFilter(sort="cost")) == ["old"]
    finally:
        store.close()


def test_sqlite_narrows_the_search_index_of_an_older_file_and_finds_as_before(
        tmp_path: Path) -> None:
    """A file whose index knows where each trigram is (`detail=full`, before migration 28):
    opened, its index knows only which spans hold one, a third of the bytes, and a search finds
    what it found (substrings, any case, only in the names for a name search)."""
    path = tmp_path / "bench.db"
    store = SqliteStore.open(path)
    seed(store)
    before = [ids(store, where) for where, _ in CASES]

    def wide_index(conn: sqlite3.Connection) -> None:
        conn.execute("DROP TABLE tasks_text")
        conn.execute(sqlite_run_list.RUN_TEXT_SCHEMA[0])
        conn.execute(sqlite_run_list.RUN_TEXT_SCHEMA[-len(sqlite_run_list.SORT_INDEXES) - 1])
        keyed_events(conn)  # as events were then
        before_pending_text(conn)

    store = reopened(store, path, narrow_run_text, wide_index)
    try:
        sql = store.db.reader().execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'tasks_text'").fetchone()[0]
        assert "detail=none" in sql
        assert [ids(store, where) for where, _ in CASES] == before == [e for _, e in CASES]
    finally:
        store.close()


def test_dynamodb_search_of_spans_is_bounded_and_says_how_far_it_looked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page reads at most `SEARCH_SPANS` spans: it stops with a cursor, saying how many runs
    it looked at and back to when, and the pages that follow find the rest."""
    from bench_core.store.dynamodb import runs as dynamo_runs

    from tests.aws.moto_table import dynamo_store

    monkeypatch.setattr(dynamo_runs, "SEARCH_SPANS", 1)
    with dynamo_store() as store:
        seed(store)
        where = RunFilter(text="portugal", content=True)
        found: list[str] = []
        pages = []
        cursor = None
        while True:
            page = store.runs.list_runs(REF, where, limit=50, cursor=cursor)
            found += [t.task_id for t in page.runs]
            pages.append(page)
            if (cursor := page.next_cursor) is None:
                break
        assert found == ["r3", "r1"]
        assert len(pages) > 1
        assert all(p.examined is not None and p.examined >= 1 for p in pages)
        assert all(p.looked_back_to is not None for p in pages[:-1])
        assert pages[-1].looked_back_to is None
        unbounded = store.runs.list_runs(REF, RunFilter(status="failed"))
        assert unbounded.examined is None


def test_sqlite_metadata_filter_looks_a_bounded_way_per_page_and_pages_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packed metadata is read run by run: a page looks at `METADATA_SCAN` runs at most, says
    how far it looked, and the pages that follow find the rest, in any order."""
    monkeypatch.setattr(sqlite_run_list, "METADATA_SCAN", 1)
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        seed(store)
        for where, expected in ((RunFilter(tag="beta", content=True), ["r1"]),
                                (RunFilter(meta=(("env", "dev"),), content=True,
                                           sort="duration", descending=False), ["r2"]),
                                (RunFilter(tag="beta"), [])):
            found: list[str] = []
            cursor = None
            looked = []
            while True:
                page = store.runs.list_runs(REF, where, limit=50, cursor=cursor)
                found += [t.task_id for t in page.runs]
                looked.append(page.looked_back_to)
                if (cursor := page.next_cursor) is None:
                    break
            assert found == expected, where
            assert len(looked) >= 3 and all(looked[:3]), where
    finally:
        store.close()
