"""Agents on SQLite: one row each, holding its names, privacy settings, stats and leaderboard
columns. The row codec, the id lookup and the rank refresh are shared with the concerns that
write an agent's counters (ingest, evals) and read its rankings (leaderboard)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...domain import stats
from ...domain.errors import TooManyAgents
from ...domain.models import LATEST_RUNS, Agent, AgentRef, AgentStats, RunRef
from ...domain.ranking import SORTS, rank_values, search_text
from ...domain.versions import VersionStats
from ...ports.store import SETTABLE
from ..rules import Rules
from .connection import Concern
from .packing import load
from .versions import read_versions

AGENTS_SCHEMA = """
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
"""
"""The agents table of the first migration (`store.MIGRATIONS`)."""

LATEST_RUNS_SCHEMA = """
    ALTER TABLE agents ADD COLUMN latest_run TEXT;
    ALTER TABLE agents ADD COLUMN latest_failure TEXT;
"""
"""The migration adding the agent's newest run and newest failure (`models.RunRef` as JSON,
NULL until a batch finishes one): what listings link to without reading tasks."""

EVIDENCE_STATS = ("evidence_cost_usd_total", "evidence_input_tokens", "evidence_output_tokens",
                  "evidence_calls", "evidence_unpriced_calls")
AGENT_COLS = ("login, slug, display_name, model, framework, architecture, tools, visibility, "
              "hide_inputs, hide_outputs, created_at, runs, successes, failures, "
              "cost_usd_total, latency_hist, first_event_at, last_event_at, eval_count, "
              "eval_score_sum, dropped_events, eval_unscored, eval_skipped, eval_judge, "
              "judge_tokens, judge_cost_usd, judge_daily_budget_usd, judge_sample_rate, "
              f"{', '.join(EVIDENCE_STATS)}, expires_at, {', '.join(LATEST_RUNS)}")


_AGENT_WIDTH = AGENT_COLS.count(",") + 1


def agent_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Agent:
    """An agent from a row starting with `AGENT_COLS`, read and made by position (in the
    dataclasses' field order): a row made a dict and some forty keywords took 18 µs an agent,
    which every ingest group pays for its rank and a leaderboard page fifty times."""
    (login, slug, display_name, model, framework, architecture, tools, visibility,
     hide_inputs, hide_outputs, created_at, runs, successes, failures, cost_usd_total,
     latency_hist, first_event_at, last_event_at, eval_count, eval_score_sum, dropped_events,
     eval_unscored, eval_skipped, eval_judge, judge_tokens, judge_cost_usd, daily_budget_usd,
     sample_rate, evidence_cost_usd, evidence_input_tokens, evidence_output_tokens,
     evidence_calls, evidence_unpriced_calls, expires_at, latest_run,
     latest_failure) = tuple(row)[:_AGENT_WIDTH]
    stats = AgentStats(
        runs, successes, failures, cost_usd_total, load(latency_hist), first_event_at,
        last_event_at, eval_count, eval_score_sum, dropped_events, eval_unscored, eval_skipped,
        eval_judge, judge_tokens, judge_cost_usd, evidence_cost_usd, evidence_input_tokens,
        evidence_output_tokens, evidence_calls, evidence_unpriced_calls,
        RunRef.from_dict(load(latest_run)), RunRef.from_dict(load(latest_failure)))
    return Agent(login, slug, display_name, model, framework, architecture, load(tools),
                 visibility, bool(hide_inputs), bool(hide_outputs), created_at, stats,
                 daily_budget_usd, sample_rate, expires_at)


def find_agent_id(conn: sqlite3.Connection, ref: AgentRef) -> int | None:
    row = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                       (ref.login, ref.slug)).fetchone()
    return int(row[0]) if row else None


def admit_agent(conn: sqlite3.Connection, login: str, most: int) -> None:
    """Refuse a new agent of `login` if it has `most` already; inside the write that creates
    the agent, so the count and the insert are one transaction."""
    (count,) = conn.execute("SELECT COUNT(*) FROM agents WHERE login = ?", (login,)).fetchone()
    if count >= most:
        raise TooManyAgents(login, most)


def refresh_rank(conn: sqlite3.Connection, login: str, slug: str, rules: Rules) -> Agent | None:
    """Recompute the agent's leaderboard columns, now; called by every write that changes what
    they derive from (counters, visibility, names). The agent as read for it (None if there is
    none), which ingest hands on instead of reading it again."""
    row = conn.execute(f"SELECT {AGENT_COLS} FROM agents WHERE login = ? AND slug = ?",
                       (login, slug)).fetchone()
    if row is None:
        return None
    agent = agent_from_row(row)
    values = rank_values(agent, rules.qualification, rules.clock.now())
    conn.execute(f"UPDATE agents SET lb_text = ?, {', '.join(f'lb_{s} = ?' for s in SORTS)} "
                 "WHERE login = ? AND slug = ?",
                 (search_text(agent), *values.values(), login, slug))
    return agent


def read_agent(reader: sqlite3.Connection, ref: AgentRef, now: str) -> Agent | None:
    """A temporary agent past its expiry is gone, even before `purge_expired` runs."""
    row = reader.execute(
        f"SELECT {AGENT_COLS} FROM agents WHERE login = ? AND slug = ? "
        "AND (expires_at IS NULL OR expires_at > ?)",
        (ref.login, ref.slug, now)).fetchone()
    return agent_from_row(row) if row else None


class SqliteAgents(Concern):
    def get_agent(self, ref: AgentRef) -> Agent | None:
        return read_agent(self.db.reader(), ref, self.rules.now())

    def agent_versions(self, ref: AgentRef) -> list[VersionStats]:
        return read_versions(self.db.reader(), ref)

    def list_agents(self, login: str) -> list[Agent]:
        rows = self.db.reader().execute(
            f"SELECT {AGENT_COLS} FROM agents WHERE login = ? ORDER BY slug", (login,)).fetchall()
        return [agent_from_row(r) for r in rows]

    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
        unknown = set(changes) - SETTABLE
        if unknown:
            raise ValueError(f"not settable: {sorted(unknown)}")
        if changes:
            sets = ", ".join(f"{name} = ?" for name in changes)
            with self.db.write() as conn:
                conn.execute(f"UPDATE agents SET {sets} WHERE login = ? AND slug = ?",
                             (*changes.values(), ref.login, ref.slug))
                refresh_rank(conn, ref.login, ref.slug, self.rules)
        return self.get_agent(ref)

    def create_agent(self, agent: Agent) -> bool:
        with self.db.write() as conn:
            if find_agent_id(conn, agent.ref) is not None:
                return False
            admit_agent(conn, agent.login, self.rules.max_agents_per_account)
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (agent.login, agent.created_at))
            conn.execute(
                "INSERT INTO agents (login, slug, display_name, visibility, hide_inputs, "
                "hide_outputs, created_at, latency_hist, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent.login, agent.slug, agent.display_name, agent.visibility,
                 int(agent.hide_inputs), int(agent.hide_outputs), agent.created_at,
                 json.dumps(stats.empty_histogram()), agent.expires_at))
            refresh_rank(conn, agent.login, agent.slug, self.rules)
        return True
