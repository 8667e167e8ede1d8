"""What the owner's dashboard reads: their agents with live numbers, one agent's feed and keys,
and all their keys. The viewer is always the owner, so nothing here is hidden."""

from __future__ import annotations

from typing import Any, Protocol

from ..accounts.agents import AgentsAndKeys, own_agent
from ..accounts.api_keys import keys_of
from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..ports.services import WithAccounts, WithAgents, WithFeedback, WithIngest
from .agents import agent_summary
from .feedback import label_set
from .live_events import headline, summary

FEED_EVENTS = 25
"""Events an agent's page shows before live ones arrive."""


class OwnerReads(WithAgents, WithAccounts, WithIngest, WithFeedback, Protocol):
    """One of the owner's agents on the dashboard: its settings, label set, keys and recent
    events."""


def owner_agents(store: WithAgents, login: str) -> list[dict[str, Any]]:
    """The owner's agents, most recently active first, each with its live-updated numbers."""
    agents = store.agents.list_agents(login)
    agents.sort(key=lambda a: a.stats.last_event_at or a.created_at, reverse=True)
    return [{**agent_summary(a, Viewer(login)), "headline": headline(a)} for a in agents]


def owner_agent(store: OwnerReads, ref: AgentRef) -> dict[str, Any]:
    """One agent's page: its numbers, its newest events and its agent keys."""
    agent = own_agent(store, ref)
    viewer = Viewer(ref.login)
    events = store.ingest.recent_events(ref, FEED_EVENTS)
    keys = [k for k in store.accounts.list_keys(ref.login) if k.agent_slug == agent.slug]
    return {"a": agent_summary(agent, viewer), "headline": headline(agent),
            "events": [summary(e, agent, viewer) for e in events], "keys": keys,
            "labels": label_set(store, ref),
            "channel": f"{agent.login}/{agent.slug}"}


def owner_keys(store: AgentsAndKeys, login: str) -> dict[str, Any]:
    """The keys page: every key, newest first, and the agents a new key may be scoped to."""
    return {"keys": keys_of(store, login), "slugs": [a.slug for a in store.agents.list_agents(login)]}
