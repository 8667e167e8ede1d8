"""The leaderboard on SQLite: each ranking is a partial index over the agents' `lb_*` columns
(kept by `agents.refresh_rank` on every write), so a page is one index range read in order."""

from __future__ import annotations

from ...domain.models import Agent
from ...domain.ranking import SORTS
from .agents import AGENT_COLS, agent_from_row
from .connection import Concern

LEADERBOARD_SCHEMA = """
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
"""
"""The migration adding the ranks (bench_core.domain.ranking): NULL where an agent does not
qualify, so each partial index holds exactly one ranking, already in order."""


class SqliteLeaderboard(Concern):
    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        if sort not in SORTS:
            raise ValueError(f"unknown leaderboard sort {sort!r}")
        column = f"lb_{sort}"
        where, args = [f"{column} IS NOT NULL"], []
        if query:
            where.append("instr(lb_text, ?) > 0")
            args.append(query.lower())
        rows = self.db.reader().execute(
            f"SELECT {AGENT_COLS} FROM agents WHERE {' AND '.join(where)} ORDER BY {column} "
            f"{'DESC' if SORTS[sort].descending else 'ASC'}, runs DESC, login, slug "
            "LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        return [agent_from_row(r) for r in rows]
