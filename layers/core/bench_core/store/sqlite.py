"""The SQLite adapter: the embedded default. One file, WAL, versioned migrations.

Writes take one `BEGIN IMMEDIATE` transaction per batch (behind a process lock, so threads queue
instead of spinning on `SQLITE_BUSY`), which makes a batch all-or-nothing and makes the dedupe of
event ids exact even with many concurrent senders. Readers never block writers in WAL mode.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import stats
from ..folding import fold_batch
from ..models import (
    Agent,
    AgentMeta,
    AgentRef,
    AgentStats,
    CleanEvent,
    IngestOutcome,
    KeyRecord,
    RunDelta,
    TaskState,
    iso,
    utcnow,
)
from ..values import dumps
from . import decode_cursor, encode_cursor

MIGRATIONS: list[str] = [
    # 1: the foundation
    """
    CREATE TABLE users (login TEXT PRIMARY KEY, created_at TEXT NOT NULL);
    CREATE TABLE api_keys (
        key_hash TEXT PRIMARY KEY, prefix TEXT NOT NULL, login TEXT NOT NULL, agent_slug TEXT,
        name TEXT, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT);
    CREATE INDEX api_keys_login ON api_keys (login, created_at);
    CREATE TABLE agents (
        id INTEGER PRIMARY KEY, login TEXT NOT NULL, slug TEXT NOT NULL,
        display_name TEXT, model TEXT, framework TEXT, architecture TEXT, tools TEXT,
        visibility TEXT NOT NULL DEFAULT 'public', hide_inputs INTEGER NOT NULL DEFAULT 0,
        hide_outputs INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
        runs INTEGER NOT NULL DEFAULT 0, successes INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0, cost_usd_total REAL NOT NULL DEFAULT 0,
        latency_hist TEXT NOT NULL DEFAULT '[]', first_event_at TEXT, last_event_at TEXT,
        eval_count INTEGER NOT NULL DEFAULT 0, eval_score_sum REAL NOT NULL DEFAULT 0,
        dropped_events INTEGER NOT NULL DEFAULT 0,
        UNIQUE (login, slug));
    CREATE TABLE agent_days (
        agent_id INTEGER NOT NULL, day TEXT NOT NULL, runs INTEGER NOT NULL DEFAULT 0,
        successes INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0, PRIMARY KEY (agent_id, day)) WITHOUT ROWID;
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        kind TEXT NOT NULL, ts TEXT NOT NULL, task_id TEXT, body TEXT NOT NULL,
        UNIQUE (agent_id, event_id));
    CREATE INDEX events_recent ON events (agent_id, ts, seq);
    CREATE INDEX events_task ON events (agent_id, task_id) WHERE task_id IS NOT NULL;
    CREATE TABLE tasks (
        agent_id INTEGER NOT NULL, task_id TEXT NOT NULL, parent_task_id TEXT, name TEXT,
        status TEXT NOT NULL, input TEXT, output TEXT, metadata TEXT, duration_ms REAL,
        cost_usd REAL, reported_cost_usd REAL, cost_logged_usd REAL NOT NULL DEFAULT 0,
        child_cost_usd REAL NOT NULL DEFAULT 0, cost_breakdown TEXT, started_at TEXT,
        ended_at TEXT, sort_ts TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, task_id)) WITHOUT ROWID;
    CREATE INDEX tasks_by_parent ON tasks (agent_id, parent_task_id, sort_ts, task_id);
    CREATE INDEX tasks_by_status ON tasks (agent_id, parent_task_id, status, sort_ts, task_id);
    """,
]

_AGENT_COLS = ("login, slug, display_name, model, framework, architecture, tools, visibility, "
               "hide_inputs, hide_outputs, created_at, runs, successes, failures, "
               "cost_usd_total, latency_hist, first_event_at, last_event_at, eval_count, "
               "eval_score_sum, dropped_events")
_TASK_COLS = ("task_id, parent_task_id, name, status, input, output, metadata, duration_ms, "
              "cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, cost_breakdown, "
              "started_at, ended_at, version")
_JSON_TASK_FIELDS = ("input", "output", "metadata", "cost_breakdown")
SETTABLE = frozenset({"visibility", "hide_inputs", "hide_outputs", "display_name"})


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else dumps(value)


class SqliteStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._migrate()

    # ---- plumbing ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=30)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    @property
    def schema_version(self) -> int:
        return self._conn().execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # ---- keys ------------------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (record.login, record.created_at))
            conn.execute(
                "INSERT INTO api_keys (key_hash, prefix, login, agent_slug, name, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (record.key_hash, record.prefix, record.login, record.agent_slug, record.name,
                 record.created_at))

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        row = self._conn().execute("SELECT * FROM api_keys WHERE key_hash = ?",
                                   (key_hash,)).fetchone()
        return KeyRecord(**dict(row)) if row else None

    def list_keys(self, login: str | None = None) -> list[KeyRecord]:
        sql, args = "SELECT * FROM api_keys", ()
        if login is not None:
            sql, args = sql + " WHERE login = ?", (login,)
        rows = self._conn().execute(sql + " ORDER BY created_at, key_hash", args).fetchall()
        return [KeyRecord(**dict(r)) for r in rows]

    def revoke_key(self, key_hash: str, when: str) -> bool:
        with self._write() as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? "
                               "AND revoked_at IS NULL", (when, key_hash))
            return cur.rowcount == 1

    def touch_key(self, key_hash: str, when: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE api_keys SET last_used_at = ? WHERE key_hash = ?",
                         (when, key_hash))

    # ---- agents ----------------------------------------------------------------------------

    def _agent_from_row(self, row: sqlite3.Row) -> Agent:
        d = dict(row)
        return Agent(
            login=d["login"], slug=d["slug"], display_name=d["display_name"], model=d["model"],
            framework=d["framework"], architecture=d["architecture"], tools=_loads(d["tools"]),
            visibility=d["visibility"], hide_inputs=bool(d["hide_inputs"]),
            hide_outputs=bool(d["hide_outputs"]), created_at=d["created_at"],
            stats=AgentStats(
                runs=d["runs"], successes=d["successes"], failures=d["failures"],
                cost_usd_total=d["cost_usd_total"], latency_hist=json.loads(d["latency_hist"]),
                first_event_at=d["first_event_at"], last_event_at=d["last_event_at"],
                eval_count=d["eval_count"], eval_score_sum=d["eval_score_sum"],
                dropped_events=d["dropped_events"]))

    def get_agent(self, ref: AgentRef) -> Agent | None:
        row = self._conn().execute(f"SELECT {_AGENT_COLS} FROM agents WHERE login = ? AND slug = ?",
                                   (ref.login, ref.slug)).fetchone()
        return self._agent_from_row(row) if row else None

    def list_agents(self, login: str) -> list[Agent]:
        rows = self._conn().execute(
            f"SELECT {_AGENT_COLS} FROM agents WHERE login = ? ORDER BY slug", (login,)).fetchall()
        return [self._agent_from_row(r) for r in rows]

    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
        unknown = set(changes) - SETTABLE
        if unknown:
            raise ValueError(f"not settable: {sorted(unknown)}")
        if changes:
            sets = ", ".join(f"{name} = ?" for name in changes)
            with self._write() as conn:
                conn.execute(f"UPDATE agents SET {sets} WHERE login = ? AND slug = ?",
                             (*changes.values(), ref.login, ref.slug))
        return self.get_agent(ref)

    # ---- ingest ----------------------------------------------------------------------------

    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        with self._write() as conn:
            agent_id = self._ensure_agent(conn, login, meta)
            fresh = self._insert_new_events(conn, agent_id, events)
            task_ids = {e.task_id for e in fresh if e.task_id and e.kind.startswith("task.")}
            states = self._load_tasks(conn, agent_id, task_ids)
            fold = fold_batch(states, fresh)
            self._save_tasks(conn, agent_id, fold.tasks.values(), existing=set(states))
            for parent, amount in fold.child_costs.items():
                self._add_child_cost(conn, agent_id, parent, amount)
            self._apply_runs(conn, agent_id, [delta for _, delta in fold.runs], fresh, dropped)
        return IngestOutcome(accepted=len(fresh), duplicates=len(events) - len(fresh),
                             finished=fold.finished)

    def _insert_new_events(self, conn: sqlite3.Connection, agent_id: int,
                           events: list[CleanEvent]) -> list[CleanEvent]:
        """Insert the events not stored yet; return them, in batch order. `RETURNING` lists
        only the rows actually inserted, so one statement per chunk does the dedupe."""
        inserted: set[str] = set()
        for i in range(0, len(events), 1000):
            chunk = events[i:i + 1000]
            rows = conn.execute(
                "INSERT OR IGNORE INTO events (agent_id, event_id, kind, ts, task_id, body) "
                f"VALUES {', '.join(['(?, ?, ?, ?, ?, ?)'] * len(chunk))} RETURNING event_id",
                [v for e in chunk for v in (agent_id, e.id, e.kind, e.ts, e.task_id,
                                            dumps(e.body))]).fetchall()
            inserted.update(r[0] for r in rows)
        fresh = []
        for event in events:
            if event.id in inserted:
                inserted.discard(event.id)  # a repeated id within the batch counts once
                fresh.append(event)
        return fresh

    def _ensure_agent(self, conn: sqlite3.Connection, login: str, meta: AgentMeta) -> int:
        now = iso(utcnow())
        conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)", (login, now))
        updates = {k: (dumps(v) if k == "tools" else v) for k, v in meta.updates().items()}
        row = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                           (login, meta.slug)).fetchone()
        if row is None:
            cols = ["login", "slug", "created_at", "latency_hist", *updates]
            values = [login, meta.slug, now, json.dumps(stats.empty_histogram()),
                      *updates.values()]
            cur = conn.execute(f"INSERT INTO agents ({', '.join(cols)}) VALUES "
                               f"({', '.join('?' * len(cols))})", values)
            return int(cur.lastrowid or 0)
        if updates:
            sets = ", ".join(f"{k} = ?" for k in updates)
            conn.execute(f"UPDATE agents SET {sets} WHERE id = ?", (*updates.values(), row[0]))
        return int(row[0])

    def _load_tasks(self, conn: sqlite3.Connection, agent_id: int,
                    task_ids: set[str]) -> dict[str, TaskState]:
        out: dict[str, TaskState] = {}
        ids = list(task_ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            rows = conn.execute(
                f"SELECT {_TASK_COLS} FROM tasks WHERE agent_id = ? AND task_id IN "
                f"({', '.join('?' * len(chunk))})", (agent_id, *chunk)).fetchall()
            for row in rows:
                out[row["task_id"]] = _task_from_row(row)
        return out

    def _save_tasks(self, conn: sqlite3.Connection, agent_id: int, tasks: Iterable[TaskState],
                    existing: set[str]) -> None:
        updates, inserts = [], []
        for t in tasks:
            row = (t.parent_task_id, t.name, t.status, _json_or_null(t.input),
                   _json_or_null(t.output), _json_or_null(t.metadata), t.duration_ms, t.cost_usd,
                   t.reported_cost_usd, t.cost_logged_usd, t.child_cost_usd,
                   _json_or_null(t.cost_breakdown), t.started_at, t.ended_at, t.sort_ts,
                   agent_id, t.task_id)
            (updates if t.task_id in existing else inserts).append(row)
        conn.executemany(
            "UPDATE tasks SET parent_task_id = ?, name = ?, status = ?, input = ?, output = ?, "
            "metadata = ?, duration_ms = ?, cost_usd = ?, reported_cost_usd = ?, "
            "cost_logged_usd = ?, child_cost_usd = ?, cost_breakdown = ?, started_at = ?, "
            "ended_at = ?, sort_ts = ?, version = version + 1 "
            "WHERE agent_id = ? AND task_id = ?", updates)
        conn.executemany(
            "INSERT INTO tasks (parent_task_id, name, status, input, output, metadata, "
            "duration_ms, cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, "
            "cost_breakdown, started_at, ended_at, sort_ts, agent_id, task_id) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", inserts)

    def _add_child_cost(self, conn: sqlite3.Connection, agent_id: int, parent: str,
                        amount: float) -> None:
        """A parent not seen yet gets a placeholder row; its start/end fill it in later."""
        conn.execute(
            "INSERT INTO tasks (agent_id, task_id, status, child_cost_usd, sort_ts) "
            "VALUES (?, ?, 'running', ?, '') ON CONFLICT (agent_id, task_id) "
            "DO UPDATE SET child_cost_usd = child_cost_usd + excluded.child_cost_usd",
            (agent_id, parent, amount))

    def _apply_runs(self, conn: sqlite3.Connection, agent_id: int, runs: list[RunDelta],
                    fresh: list[CleanEvent], dropped: int) -> None:
        if not fresh and not dropped:
            return
        row = conn.execute("SELECT latency_hist, first_event_at, last_event_at FROM agents "
                           "WHERE id = ?", (agent_id,)).fetchone()
        hist = json.loads(row["latency_hist"]) or stats.empty_histogram()
        for run in runs:
            if run.duration_ms is not None:
                hist[stats.bucket_index(run.duration_ms)] += 1
        times = [e.ts for e in fresh]
        first = min([t for t in (row["first_event_at"], *times) if t], default=None)
        last = max([t for t in (row["last_event_at"], *times) if t], default=None)
        ok = sum(r.success for r in runs)
        conn.execute(
            "UPDATE agents SET runs = runs + ?, successes = successes + ?, "
            "failures = failures + ?, cost_usd_total = cost_usd_total + ?, latency_hist = ?, "
            "first_event_at = ?, last_event_at = ?, dropped_events = dropped_events + ? "
            "WHERE id = ?",
            (len(runs), ok, len(runs) - ok, sum(r.cost_usd for r in runs), json.dumps(hist),
             first, last, dropped, agent_id))
        days: dict[str, list[float]] = {}
        for run in runs:
            day = days.setdefault(run.day, [0, 0, 0, 0.0])
            day[0] += 1
            day[1 if run.success else 2] += 1
            day[3] += run.cost_usd
        conn.executemany(
            "INSERT INTO agent_days (agent_id, day, runs, successes, failures, cost_usd) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, day) DO UPDATE SET "
            "runs = runs + excluded.runs, successes = successes + excluded.successes, "
            "failures = failures + excluded.failures, cost_usd = cost_usd + excluded.cost_usd",
            [(agent_id, day, *counts) for day, counts in days.items()])

    # ---- reads -----------------------------------------------------------------------------

    def _agent_id(self, ref: AgentRef) -> int | None:
        row = self._conn().execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                                   (ref.login, ref.slug)).fetchone()
        return int(row[0]) if row else None

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        agent_id = self._agent_id(ref)
        if agent_id is None:
            return []
        rows = self._conn().execute(
            "SELECT body FROM events WHERE agent_id = ? ORDER BY ts DESC, seq DESC LIMIT ?",
            (agent_id, limit)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        agent_id = self._agent_id(ref)
        if agent_id is None:
            return []
        rows = self._conn().execute(
            "SELECT body FROM events WHERE agent_id = ? AND task_id = ? ORDER BY ts, seq",
            (agent_id, task_id)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def get_task(self, ref: AgentRef, task_id: str) -> TaskState | None:
        row = self._conn().execute(
            f"SELECT {_TASK_COLS} FROM tasks JOIN agents ON agents.id = tasks.agent_id "
            "WHERE login = ? AND slug = ? AND task_id = ? AND sort_ts != ''",
            (ref.login, ref.slug, task_id)).fetchone()
        return _task_from_row(row) if row else None

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        agent_id = self._agent_id(ref)
        if agent_id is None:
            return [], None
        where = ["agent_id = ?", "parent_task_id IS ?", "sort_ts != ''"]
        args: list[Any] = [agent_id, parent]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if cursor:
            sort_ts, task_id = decode_cursor(cursor)
            where.append("(sort_ts, task_id) < (?, ?)")
            args += [sort_ts, task_id]
        rows = self._conn().execute(
            f"SELECT {_TASK_COLS}, sort_ts FROM tasks WHERE {' AND '.join(where)} "
            "ORDER BY sort_ts DESC, task_id DESC LIMIT ?", (*args, limit + 1)).fetchall()
        tasks = [_task_from_row(r) for r in rows[:limit]]
        more = len(rows) > limit
        return tasks, (encode_cursor(tasks[-1].sort_ts, tasks[-1].task_id) if more else None)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        agent_id = self._agent_id(ref)
        out: dict[str, list[str]] = {tid: [] for tid in task_ids}
        if agent_id is None or not task_ids:
            return out
        rows = self._conn().execute(
            "SELECT parent_task_id, task_id FROM tasks WHERE agent_id = ? AND parent_task_id IN "
            f"({', '.join('?' * len(task_ids))}) ORDER BY sort_ts, task_id",
            (agent_id, *task_ids)).fetchall()
        for parent, child in rows:
            out[parent].append(child)
        return out

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        agent_id = self._agent_id(ref)
        if agent_id is None:
            return []
        rows = self._conn().execute(
            "SELECT day, runs, successes, failures, cost_usd FROM agent_days "
            "WHERE agent_id = ? AND day >= ? ORDER BY day", (agent_id, since_day)).fetchall()
        return [dict(r) for r in rows]


def _task_from_row(row: sqlite3.Row) -> TaskState:
    d = {k: row[k] for k in _TASK_COLS.split(", ")}
    for name in _JSON_TASK_FIELDS:
        d[name] = _loads(d[name])
    return TaskState(**d)
