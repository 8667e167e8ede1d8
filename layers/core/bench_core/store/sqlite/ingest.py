"""Ingest on SQLite: events deduped by id, folded into tasks (bench_core.domain.folding), the
agent's counters and days updated, all in one write transaction per batch; and the reads of
what it wrote (recent events, tasks and their subtasks, a task's events, daily counts)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...domain import stats
from ...domain.field_limits import dumps, within_task_limit
from ...domain.folding import BatchFold, Owed, fold_batch, newest_runs, owing_parents
from ...domain.models import (
    LATEST_RUNS,
    Agent,
    AgentMeta,
    AgentRef,
    CleanEvent,
    EvalResult,
    IngestOutcome,
    IngestWrite,
    RunDelta,
    RunRef,
    TaskState,
    Usage,
)
from ...domain.privacy import new_agent, settings_of
from ...domain.runs import Reassign, parent_ids
from ...domain.timeseries import Bucket, BucketKey, batch_buckets
from ...ports.store import decode_cursor, encode_cursor, one_by_one
from .agents import admit_agent, find_agent_id, refresh_rank
from .connection import Concern, rows_in
from .events import new_events, of_task, recent, save_events
from .packing import load, load_metadata, pack_json, pack_metadata
from .run_text import index_again, index_new_spans, unindex
from .sessions import add_session_runs
from .task_ids import pack_id, read_id, stored_id, unpack_id
from .task_row import stored_evidence, stored_logs
from .task_times import (
    pack_recorded,
    pack_time,
    packed_time,
    time_bound,
    unpack_recorded,
    unpack_time,
)
from .timeseries import add_series
from .versions import add_version_runs

TASKS_SCHEMA = """
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
"""
"""The days, events and tasks of the first migration (`store.MIGRATIONS`); `repack.py` has
the tasks' table since migration 18."""

EVIDENCE_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN evidence TEXT;
    ALTER TABLE agents ADD COLUMN evidence_cost_usd_total REAL NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_calls INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN evidence_unpriced_calls INTEGER NOT NULL DEFAULT 0;
