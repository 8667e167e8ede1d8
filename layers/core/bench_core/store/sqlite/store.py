"""The SQLite adapter: the embedded default. One file, WAL, versioned migrations.

Writes take one `BEGIN IMMEDIATE` transaction per batch (behind a process lock, so threads queue
instead of spinning on `SQLITE_BUSY`), which makes a batch all-or-nothing and makes the dedupe of
event ids exact even with many concurrent senders. Readers never block writers in WAL mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...domain import stats
from ...domain.field_limits import dumps
from ...domain.folding import fold_batch
from ...domain.live import LiveConnection
from ...domain.models import (
    Agent,
    AgentMeta,
    AgentRef,
    AgentStats,
    CleanEvent,
    EvalResult,
    IngestOutcome,
    KeyRecord,
    RunDelta,
    TaskState,
    Usage,
    iso,
    utcnow,
)
from ...domain.privacy import IMPLICIT_AGENT
from ...domain.ranking import SORTS, rank_values, search_text
from ...evals import records as evals
from ...runtime.config import Limits
from .. import SETTABLE, decode_cursor, encode_cursor
from .benchmarks import MIGRATION as BENCHMARKS_SCHEMA
from .benchmarks import SqliteBenchmarks
from .retention import RETENTION_SCHEMA, SqliteRetention
from .reuse import REUSE_SCHEMA, USAGE_EXPIRY_SCHEMA, SqliteReuse

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
    # 2: evaluations, judge budget and spend, failure clusters (workflows/)
    """
    ALTER TABLE tasks ADD COLUMN eval_status TEXT;
    ALTER TABLE tasks ADD COLUMN eval_score REAL;
    ALTER TABLE tasks ADD COLUMN eval TEXT;
    CREATE INDEX tasks_eval_pending ON tasks (ended_at)
        WHERE eval_status IS NULL AND ended_at IS NOT NULL AND parent_task_id IS NULL;
    CREATE INDEX tasks_low_score ON tasks (agent_id, sort_ts)
        WHERE eval_score < 0.5 AND parent_task_id IS NULL;
    ALTER TABLE agents ADD COLUMN eval_unscored INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN eval_skipped INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN eval_judge TEXT;
    ALTER TABLE agents ADD COLUMN judge_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN judge_cost_usd REAL NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN judge_daily_budget_usd REAL;
    ALTER TABLE agents ADD COLUMN judge_sample_rate REAL;
    ALTER TABLE agents ADD COLUMN cluster_due_at TEXT;
    CREATE INDEX agents_cluster_due ON agents (cluster_due_at) WHERE cluster_due_at IS NOT NULL;
    CREATE TABLE judge_days (
        agent_id INTEGER NOT NULL, day TEXT NOT NULL, tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0, PRIMARY KEY (agent_id, day)) WITHOUT ROWID;
    CREATE TABLE insights (agent_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
    """,
    # 3: leaderboard ranks (bench_core.domain.ranking): NULL where an agent does not qualify, so
    # each partial index holds exactly one ranking, already in order
    """
    ALTER TABLE agents ADD COLUMN lb_text TEXT;
    ALTER TABLE agents ADD COLUMN lb_runs REAL;
    ALTER TABLE agents ADD COLUMN lb_success REAL;
    ALTER TABLE agents ADD COLUMN lb_score REAL;
    ALTER TABLE agents ADD COLUMN lb_cost REAL;
    ALTER TABLE agents ADD COLUMN lb_latency REAL;
    CREATE INDEX agents_lb_runs ON agents (lb_runs DESC, runs DESC, login, slug)
        WHERE lb_runs IS NOT NULL;
    CREATE INDEX agents_lb_success ON agents (lb_success DESC, runs DESC, login, slug)
        WHERE lb_success IS NOT NULL;
    CREATE INDEX agents_lb_score ON agents (lb_score DESC, runs DESC, login, slug)
        WHERE lb_score IS NOT NULL;
    CREATE INDEX agents_lb_cost ON agents (lb_cost ASC, runs DESC, login, slug)
        WHERE lb_cost IS NOT NULL;
    CREATE INDEX agents_lb_latency ON agents (lb_latency ASC, runs DESC, login, slug)
        WHERE lb_latency IS NOT NULL;
    """,
    # 4: cost evidence (bench_core.domain.pricing): a task's evidence as JSON (bench_core.domain.models.Usage)
    # and the agent's evidence totals, apart from owner-reported cost
    """
    ALTER TABLE tasks ADD COLUMN evidence TEXT;
    ALTER TABLE agents ADD COLUMN evidence_cost_usd_total REAL NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_calls INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_unpriced_calls INTEGER NOT NULL DEFAULT 0;
    """,
    # 5: accounts (bench_core.accounts): GitHub identities, temporary keys, short-lived grants
    # (sessions, device logins), rate-limit counters, live-feed connections
    """
    ALTER TABLE users ADD COLUMN github_id INTEGER;
    ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
    CREATE TABLE grants (
        kind TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, expires_at TEXT NOT NULL,
        PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE INDEX grants_expiry ON grants (expires_at);
    CREATE TABLE counters (
        bucket TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX counters_expiry ON counters (expires_at);
    CREATE TABLE live_connections (
        connection_id TEXT PRIMARY KEY, login TEXT NOT NULL, slug TEXT, viewer TEXT,
        expires_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX live_connections_login ON live_connections (login);
    """,
    # authorized reuse (bench_core.reuse): capability cards, grants, quota counters, usage
    REUSE_SCHEMA,
    # benchmark suites' registry, runs, attempts and rankings (bench_core.benchmarks)
    BENCHMARKS_SCHEMA,
    # temporary agents (the /try sandbox's) and their purge (sqlite_retention)
    RETENTION_SCHEMA,
    # usage records of calls through Bench expire (sqlite_reuse, purged by sqlite_retention)
    USAGE_EXPIRY_SCHEMA,
    # what authorised a live connection (accounts.live_grants): it closes when that ends
    "ALTER TABLE live_connections ADD COLUMN grant_id TEXT;",
]
RANKED_SINCE = 3
"""The migration that added the leaderboard columns; agents older than it are ranked on upgrade."""

_EVIDENCE_STATS = ("evidence_cost_usd_total", "evidence_input_tokens", "evidence_output_tokens",
                   "evidence_calls", "evidence_unpriced_calls")
_AGENT_COLS = ("login, slug, display_name, model, framework, architecture, tools, visibility, "
               "hide_inputs, hide_outputs, created_at, runs, successes, failures, "
               "cost_usd_total, latency_hist, first_event_at, last_event_at, eval_count, "
               "eval_score_sum, dropped_events, eval_unscored, eval_skipped, eval_judge, "
               "judge_tokens, judge_cost_usd, judge_daily_budget_usd, judge_sample_rate, "
               f"{', '.join(_EVIDENCE_STATS)}, expires_at")
_TASK_COLS = ("task_id, parent_task_id, name, status, input, output, metadata, duration_ms, "
              "cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, cost_breakdown, "
              "started_at, ended_at, version, eval, evidence")
_JSON_TASK_FIELDS = ("input", "output", "metadata", "cost_breakdown")


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _private_files(path: Path) -> None:
    """The database holds private telemetry and invocation secrets: readable by this user only.
    SQLite creates the WAL and shared-memory files with the database's own mode; files an older
    version created are narrowed too."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)


class SqliteStore(SqliteReuse, SqliteBenchmarks, SqliteRetention):
    def __init__(self, path: Path | str, *,
                 event_retention_days: int = Limits.event_retention_days) -> None:
        """Events older than `event_retention_days` go at `purge_expired` (0: never)."""
        self.path = Path(path)
        self.event_retention_days = event_retention_days
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._migrate()

    # ---- plumbing ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        _private_files(self.path)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-65536")
        return conn

    def _conn(self) -> sqlite3.Connection:
        """A reader connection per thread (WAL readers run in parallel with the writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One writer connection for the process: writes are serialized anyway, and a single
        connection keeps its page cache warm instead of one cold cache per worker thread."""
        with self._write_lock:
            if self._writer is None:
                self._writer = self._connect()
            conn = self._writer
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
            if version < RANKED_SINCE:
                for login, slug in conn.execute("SELECT login, slug FROM agents").fetchall():
                    self._refresh_rank(conn, login, slug)

    @property
    def schema_version(self) -> int:
        return self._conn().execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    # ---- keys ------------------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (record.login, record.created_at))
            conn.execute(
                "INSERT INTO api_keys (key_hash, prefix, login, agent_slug, name, created_at, "
                "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.key_hash, record.prefix, record.login, record.agent_slug, record.name,
                 record.created_at, record.expires_at))

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

    # ---- users, grants, counters (bench_core.accounts) --------------------------------------

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (login, when))
            if github_id is None:
                return True
            conn.execute("UPDATE users SET github_id = ? WHERE login = ? AND github_id IS NULL",
                         (github_id, login))
            row = conn.execute("SELECT github_id FROM users WHERE login = ?", (login,)).fetchone()
        return bool(row[0] == github_id)

    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        with self._write() as conn:
            conn.execute("DELETE FROM grants WHERE expires_at <= ?", (now,))
            cur = conn.execute(
                "INSERT INTO grants (kind, id, body, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, "
                "expires_at = excluded.expires_at WHERE grants.expires_at <= ?",
                (kind, grant_id, dumps(body), expires_at, now))
            return cur.rowcount == 1

    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        row = self._conn().execute(
            "SELECT body FROM grants WHERE kind = ? AND id = ? AND expires_at > ?",
            (kind, grant_id, now)).fetchone()
        return json.loads(row[0]) if row else None

    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        with self._write() as conn:
            row = conn.execute(
                "SELECT body FROM grants WHERE kind = ? AND id = ? AND expires_at > ?",
                (kind, grant_id, now)).fetchone()
            body = json.loads(row[0]) if row else None
            if body is None or any(body.get(k) != v for k, v in expected.items()):
                return False
            conn.execute("UPDATE grants SET body = ? WHERE kind = ? AND id = ?",
                         (dumps({**body, **changes}), kind, grant_id))
        return True

    def delete_grant(self, kind: str, grant_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM grants WHERE kind = ? AND id = ?", (kind, grant_id))

    def count_hit(self, bucket: str, expires_at: str) -> int:
        with self._write() as conn:
            conn.execute("DELETE FROM counters WHERE expires_at <= ?", (iso(utcnow()),))
            row = conn.execute(
                "INSERT INTO counters (bucket, count, expires_at) VALUES (?, 1, ?) "
                "ON CONFLICT (bucket) DO UPDATE SET count = count + 1 RETURNING count",
                (bucket, expires_at)).fetchone()
        return int(row[0])

    # ---- live-feed connections (bench_core.live.apigw) --------------------------------------

    def add_connection(self, connection: LiveConnection) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM live_connections WHERE expires_at <= ?", (iso(utcnow()),))
            conn.execute(
                "INSERT OR REPLACE INTO live_connections (connection_id, login, slug, viewer, "
                "expires_at, grant_id) VALUES (?, ?, ?, ?, ?, ?)",
                (connection.connection_id, connection.login, connection.slug, connection.viewer,
                 connection.expires_at, connection.grant))

    def remove_connection(self, connection_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM live_connections WHERE connection_id = ?", (connection_id,))

    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        rows = self._conn().execute(
            "SELECT connection_id, login, slug, viewer, expires_at, grant_id AS 'grant' "
            "FROM live_connections "
            "WHERE login = ? AND expires_at > ? ORDER BY connection_id", (login, now)).fetchall()
        return [LiveConnection(**dict(r)) for r in rows]

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
                dropped_events=d["dropped_events"], eval_unscored=d["eval_unscored"],
                eval_skipped=d["eval_skipped"], eval_judge=d["eval_judge"],
                judge_tokens=d["judge_tokens"], judge_cost_usd=d["judge_cost_usd"],
                **{name: d[name] for name in _EVIDENCE_STATS}),
            judge_daily_budget_usd=d["judge_daily_budget_usd"],
            judge_sample_rate=d["judge_sample_rate"], expires_at=d["expires_at"])

    def get_agent(self, ref: AgentRef) -> Agent | None:
        """A temporary agent past its expiry is gone, even before `purge_expired` runs."""
        row = self._conn().execute(
            f"SELECT {_AGENT_COLS} FROM agents WHERE login = ? AND slug = ? "
            "AND (expires_at IS NULL OR expires_at > ?)",
            (ref.login, ref.slug, iso(utcnow()))).fetchone()
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
                self._refresh_rank(conn, ref.login, ref.slug)
        return self.get_agent(ref)

    def create_agent(self, agent: Agent) -> bool:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (agent.login, agent.created_at))
            cur = conn.execute(
                "INSERT OR IGNORE INTO agents (login, slug, display_name, visibility, hide_inputs, "
                "hide_outputs, created_at, latency_hist, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent.login, agent.slug, agent.display_name, agent.visibility,
                 int(agent.hide_inputs), int(agent.hide_outputs), agent.created_at,
                 json.dumps(stats.empty_histogram()), agent.expires_at))
            if cur.rowcount != 1:
                return False
            self._refresh_rank(conn, agent.login, agent.slug)
        return True

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
            for parent in fold.child_costs.keys() | fold.child_evidence.keys():
                self._add_child_cost(conn, agent_id, parent, fold.child_costs.get(parent, 0.0),
                                     fold.child_evidence.get(parent))
            self._apply_runs(conn, agent_id, [delta for _, delta in fold.runs], fresh,
                             dropped if fresh or not events else 0)  # a replay counts once
            self._apply_evidence(conn, agent_id, fold.evidence)
            self._refresh_rank(conn, login, meta.slug)
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
                                            e.body_json or dumps(e.body))]).fetchall()
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
            cols = ["login", "slug", "created_at", "latency_hist", *IMPLICIT_AGENT, *updates]
            values = [login, meta.slug, now, json.dumps(stats.empty_histogram()),
                      *IMPLICIT_AGENT.values(), *updates.values()]
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
                   _usage_json(t.evidence), agent_id, t.task_id)
            (updates if t.task_id in existing else inserts).append(row)
        conn.executemany(
            "UPDATE tasks SET parent_task_id = ?, name = ?, status = ?, input = ?, output = ?, "
            "metadata = ?, duration_ms = ?, cost_usd = ?, reported_cost_usd = ?, "
            "cost_logged_usd = ?, child_cost_usd = ?, cost_breakdown = ?, started_at = ?, "
            "ended_at = ?, sort_ts = ?, evidence = ?, version = version + 1 "
            "WHERE agent_id = ? AND task_id = ?", updates)
        conn.executemany(
            "INSERT INTO tasks (parent_task_id, name, status, input, output, metadata, "
            "duration_ms, cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, "
            "cost_breakdown, started_at, ended_at, sort_ts, evidence, agent_id, task_id) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", inserts)

    def _add_child_cost(self, conn: sqlite3.Connection, agent_id: int, parent: str,
                        amount: float, evidence: Usage | None) -> None:
        """A parent not seen yet gets a placeholder row; its start/end fill it in later. The
        write lock is held, so adding to the parent's evidence may read it first."""
        conn.execute(
            "INSERT INTO tasks (agent_id, task_id, status, child_cost_usd, sort_ts) "
            "VALUES (?, ?, 'running', ?, '') ON CONFLICT (agent_id, task_id) "
            "DO UPDATE SET child_cost_usd = child_cost_usd + excluded.child_cost_usd",
            (agent_id, parent, amount))
        if evidence is not None:
            row = conn.execute("SELECT evidence FROM tasks WHERE agent_id = ? AND task_id = ?",
                               (agent_id, parent)).fetchone()
            before = _usage(row[0])
            conn.execute("UPDATE tasks SET evidence = ? WHERE agent_id = ? AND task_id = ?",
                         (_usage_json(before + evidence if before else evidence), agent_id,
                          parent))

    def _apply_evidence(self, conn: sqlite3.Connection, agent_id: int,
                        total: Usage | None) -> None:
        """The batch's evidence records, added to the agent's totals."""
        if total is None:
            return
        conn.execute(
            "UPDATE agents SET evidence_cost_usd_total = evidence_cost_usd_total + ?, "
            "evidence_input_tokens = evidence_input_tokens + ?, "
            "evidence_output_tokens = evidence_output_tokens + ?, "
            "evidence_calls = evidence_calls + ?, "
            "evidence_unpriced_calls = evidence_unpriced_calls + ? WHERE id = ?",
            (total.cost_usd or 0.0, total.input_tokens or 0, total.output_tokens or 0,
             total.calls, total.unpriced_calls, agent_id))

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


    # ---- evaluations -----------------------------------------------------------------------

    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        with self._write() as conn:
            row = conn.execute(
                "SELECT agents.id, parent_task_id, status, eval, eval_judge FROM tasks "
                "JOIN agents ON agents.id = tasks.agent_id WHERE login = ? AND slug = ? "
                "AND task_id = ? AND ended_at IS NOT NULL", (ref.login, ref.slug, task_id)).fetchone()
            if row is None:
                return False
            old = EvalResult.from_dict(json.loads(row["eval"])) if row["eval"] else None
            if not evals.replaces(result, old):
                return False
            agent_id, is_run = row["id"], row["parent_task_id"] is None
            conn.execute("UPDATE tasks SET eval_status = ?, eval_score = ?, eval = ? "
                         "WHERE agent_id = ? AND task_id = ?",
                         (result.status, result.score, dumps(result.to_dict()), agent_id, task_id))
            d = evals.eval_delta(result, old, is_run=is_run)
            due = result.at if is_run and evals.makes_cluster_due(row["status"], result) else None
            conn.execute(
                "UPDATE agents SET eval_count = eval_count + ?, eval_score_sum = eval_score_sum + ?, "
                "eval_unscored = eval_unscored + ?, eval_skipped = eval_skipped + ?, "
                "judge_tokens = judge_tokens + ?, judge_cost_usd = judge_cost_usd + ?, "
                "eval_judge = ?, cluster_due_at = CASE WHEN ? IS NULL THEN cluster_due_at "
                "ELSE max(coalesce(cluster_due_at, ''), ?) END WHERE id = ?",
                (d.eval_count, d.eval_score_sum, d.eval_unscored, d.eval_skipped, d.judge_tokens,
                 d.judge_cost_usd, evals.merged_judge(row["eval_judge"], result) if is_run
                 else row["eval_judge"], due, due, agent_id))
            if d.eval_count or d.eval_score_sum:
                self._refresh_rank(conn, ref.login, ref.slug)
            if d.judge_tokens or d.judge_cost_usd:
                conn.execute(
                    "INSERT INTO judge_days (agent_id, day, tokens, cost_usd) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (agent_id, day) DO UPDATE SET tokens = tokens + excluded.tokens, "
                    "cost_usd = cost_usd + excluded.cost_usd",
                    (agent_id, result.at[:10], d.judge_tokens, d.judge_cost_usd))
        return True

    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """Nothing to do: a finished run without a result is pending by definition here, and
        `pending_evals` finds it through a partial index."""

    def pending_evals(self, since: str, before: str, limit: int) -> list[tuple[AgentRef, str]]:
        rows = self._conn().execute(
            "SELECT login, slug, task_id FROM tasks JOIN agents ON agents.id = tasks.agent_id "
            "WHERE eval_status IS NULL AND ended_at IS NOT NULL AND parent_task_id IS NULL "
            "AND ended_at >= ? AND ended_at < ? ORDER BY ended_at LIMIT ?",
            (since, before, limit)).fetchall()
        return [(AgentRef(r["login"], r["slug"]), r["task_id"]) for r in rows]

    def judge_spend(self, ref: AgentRef, day: str) -> float:
        row = self._conn().execute(
            "SELECT cost_usd FROM judge_days JOIN agents ON agents.id = judge_days.agent_id "
            "WHERE login = ? AND slug = ? AND day = ?", (ref.login, ref.slug, day)).fetchone()
        return float(row[0]) if row else 0.0

    # ---- failure clusters ------------------------------------------------------------------

    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        agent_id = self._agent_id(ref)
        if agent_id is None:
            return []
        conn = self._conn()
        failed = conn.execute(
            f"SELECT {_TASK_COLS}, sort_ts FROM tasks WHERE agent_id = ? AND parent_task_id IS NULL "
            "AND status = 'failed' AND sort_ts != '' ORDER BY sort_ts DESC, task_id DESC LIMIT ?",
            (agent_id, limit)).fetchall()
        low = conn.execute(
            f"SELECT {_TASK_COLS}, sort_ts FROM tasks WHERE agent_id = ? AND parent_task_id IS NULL "
            f"AND eval_score < {evals.LOW_SCORE} ORDER BY sort_ts DESC, task_id DESC LIMIT ?",
            (agent_id, limit)).fetchall()
        rows = {r["task_id"]: r for r in (*failed, *low)}.values()
        newest = sorted(rows, key=lambda r: (r["sort_ts"], r["task_id"]), reverse=True)
        return [_task_from_row(r) for r in newest[:limit]]

    def save_insights(self, ref: AgentRef, insights: dict[str, Any]) -> None:
        with self._write() as conn:
            agent_id = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                                    (ref.login, ref.slug)).fetchone()
            if agent_id is None:
                return
            conn.execute("INSERT INTO insights (agent_id, body) VALUES (?, ?) "
                         "ON CONFLICT (agent_id) DO UPDATE SET body = excluded.body",
                         (agent_id[0], dumps(insights)))
            conn.execute("UPDATE agents SET cluster_due_at = NULL WHERE id = ? AND cluster_due_at <= ?",
                         (agent_id[0], insights["computed_at"]))

    def get_insights(self, ref: AgentRef) -> dict[str, Any] | None:
        row = self._conn().execute(
            "SELECT body FROM insights JOIN agents ON agents.id = insights.agent_id "
            "WHERE login = ? AND slug = ?", (ref.login, ref.slug)).fetchone()
        return json.loads(row[0]) if row else None

    def clusters_due(self, limit: int) -> list[AgentRef]:
        rows = self._conn().execute(
            "SELECT login, slug FROM agents WHERE cluster_due_at IS NOT NULL "
            "ORDER BY cluster_due_at LIMIT ?", (limit,)).fetchall()
        return [AgentRef(r["login"], r["slug"]) for r in rows]

    # ---- leaderboard -----------------------------------------------------------------------

    def _refresh_rank(self, conn: sqlite3.Connection, login: str, slug: str) -> None:
        """Recompute the agent's leaderboard columns; called by every write that changes what
        they derive from (counters, visibility, names)."""
        row = conn.execute(f"SELECT {_AGENT_COLS} FROM agents WHERE login = ? AND slug = ?",
                           (login, slug)).fetchone()
        if row is None:
            return
        agent = self._agent_from_row(row)
        values = rank_values(agent)
        conn.execute(f"UPDATE agents SET lb_text = ?, {', '.join(f'lb_{s} = ?' for s in SORTS)} "
                     "WHERE login = ? AND slug = ?",
                     (search_text(agent), *values.values(), login, slug))

    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        if sort not in SORTS:
            raise ValueError(f"unknown leaderboard sort {sort!r}")
        column = f"lb_{sort}"
        where, args = [f"{column} IS NOT NULL"], []
        if query:
            where.append("instr(lb_text, ?) > 0")
            args.append(query.lower())
        rows = self._conn().execute(
            f"SELECT {_AGENT_COLS} FROM agents WHERE {' AND '.join(where)} ORDER BY {column} "
            f"{'DESC' if SORTS[sort].descending else 'ASC'}, runs DESC, login, slug "
            "LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        return [self._agent_from_row(r) for r in rows]


def _task_from_row(row: sqlite3.Row) -> TaskState:
    d = {k: row[k] for k in _TASK_COLS.split(", ")}
    for name in _JSON_TASK_FIELDS:
        d[name] = _loads(d[name])
    d["eval"] = EvalResult.from_dict(json.loads(d["eval"])) if d["eval"] else None
    d["evidence"] = _usage(d["evidence"])
    return TaskState(**d)


def _usage(text: str | None) -> Usage | None:
    return None if text is None else Usage.from_dict(json.loads(text))


def _usage_json(usage: Usage | None) -> str | None:
    return None if usage is None else dumps(usage.to_dict())
