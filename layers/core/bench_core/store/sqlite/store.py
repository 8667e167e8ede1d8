"""The SQLite adapter: the embedded default. One file, WAL, versioned migrations.

`SqliteStore` is the concerns of the Store port (one class and file each: ingest, agents,
accounts, evals, leaderboard, reuse, benchmarks, retention, runs, feedback, alerts,
timeseries, clusters) over one shared `connection.Database`. Each concern keeps its part of the schema;
`MIGRATIONS` puts them in the order they were first applied.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ...clock import SYSTEM_CLOCK, Clock
from ...domain.ranking import Qualification
from ...ports.store import Store
from ...settings import Limits
from ..rules import Rules
from .accounts import ACCOUNTS_SCHEMA, KEYS_SCHEMA, LIVE_GRANT_SCHEMA, SqliteAccounts
from .agents import AGENTS_SCHEMA, LATEST_RUNS_SCHEMA, SqliteAgents, refresh_rank
from .alerts import ALERTS_SCHEMA, SqliteAlerts
from .benchmarks import BENCHMARK_STATUS_SCHEMA, BENCHMARKS_SCHEMA, SqliteBenchmarks
from .clusters import CLUSTERS_SCHEMA, SqliteClusters
from .connection import Database, Migration
from .evals import EVALS_SCHEMA, SqliteEvals
from .events import group_events, rekey_events
from .feedback import AGREEMENT_SCHEMA, FEEDBACK_SCHEMA, LABEL_SET_SCHEMA, SqliteFeedback
from .ingest import EVIDENCE_SCHEMA, TASKS_SCHEMA, SqliteIngest
from .leaderboard import LEADERBOARD_SCHEMA, SqliteLeaderboard
from .repack import repack
from .retention import RETENTION_SCHEMA, SqliteRetention
from .reuse import REUSE_SCHEMA, USAGE_CALLER_AGENT_SCHEMA, USAGE_EXPIRY_SCHEMA, SqliteReuse
from .run_list import add_run_text, narrow_run_text, pend_run_text
from .runs import (
    NARROW_TASK_INDEXES,
    RUN_FAILURES_SCHEMA,
    RUNS_SCHEMA,
    SPAN_ROW_SCHEMA,
    SPANS_BY_RUN,
    SqliteRuns,
    backfill_runs,
)
from .sessions import SESSION_EVAL_SCHEMA, SESSIONS_SCHEMA
from .slim_events import slim_events
from .task_ids import binary_task_ids
from .task_row import compact_task_row
from .task_times import compact_task_times
from .timeseries import ACTIVE_SCHEMA, COST_SQUARES_SCHEMA, TIMESERIES_SCHEMA, SqliteTimeSeries
from .versions import VERSIONS_SCHEMA

MIGRATIONS: list[Migration] = [
    # 1: the foundation: users and keys, agents, their days, events and tasks
    KEYS_SCHEMA + AGENTS_SCHEMA + TASKS_SCHEMA,
    # 2: evaluations, judge budget and spend, failure clusters
    EVALS_SCHEMA,
    # 3: leaderboard ranks
    LEADERBOARD_SCHEMA,
    # 4: cost evidence
    EVIDENCE_SCHEMA,
    # 5: accounts: GitHub identities, temporary keys, grants, counters, live-feed connections
    ACCOUNTS_SCHEMA,
    # 6: authorized reuse: capability cards, grants, quota counters, usage
    REUSE_SCHEMA,
    # 7: benchmark suites' registry, runs, attempts and rankings
    BENCHMARKS_SCHEMA,
    # 8: temporary agents (the /try trial's) and their purge
    RETENTION_SCHEMA,
    # 9: usage records of calls through Bench expire
    USAGE_EXPIRY_SCHEMA,
    # 10: every task's run id (indexed) and log entries, backfilled on upgrade
    RUNS_SCHEMA,
    # 11: what authorised a live connection (accounts.live_grants): it closes when that ends
    LIVE_GRANT_SCHEMA,
    # 12: benchmark runs graded in the background: pending until done
    BENCHMARK_STATUS_SCHEMA,
    # 13: each agent's newest run and newest failure, for listings to link to
    LATEST_RUNS_SCHEMA,
    # 14: which agent's key made a call through Bench (an agent key sees only its agent's)
    USAGE_CALLER_AGENT_SCHEMA,
    # 15: each run's failed spans, for its header to count and link to
    RUN_FAILURES_SCHEMA,
    # 16: when each task was first recorded (the order of siblings that start together) and
    # the model it called, which a run's rows show
    SPAN_ROW_SCHEMA,
    # 17: each run's agent version, and each version's counters
    VERSIONS_SCHEMA,
    # 18: tasks in a rowid table and JSON packed: no mostly empty overflow pages (resumable);
    # after every column of `tasks` before it, which it copies
    repack,
    # 19: every span's name, input, output and model in an FTS5 index, which the runs list
    # searches (triggers on `tasks`: after the repack, which replaces the table)
    add_run_text,
    # 20: feedback from people on runs
    FEEDBACK_SCHEMA,
    # 21: alerts from the regression monitors, and their webhook deliveries
    ALERTS_SCHEMA,
    # 22: the judge's agreement with people, counted per agent as runs are labelled and judged
    AGREEMENT_SCHEMA,
    # 23: each agent's label set, which feedback labels are checked against
    LABEL_SET_SCHEMA,
    # 24: each agent's counters over time (hours and days)
    TIMESERIES_SCHEMA,
    # 25: each run's session and user (indexed), and each session's counters
    SESSIONS_SCHEMA,
    # 26: each session's verdict, and the sessions it is due for (indexed)
    SESSION_EVAL_SCHEMA,
    # 27: failure clusters' last members and their failures per hour and day
    CLUSTERS_SCHEMA,
    # 28: the sums of runs' costs squared in the counters over time
    COST_SQUARES_SCHEMA,
    # 29: events keyed by hashes of their ids and task ids, their texts once in a packed record
    # (resumable)
    rekey_events,
    # 30: the search index knows which spans hold a trigram, not where (a third of its bytes)
    narrow_run_text,
    # 31: a parent's children indexed without their task ids, the roots apart
    NARROW_TASK_INDEXES,
    # 32: a task's events of one batch in one row and one packed record (resumable)
    group_events,
    # 33: a run's indexes without its root
    SPANS_BY_RUN,
    # 34: new spans join the search index a chunk at a time (`run_text.py`)
    pend_run_text,
    # 35: the agents' own hours indexed by period (the agents active lately)
    ACTIVE_SCHEMA,
    # 36: a task's start as milliseconds, the moment it was recorded as 15 bytes (resumable)
    compact_task_times,
    # 37: a task's logs and a subtask's evidence packed, a subtask's end and every task's
    # start as ordered (`sort_ts`) as milliseconds (resumable)
    compact_task_row,
    # 38: events without the fields their tasks' rows give back (resumable; after 37, as it
    # reads the rows as 37 leaves them)
    slim_events,
    # 39: an OTLP span's ids as the 24 bytes they spell, in its row and indexes (resumable;
    # after 38, which finds rows by their ids as text)
    binary_task_ids,
]
RANKED_SINCE = 3
"""The migration that added the leaderboard columns; agents older than it are ranked on upgrade."""
RUNS_SINCE = 10
"""The migration that added run ids; tasks older than it get theirs on upgrade."""


def _upgrade(conn: sqlite3.Connection, version: int, rules: Rules) -> None:
    """Rank the agents of a file from before the leaderboard; give the tasks of a file from
    before runs their run ids and log entries."""
    if version < RANKED_SINCE:
        for login, slug in conn.execute("SELECT login, slug FROM agents").fetchall():
            refresh_rank(conn, login, slug, rules)
    if 0 < version < RUNS_SINCE:
        backfill_runs(conn)


@dataclass(frozen=True)
class SqliteStore(Store):
    db: Database

    @classmethod
    def open(cls, path: Path | str, *,
             event_retention_days: int = Limits.event_retention_days,
             max_agents_per_account: int = Limits.max_agents_per_account,
             qualification: Qualification = Qualification(),
             clock: Clock = SYSTEM_CLOCK) -> SqliteStore:
        """The store in the file at `path`, migrated. Events older than `event_retention_days`
        go at `purge_expired` (0: never); an account has at most `max_agents_per_account`
        agents; an agent ranks once it meets `qualification`; `clock` says what "now" is."""
        db = Database(path)
        rules = Rules(event_retention_days, max_agents_per_account, qualification, clock)
        db.migrate(MIGRATIONS, lambda conn, version: _upgrade(conn, version, rules))
        return cls(ingest=SqliteIngest(db, rules), runs=SqliteRuns(db, rules),
                   agents=SqliteAgents(db, rules), accounts=SqliteAccounts(db, rules),
                   evals=SqliteEvals(db, rules), leaderboard=SqliteLeaderboard(db, rules),
                   reuse=SqliteReuse(db, rules), benchmarks=SqliteBenchmarks(db, rules),
                   retention=SqliteRetention(db, rules), feedback=SqliteFeedback(db, rules),
                   alerts=SqliteAlerts(db, rules), timeseries=SqliteTimeSeries(db, rules),
                   clusters=SqliteClusters(db, rules),
                   clock=clock, db=db)

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def schema_version(self) -> int:
        return self.db.schema_version

    def close(self) -> None:
        self.db.close()
