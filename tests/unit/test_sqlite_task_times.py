"""A task's start and record moment as the SQLite store keeps them (`store/sqlite/task_times.py`):
compact, read back as they were sent, `recorded` in its order; and the migration that compacts
an older file's, which resumes where it stopped."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.folding import recorded_at
from bench_core.domain.models import AgentMeta, AgentRef, iso_ms
from bench_core.store.sqlite import task_times
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_times import (
    pack_recorded,
    pack_time,
    unpack_recorded,
    unpack_time,
)

from tests.factories import clean, ev, task_events
from tests.sqlite_layouts import reopened_after_kill, text_task_times

COMPACTED = MIGRATIONS.index(task_times.compact_task_times)
"""The version of a file from before compact task times."""


def test_recorded_moments_read_back_and_sort_as_their_text() -> None:
    texts = []
    for _ in range(500):
        low = random.randrange(0, 253402300799999)
        events = clean([ev("custom", f"t{i}", ts=iso_ms(low + random.randrange(0, 5000)))
                        for i in range(random.randrange(1, 4))])
        texts += recorded_at(events).values()
    for text in texts:
        stored = pack_recorded(text)
        assert isinstance(stored, bytes) and len(stored) == 15
        assert unpack_recorded(stored) == text
    assert sorted(texts) == [unpack_recorded(b) for b in sorted(map(pack_recorded, texts))]


@pytest.mark.parametrize("text", [
    "2026-12-02T16:00:01Z#2026-12-02T16:00:01.000Z#000001",  # not ingest's form of a time
    "2026-12-02T16:00:01.000Z#2026-12-02T16:00:01.000Z#1",
    "something else", "",
])
def test_a_moment_in_another_form_is_kept_as_text(text: str) -> None:
    assert pack_recorded(text) == text
    assert unpack_recorded(pack_recorded(text)) == text


def test_a_start_is_kept_in_milliseconds_when_they_give_it_back() -> None:
    assert pack_time("2026-12-02T16:00:01.250Z") == (1796227201250).to_bytes(6)
    assert unpack_time((1796227201250).to_bytes(6)) == "2026-12-02T16:00:01.250Z"
    assert pack_time("2026-12-02T16:00:01Z") == "2026-12-02T16:00:01Z"
    assert pack_time(None) is None and unpack_time(None) is None


def test_a_bound_compares_packed_times_as_their_texts_compared_to_it() -> None:
    """A filter's or a sweep's bound of any form (a time, a date, a year, '', past 9999) keeps
    `>=` and `<` of the texts when the times are packed (`task_row.py`)."""
    rng = random.Random(5)
    times = [iso_ms(rng.randrange(0, 253402300799999)) for _ in range(300)]
    times += ["1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"]
    bounds = ["", "0000", "1970", "2026-12-02", "2026-12-02T16:00:00Z", "9999", "zzz",
              "2026-12-02T16:00:00.000Z", *(t[:rng.randrange(0, 25)] for t in times[:100])]
    for bound in bounds:
        packed = task_times.time_bound(bound)
        for text in times:
            stored = task_times.packed_time(text)
            assert isinstance(stored, bytes)
            assert (text >= bound) == (stored >= packed), (text, bound)


def test_an_old_files_times_are_compacted_on_open_by_a_migration_killed_and_resumed(
        tmp_path: Path) -> None:
    """A hard kill (no rollback, no Python cleanup) inside a chunk's transaction: the next open
    finds the chunks before it compacted, not the half-written one, and finishes; every task
    and session reads as it did, and no start or record moment is left as text."""
    path = tmp_path / "bench.db"
    expected = _old_file(path)
    store = reopened_after_kill(path, "task_times", version=COMPACTED, tasks=13,
                                done="typeof(recorded) = 'blob'")
    try:
        assert _seen(store) == expected
        conn = store.db.reader()
        assert conn.execute(
            "SELECT count(*) FROM tasks WHERE typeof(started_at) = 'text' "
            "OR typeof(recorded) = 'text'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM tasks WHERE typeof(started_at) = 'blob'"
                            ).fetchone()[0] == 13
        task_times.compact_task_times(store.db, len(MIGRATIONS))  # as another process meanwhile
        assert _seen(store) == expected
    finally:
        store.close()


def _old_file(path: Path) -> dict[str, Any]:
    """A file of runs in a session (some in one batch) and a child whose parent never came,
    taken back to text times; and what today's reads gave of it."""
    store = SqliteStore.open(path)
    meta = AgentMeta(slug="agent-1")
    starts = {}
    for i in range(4):
        runs = [task_events(f"run-{i}-{j}", parent=None) for j in range(3)]
        for events in runs:
            events[0]["session_id"] = "s-1"
            starts[events[0]["task_id"]] = events[0]["ts"]
        store.ingest.ingest("alice", meta, clean([e for events in runs for e in events]))
    store.ingest.ingest("alice", meta, clean(task_events("orphan", parent="never-came")))
    expected = _seen(store)
    assert {t.task_id: t.started_at for t in expected["tasks"] if t.task_id in starts} == starts
    assert all(t.recorded.count("#") == 2 for t in expected["tasks"])
    with store.db.write() as conn:
        text_task_times(conn)
        conn.execute(f"PRAGMA user_version = {COMPACTED}")
    store.close()
    return expected


def _seen(store: SqliteStore) -> dict[str, Any]:
    ref = AgentRef("alice", "agent-1")
    ids = [r[0] for r in store.db.reader().execute("SELECT task_id FROM tasks ORDER BY task_id")]
    return {"tasks": [store.ingest.get_task(ref, t) for t in ids],
            "roots": store.ingest.list_tasks(ref, limit=100),
            "session": store.runs.session_runs(ref, "s-1", limit=100)}