"""
"""The migration adding cost evidence (bench_core.domain.pricing): a task's evidence as JSON
(bench_core.domain.models.Usage) and the agent's evidence totals, apart from owner-reported
cost."""

TASK_COLS = ("task_id, parent_task_id, name, status, input, output, metadata, duration_ms, "
             "cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, cost_breakdown, "
             "started_at, ended_at, version, eval, evidence, run_id, logs, recorded, called_model, "
             "agent_version, session_id, user_id")
_TASK_WIDTH = len(TASK_COLS.split(", "))
EVENT_COLS = "body, event_id, kind, ts, task_id"
"""What `packing.event_body` makes an event's body of, in the events table before migration 29
(`events.rekey_events`)."""

def _json_or_null(value: Any) -> str | None:
    return None if value is None else dumps(value)


def newest_first(reader: sqlite3.Connection, where: list[str], args: list[Any],
                 cursor: str | None, limit: int) -> tuple[list[TaskState], str | None]:
    """One page of the tasks matching every clause of `where`, newest first, with the cursor
    of the next page (None on the last)."""
    if cursor:
        sort_ts, task_id = decode_cursor(cursor)
        where = [*where, "(sort_ts, task_id) < (?, ?)"]
        args = [*args, time_bound(sort_ts), stored_id(task_id)]
    rows = reader.execute(
        f"SELECT {TASK_COLS} FROM tasks WHERE {' AND '.join(where)} "
        "ORDER BY sort_ts DESC, task_id DESC LIMIT ?", (*args, limit + 1)).fetchall()
    tasks = [task_from_row(r) for r in rows[:limit]]
    more = len(rows) > limit
    return tasks, (encode_cursor(tasks[-1].sort_ts, tasks[-1].task_id) if more else None)


def task_from_row(row: sqlite3.Row | tuple[Any, ...]) -> TaskState:
    """A task from a row starting with `TASK_COLS` (read by position: a run reads a thousand
    at once), made by position too (in `TaskState`'s field order): a fifth of the time of 25
    keywords, each matched against the constructor's parameters."""
    (task_id, parent, name, status, input, output, metadata, duration, cost, reported, logged,
     child, breakdown, started, ended, version, result, evidence, run_id, logs, recorded,
     model, agent_version, session_id, user_id) = tuple(row)[:_TASK_WIDTH]
    task_id = read_id(task_id)
    return TaskState(
        task_id, unpack_id(parent), name, status, load(input), load(output),
        load_metadata(metadata, task_id), duration, cost, reported, logged, child,
        load(breakdown), unpack_time(started), unpack_time(ended), version,
        EvalResult.from_dict(load(result)) if result else None, 0, _usage(evidence),
        unpack_id(run_id), load(logs) or [], unpack_recorded(recorded), model, agent_version,
        session_id, user_id)


def _usage(stored: str | bytes | None) -> Usage | None:
    return None if stored is None else Usage.from_dict(load(stored))


_USAGE_DEFAULTS = Usage().to_dict()


def _usage_json(usage: Usage | None) -> str | None:
    """The usage without the fields at their defaults (the counts no record gave, no unpriced
    calls), which `Usage.from_dict` reads back as they were (and `json_extract`, which reads
    only the counts, as NULL): a chat span's is half as long."""
    if usage is None:
        return None
    return dumps({name: value for name, value in usage.to_dict().items()
                  if value != _USAGE_DEFAULTS[name]})


def reassign_runs(conn: sqlite3.Connection, agent_id: int, moves: list[Reassign]) -> None:
    """Tasks recorded under a run that turned out to have a parent move to its run
    (`domain.runs`; indexed by `tasks_by_run`, and usually no row matches; the task that
    found its parent was saved with its new run before)."""
    conn.executemany("UPDATE tasks SET run_id = ? WHERE agent_id = ? AND run_id = ? "
                     "AND run_id != task_id",
                     [(stored_id(m.new), agent_id, stored_id(m.old)) for m in moves])


def read_task(reader: sqlite3.Connection, ref: AgentRef, task_id: str) -> TaskState | None:
    """A task that has started or ended (a parent known only from its subtasks is none yet)."""
    row = reader.execute(
        f"SELECT {TASK_COLS} FROM tasks JOIN agents ON agents.id = tasks.agent_id "
        "WHERE login = ? AND slug = ? AND task_id = ? AND sort_ts != ''",
        (ref.login, ref.slug, stored_id(task_id))).fetchone()
    return task_from_row(row) if row else None


@dataclass
class AgentTotals:
    """What batches add to one agent's own rows (its counters, newest runs, days, series,
    versions and sessions), gathered to be written once for them all: every part adds up, and
    of newest runs the newest wins, so written together they come to what each batch written
    in turn would leave."""

    login: str
    slug: str
    runs: list[RunDelta] = field(default_factory=list)
    newest: dict[str, RunRef] = field(default_factory=dict)
    times: list[str] = field(default_factory=list)
    """The times of the new events (the agent's event window)."""
    dropped: int = 0
    evidence: Usage | None = None
    buckets: dict[BucketKey, Bucket] = field(default_factory=dict)

    def add(self, fold: BatchFold, fresh: list[CleanEvent], dropped: int) -> None:
        """A batch's fold and new events, and the events its sender dropped."""
        deltas = [delta for _, delta in fold.runs]
        self.runs += deltas
        for name, run in newest_runs(fold).items():
            if run.replaces(self.newest.get(name)):
                self.newest[name] = run
        self.times += [e.ts for e in fresh]
        self.dropped += dropped
        if fold.evidence is not None:
            self.evidence = fold.evidence if self.evidence is None else self.evidence + fold.evidence
        for key, bucket in batch_buckets([fold.tasks[task_id] for task_id, _ in fold.runs],
                                         fresh).items():
            if key in self.buckets:
                self.buckets[key].add(bucket)
            else:
                self.buckets[key] = bucket


class SqliteIngest(Concern):
    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        with self.db.write() as conn:
            return self._write_all(conn, [IngestWrite(login, meta, events, dropped)],
                                   self.rules.now())[0]

    def ingest_many(self, writes: Sequence[IngestWrite]) -> list[IngestOutcome | Exception]:
        """One transaction, one COMMIT: what a batch's own transaction costs most (writing its
        pages to the WAL) is paid once for them all. If any write fails (a batch refused, which
        is rare), the transaction is undone and each is written on its own: a savepoint per
        write would copy every page a later write changes again to the statement journal, which
        cost more than the shared COMMIT saved."""
        now = self.rules.now()
        try:
            with self.db.write() as conn:
                return list(self._write_all(conn, writes, now))
        except Exception as exc:
            if len(writes) == 1:
                return [exc]
        return one_by_one(self, writes)

    def _write_all(self, conn: sqlite3.Connection, writes: Sequence[IngestWrite], now: str
                   ) -> list[IngestOutcome]:
        """`writes` in order, each batch's events and tasks as it comes, and then what they add
        to each agent's own rows (`AgentTotals`), once per agent: the batches of a group
        commit (`ingest/group_commit.py`) are mostly one agent's, whose counters, days,
        series, versions and rank were read and written back once per batch."""
        totals: dict[int, AgentTotals] = {}
        written = []
        for write in writes:
            agent_id = self._ensure_agent(conn, write.login, write.meta, now)
            agent = totals.setdefault(agent_id, AgentTotals(write.login, write.meta.slug))
            written.append((agent_id, self._write(conn, agent_id, write, agent)))
        index_new_spans(conn)
        agents = {agent_id: self._apply_totals(conn, agent_id, added, now)
                  for agent_id, added in totals.items()}
        return [replace(outcome, agent=agents[agent_id]) for agent_id, outcome in written]

    def _write(self, conn: sqlite3.Connection, agent_id: int, write: IngestWrite,
               totals: AgentTotals) -> IngestOutcome:
        """A batch's events and tasks, and what it adds to its agent's rows counted in
        `totals`."""
        meta, events = write.meta, write.events
        new = new_events(conn, agent_id, events)
        fresh = new.fresh
        within_task_limit(new.held)
        task_ids = {e.task_id for e in fresh if e.task_id and e.kind.startswith("task.")}
        states = self._load_tasks(conn, agent_id, task_ids | parent_ids(fresh))
        fold = fold_batch(states, fresh, meta.version)
        self._save_tasks(conn, agent_id, fold.tasks.values(), existing=set(states))
        save_events(conn, new, states, fold.tasks)  # after the fold: `derived_events`
        reassign_runs(conn, agent_id, fold.reassign)
        for parent in owing_parents(fold):
            self._add_child_cost(conn, agent_id, parent, fold.child_costs.get(parent, 0.0),
                                 fold.child_evidence.get(parent),
                                 fold.child_sessions.get(parent))
        totals.add(fold, fresh, write.dropped if fresh or not events else 0)  # a replay counts once
        return IngestOutcome(accepted=len(fresh), duplicates=len(events) - len(fresh),
                             finished=fold.finished)

    def _apply_totals(self, conn: sqlite3.Connection, agent_id: int, totals: AgentTotals,
                      now: str) -> Agent | None:
        """What the batches added to the agent's own rows, and its rank recomputed: the agent
        as ranked if it is live (None: expired, or gone)."""
        self._apply_runs(conn, agent_id, totals)
        self._apply_evidence(conn, agent_id, totals.evidence)
        add_version_runs(conn, agent_id, totals.runs)
        add_series(conn, agent_id, totals.buckets)
        add_session_runs(conn, agent_id, totals.runs)
        agent = refresh_rank(conn, totals.login, totals.slug, self.rules)
        return agent if agent is not None and (agent.expires_at is None
                                               or agent.expires_at > now) else None

    def _ensure_agent(self, conn: sqlite3.Connection, login: str, meta: AgentMeta,
                      now: str) -> int:
        """The agent's id, the agent made (and its user, whom only its last agent's purge
        removes) if it is new, its details updated with what the batch sent."""
        updates = {k: (dumps(v) if k == "tools" else v) for k, v in meta.updates().items()}
        row = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                           (login, meta.slug)).fetchone()
        if row is None:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (login, now))
            admit_agent(conn, login, self.rules.max_agents_per_account)
            settings = settings_of(new_agent(login, meta.slug, now))
            cols = ["login", "slug", "created_at", "latency_hist", *settings, *updates]
            values = [login, meta.slug, now, json.dumps(stats.empty_histogram()),
                      *settings.values(), *updates.values()]
            cur = conn.execute(f"INSERT INTO agents ({', '.join(cols)}) VALUES "
                               f"({', '.join('?' * len(cols))})", values)
            return int(cur.lastrowid or 0)
        if updates:
            sets = ", ".join(f"{k} = ?" for k in updates)
            conn.execute(f"UPDATE agents SET {sets} WHERE id = ?", (*updates.values(), row[0]))
        return int(row[0])

    def _load_tasks(self, conn: sqlite3.Connection, agent_id: int,
                    task_ids: set[str]) -> dict[str, TaskState]:
        rows = rows_in(conn, f"SELECT {TASK_COLS} FROM tasks WHERE agent_id = ? "
                       "AND task_id IN ({marks})", (agent_id,), list(map(stored_id, task_ids)))
        return {task.task_id: task for task in map(task_from_row, rows)}

    def _save_tasks(self, conn: sqlite3.Connection, agent_id: int, tasks: Iterable[TaskState],
                    existing: set[str]) -> None:
        updates: list[tuple[Any, ...]] = []
        inserts: list[tuple[Any, ...]] = []
        for t in tasks:
            root = t.parent_task_id is None
            row = (pack_id(t.parent_task_id), t.name, t.status, _json_or_null(t.input),
                   _json_or_null(t.output), pack_metadata(_json_or_null(t.metadata), t.task_id),
                   t.duration_ms, t.cost_usd,
                   t.reported_cost_usd, t.cost_logged_usd, t.child_cost_usd,
                   pack_json(t.cost_breakdown), pack_time(t.started_at),
                   pack_time(t.ended_at), packed_time(t.sort_ts),
                   stored_evidence(_usage_json(t.evidence), root), pack_id(t.run_id),
                   stored_logs(dumps(t.logs)), pack_recorded(t.recorded), t.model,
                   t.agent_version, t.session_id, t.user_id, agent_id, stored_id(t.task_id))
            (updates if t.task_id in existing else inserts).append(row)
        unindexed = unindex(conn, agent_id, [row[-1] for row in updates])  # `run_text.py`
        conn.executemany(
            "UPDATE tasks SET parent_task_id = ?, name = ?, status = ?, input = ?, output = ?, "
            "metadata = ?, duration_ms = ?, cost_usd = ?, reported_cost_usd = ?, "
            "cost_logged_usd = ?, child_cost_usd = ?, cost_breakdown = ?, started_at = ?, "
            "ended_at = ?, sort_ts = ?, evidence = ?, run_id = ?, logs = ?, recorded = ?, "
            "called_model = ?, agent_version = ?, session_id = ?, user_id = ?, version = version + 1 "
            "WHERE agent_id = ? AND task_id = ?", updates)
        index_again(conn, unindexed)
        conn.executemany(
            "INSERT INTO tasks (parent_task_id, name, status, input, output, metadata, "
            "duration_ms, cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, "
            "cost_breakdown, started_at, ended_at, sort_ts, evidence, run_id, logs, recorded, "
            "called_model, agent_version, session_id, user_id, agent_id, task_id) VALUES "
            f"({', '.join('?' * 25)})",
            inserts)

    def _add_child_cost(self, conn: sqlite3.Connection, agent_id: int, parent: str,
                        amount: float, evidence: Usage | None, session: Owed | None) -> None:
        """A parent not seen yet gets a placeholder row; its start/end fill it in later. The
        write lock is held, so adding to the parent's evidence may read it first."""
        key = stored_id(parent)
        conn.execute(
            "INSERT INTO tasks (agent_id, task_id, status, child_cost_usd, sort_ts) "
            "VALUES (?, ?, 'running', ?, '') ON CONFLICT (agent_id, task_id) "
            "DO UPDATE SET child_cost_usd = child_cost_usd + excluded.child_cost_usd",
            (agent_id, key, amount))
        if session is not None:  # `folding.owe_session`
            conn.execute("UPDATE tasks SET session_id = coalesce(session_id, ?), "
                         "user_id = coalesce(user_id, ?) WHERE agent_id = ? AND task_id = ?",
                         (*session, agent_id, key))
        if evidence is not None:
            row = conn.execute("SELECT evidence, parent_task_id IS NULL FROM tasks "
                               "WHERE agent_id = ? AND task_id = ?", (agent_id, key)).fetchone()
            before = _usage(row[0])
            conn.execute("UPDATE tasks SET evidence = ? WHERE agent_id = ? AND task_id = ?",
                         (stored_evidence(_usage_json(before + evidence if before else evidence),
                                          bool(row[1])), agent_id, key))

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

    def _apply_runs(self, conn: sqlite3.Connection, agent_id: int, totals: AgentTotals) -> None:
        """The runs' counters and days, the event window widened, and the agent's newest runs
        replaced by the batches' where they are newer (`RunRef.replaces`)."""
        runs, newest = totals.runs, totals.newest
        if not totals.times and not totals.dropped:
            return
        row = conn.execute("SELECT latency_hist, first_event_at, last_event_at, "
                           f"{', '.join(LATEST_RUNS)} FROM agents WHERE id = ?",
                           (agent_id,)).fetchone()
        hist = load(row["latency_hist"]) or stats.empty_histogram()
        for run in runs:
            if run.duration_ms is not None:
                hist[stats.bucket_index(run.duration_ms)] += 1
        times = totals.times
        first = min([t for t in (row["first_event_at"], *times) if t], default=None)
        last = max([t for t in (row["last_event_at"], *times) if t], default=None)
        ok = sum(r.success for r in runs)
        latest = []
        for name in LATEST_RUNS:
            candidate, recorded = newest.get(name), row[name]
            if candidate is not None and candidate.replaces(RunRef.from_dict(load(recorded))):
                recorded = dumps(candidate.to_dict())
            latest.append(recorded)
        conn.execute(
            "UPDATE agents SET runs = runs + ?, successes = successes + ?, "
            "failures = failures + ?, cost_usd_total = cost_usd_total + ?, latency_hist = ?, "
            "first_event_at = ?, last_event_at = ?, dropped_events = dropped_events + ?, "
            f"{', '.join(f'{name} = ?' for name in LATEST_RUNS)} WHERE id = ?",
            (len(runs), ok, len(runs) - ok, sum(r.cost_usd for r in runs), dumps(hist),
             first, last, totals.dropped, *latest, agent_id))
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

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return []
        return recent(self.db.reader(), agent_id, limit, self._load_tasks)

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return []
        return of_task(self.db.reader(), agent_id, task_id, self._load_tasks)

    def get_task(self, ref: AgentRef, task_id: str, *, consistent: bool = True
                 ) -> TaskState | None:
        return read_task(self.db.reader(), ref, task_id)

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return [], None
        where = ["agent_id = ?", "parent_task_id IS NULL" if parent is None
                 else "parent_task_id = ?", "sort_ts != ''"]  # NULL named: roots by status
        args: list[Any] = [agent_id] if parent is None else [agent_id, stored_id(parent)]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        return newest_first(self.db.reader(), where, args, cursor, limit)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        agent_id = find_agent_id(self.db.reader(), ref)
        out: dict[str, list[str]] = {tid: [] for tid in task_ids}
        if agent_id is None or not task_ids:
            return out
        rows = self.db.reader().execute(
            "SELECT parent_task_id, task_id FROM tasks WHERE agent_id = ? AND parent_task_id IN "
            f"({', '.join('?' * len(task_ids))}) ORDER BY sort_ts, task_id",
            (agent_id, *map(stored_id, task_ids))).fetchall()
        for parent, child in rows:
            out[read_id(parent)].append(read_id(child))
        return out

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return []
        rows = self.db.reader().execute(
            "SELECT day, runs, successes, failures, cost_usd FROM agent_days "
            "WHERE agent_id = ? AND day >= ? ORDER BY day", (agent_id, since_day)).fetchall()
        return [dict(r) for r in rows]
