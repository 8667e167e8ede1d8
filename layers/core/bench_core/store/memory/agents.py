"""Agents in memory: one row each (`state.AgentRow`), its ranks refreshed by every write that
changes what they derive from."""

from __future__ import annotations

from typing import Any

from ...domain.models import Agent, AgentRef
from ...domain.versions import VersionStats, newest_first
from ...ports.store import SETTABLE
from .state import Concern, User, admit_agent, copied, live_agent, new_row, refresh_rank


class MemoryAgents(Concern):
    def get_agent(self, ref: AgentRef) -> Agent | None:
        with self.memory.locked() as tables:
            return live_agent(tables, ref, self.rules.now())

    def list_agents(self, login: str) -> list[Agent]:
        with self.memory.locked() as tables:
            return [copied(row.agent) for ref, row in sorted(tables.agents.items(),
                                                             key=lambda item: item[0].slug)
                    if ref.login == login]

    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
        unknown = set(changes) - SETTABLE
        if unknown:
            raise ValueError(f"not settable: {sorted(unknown)}")
        with self.memory.locked() as tables:
            row = tables.agents.get(ref)
            if row is not None and changes:
                for name, value in changes.items():
                    setattr(row.agent, name, value)
                refresh_rank(row, self.rules)
            return live_agent(tables, ref, self.rules.now())

    def agent_versions(self, ref: AgentRef) -> list[VersionStats]:
        with self.memory.locked() as tables:
            return newest_first(copied(list(tables.versions.get(ref, {}).values())))

    def create_agent(self, agent: Agent) -> bool:
        """Only its names and privacy settings are kept, as SQLite keeps them."""
        with self.memory.locked() as tables:
            if agent.ref in tables.agents:
                return False
            admit_agent(tables, agent.login, self.rules.max_agents_per_account)
            tables.users.setdefault(agent.login, User(agent.created_at))
            row = tables.agents[agent.ref] = new_row(Agent(
                login=agent.login, slug=agent.slug, display_name=agent.display_name,
                visibility=agent.visibility, hide_inputs=agent.hide_inputs,
                hide_outputs=agent.hide_outputs, created_at=agent.created_at,
                expires_at=agent.expires_at))
            refresh_rank(row, self.rules)
        return True
