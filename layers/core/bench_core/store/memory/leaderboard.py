"""The leaderboard in memory: each agent's ranks are kept on its row by every write
(`state.refresh_rank`), and a page sorts the agents that qualify."""

from __future__ import annotations

from ...domain.models import Agent
from ...domain.ranking import SORTS
from .state import Concern, copied


class MemoryLeaderboard(Concern):
    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        if sort not in SORTS:
            raise ValueError(f"unknown leaderboard sort {sort!r}")
        sign = -1 if SORTS[sort].descending else 1
        with self.memory.locked() as tables:
            ranked = sorted(
                ((sign * value, -row.agent.stats.runs, ref.login, ref.slug, row)
                 for ref, row in tables.agents.items()
                 if (value := row.ranks.get(sort)) is not None
                 and (not query or query.lower() in (row.search or ""))),
                key=lambda entry: entry[:4])
            return [copied(entry[4].agent) for entry in ranked[offset:offset + limit]]
