"""What an owner does with their agents: create one with its first key, change its settings;
and the checks that only its owner may (`privacy.owner_only`: anyone else gets 404, so names
do not leak)."""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.errors import NotFound
from ..domain.keys import new_key
from ..domain.models import Agent, AgentRef, KeyRecord
from ..domain.privacy import Viewer, owner_only
from ..ports.services import WithAccounts, WithAgents, WithClock

NOT_YOURS = "you have no agent of that name"


class AgentsAndKeys(WithAgents, WithAccounts, WithClock, Protocol):
    """The store's agents and keys: an agent made with its first key."""


def own_agent(store: WithAgents, ref: AgentRef) -> Agent:
    """The signed-in owner's agent `ref` (its login is the owner's); 404 if there is none."""
    agent = store.agents.get_agent(ref)
    if agent is None:
        raise NotFound(NOT_YOURS)
    return agent


def owned_by_key(store: WithAgents, key: KeyRecord, ref: AgentRef, refusal: str) -> Agent:
    """The agent if `key` is its owner's owner key (`privacy.owner_only`: 404 for any agent
    the key does not own, 403 `refusal` for an agent key's own)."""
    agent = store.agents.get_agent(ref) if key.login == ref.login else None
    return owner_only(agent, Viewer.of_key(key), refusal)


def create_with_key(store: AgentsAndKeys, agent: Agent) -> str | None:
    """Create `agent` and its first key (an agent key named for its setup); the raw key, or
    None if the owner already has an agent of that name."""
    if not store.agents.create_agent(agent):
        return None
    raw, record = new_key(agent.login, agent.slug, name=f"{agent.slug} setup", now=store.clock.now())
    store.accounts.create_key(record)
    return raw


def change_settings(store: WithAgents, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
    """The agent with `changes` (AgentSettingsPatch fields) applied; None if there is none."""
    return store.agents.update_agent(ref, changes)


def change_settings_with_key(store: WithAgents, key: KeyRecord, ref: AgentRef,
                             changes: dict[str, Any]) -> Agent:
    """`PATCH /api/agents/...`: owner keys only (`owned_by_key`)."""
    owned_by_key(store, key, ref, "agent keys may only ingest; use an owner key (bk_...) for "
                                  "settings")
    agent = change_settings(store, ref, changes)
    if agent is None:
        raise NotFound("agent not found")
    return agent
