"""What only the SQLite adapter promises: its connections' settings, all-or-nothing writes, and
files of an older schema upgraded in place (`store/sqlite/connection.py`, `store.py`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from bench_core.domain import stats
from bench_core.domain.keys import hash_key
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.sqlite.connection import Database
from bench_core.store.sqlite.store import MIGRATIONS, RANKED_SINCE, SqliteStore

from tests.factories import clean, task_events


def settings(conn: sqlite3.Connection) -> tuple[str, int, int]:
    return tuple(conn.execute(f"PRAGMA {name}").fetchone()[0]  # type: ignore[return-value]
                 for name in ("journal_mode", "synchronous", "cache_size"))


def test_readers_and_the_writer_run_in_wal_with_the_same_settings(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        assert settings(store.db.reader()) == ("wal", 1, -65536)
        with store.db.write() as conn:
            assert settings(conn) == ("wal", 1, -65536)
        assert store.schema_version == len(MIGRATIONS)
    finally:
        store.close()


def test_bytes_and_none_bind_as_they_are_through_their_registered_adapters(
        tmp_path: Path) -> None:
    """The store registers adapters that hand bytes and None back (`connection.py`: asking
    whether they adapt cost ingest some 5%): they still bind as a BLOB and a NULL."""
    assert sqlite3.adapters[(bytes, sqlite3.PrepareProtocol)] is bytes
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    conn = Database(tmp_path / "bench.db").reader()
    assert conn.execute("SELECT typeof(?), typeof(?), ?, ?, hex(?)",
                        (b"\x00a", None, b"\x00a", None, b"\xff")).fetchone()[:] == (
        "blob", "null", b"\x00a", None, "FF")


def test_a_write_that_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        with pytest.raises(RuntimeError), store.db.write() as conn:
            conn.execute("INSERT INTO users (login, created_at) VALUES ('alice', '')")
            raise RuntimeError("half-way")
        assert store.db.reader().execute("SELECT count(*) FROM users").fetchone()[0] == 0
        with store.db.write() as conn:  # the writer is usable again
            conn.execute("INSERT INTO users (login, created_at) VALUES ('bob', '')")
        assert [r[0] for r in store.db.reader().execute("SELECT login FROM users")] == ["bob"]
    finally:
        store.close()


def test_a_file_from_before_the_leaderboard_ranks_its_agents_on_upgrade(tmp_path: Path) -> None:
    old = Database(tmp_path / "bench.db")
    old.migrate(MIGRATIONS[:RANKED_SINCE - 1], lambda conn, version: None)
    with old.write() as conn:
        conn.execute("INSERT INTO users (login, created_at) VALUES ('alice', '')")
        conn.execute("INSERT INTO agents (login, slug, created_at, runs, successes, latency_hist) "
                     "VALUES ('alice', 'old-timer', '', 12, 12, ?)",
                     (json.dumps(stats.empty_histogram()),))
    assert old.schema_version == RANKED_SINCE - 1
    old.close()
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert [a.slug for a in store.leaderboard.leaderboard("runs")] == ["old-timer"]
        assert [a.slug for a in store.leaderboard.leaderboard("success")] == ["old-timer"]
        assert store.agents.get_agent(AgentRef("alice", "old-timer")).stats.runs == 12
    finally:
        store.close()


def test_another_process_opening_the_database_leaves_a_running_servers_wal_alone(
        tmp_path: Path) -> None:
    """`make run` in one terminal, `bench-server keys create` in another: the server's readers
    and writer keep their locks on the file (nothing else in the process opens it), so the
    short-lived process does not take itself for the last one and delete the WAL in use."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        meta = AgentMeta(slug="agent-1")
        store.ingest.ingest("alice", meta, clean(task_events("t1")))
        reader = threading.Thread(target=store.agents.get_agent, args=(AgentRef("alice", "agent-1"),))
        reader.start()  # a reader connection of its own, opened after the writer's
        reader.join()
        done = subprocess.run(
            [sys.executable, "-m", "bench_core.cli", "keys", "create", "--login", "bob"],
            env={**os.environ, "BENCH_DATA_DIR": str(tmp_path)}, capture_output=True,
            text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "bench.db-wal").exists()
        store.ingest.ingest("alice", meta, clean(task_events("t2")))
        assert store.agents.get_agent(AgentRef("alice", "agent-1")).stats.runs == 2
        assert store.accounts.key_by_hash(hash_key(done.stdout.strip())) is not None
    finally:
        store.close()
