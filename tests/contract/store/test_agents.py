"""The Store contract for agents, on every adapter: made by their first batch or created before
it (so they can start out private), read by reference, listed by owner, and changed only in
the settings an owner may change."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bench_core.domain.models import Agent, AgentMeta, AgentRef
from bench_core.ports.store import Store

from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
T0 = "2026-12-02T16:00:00.000Z"


def ingest(store: Store, events, meta: AgentMeta = META, login: str = "alice"):
    return store.ingest.ingest(login, meta, clean(events))


def test_first_batch_creates_a_public_agent_with_hidden_content_and_later_batches_update_it(
        store: Store) -> None:
    ingest(store, [ev("custom")], AgentMeta(slug="agent-1", display_name="Agent One",
                                            model="m1", tools=["search"]))
    agent = store.agents.get_agent(REF)
    assert agent is not None and agent.visibility == "public"
    assert agent.hide_inputs and agent.hide_outputs, "content is private until the owner shows it"
    assert (agent.display_name, agent.model, agent.tools) == ("Agent One", "m1", ["search"])
    ingest(store, [ev("custom")], AgentMeta(slug="agent-1", framework="langchain"))
    agent = store.agents.get_agent(REF)
    assert (agent.display_name, agent.model, agent.framework) == ("Agent One", "m1", "langchain")
    assert [a.slug for a in store.agents.list_agents("alice")] == ["agent-1"]
    assert store.agents.get_agent(AgentRef("bob", "agent-1")) is None


def test_settings_update(store: Store) -> None:
    ingest(store, [ev("custom")])
    agent = store.agents.update_agent(REF, {"visibility": "private", "hide_outputs": False})
    assert agent.visibility == "private" and agent.hide_inputs and not agent.hide_outputs
    ingest(store, [ev("custom")])
    assert not store.agents.get_agent(REF).hide_outputs, "a later batch keeps the owner's settings"
    assert store.agents.update_agent(AgentRef("alice", "nope"), {"hide_inputs": True}) is None


def test_only_the_owners_settings_can_be_changed(store: Store) -> None:
    ingest(store, [ev("custom")], AgentMeta(slug="agent-1", display_name="One", model="m1"))
    with pytest.raises(ValueError):
        store.agents.update_agent(REF, {"model": "m2"})
    agent = store.agents.update_agent(REF, {"display_name": "Uno", "hide_outputs": True})
    assert (agent.display_name, agent.model, agent.hide_outputs) == ("Uno", "m1", True)
    assert store.agents.update_agent(REF, {}).display_name == "Uno"


def test_an_agent_created_private_stays_private_through_ingest(store: Store) -> None:
    ref = AgentRef("dora", "secret-agent")
    agent = Agent(login="dora", slug="secret-agent", display_name="Secret", visibility="private",
                  hide_inputs=True, created_at=T0)
    assert store.agents.create_agent(agent) is True
    assert store.agents.create_agent(replace(agent, visibility="public")) is False
    created = store.agents.get_agent(ref)
    assert created is not None
    assert (created.visibility, created.hide_inputs, created.hide_outputs, created.display_name,
            created.stats.runs) == ("private", True, False, "Secret", 0)
    assert [a.slug for a in store.agents.list_agents("dora")] == ["secret-agent"]
    store.ingest.ingest("dora", AgentMeta(slug="secret-agent"), clean(task_events("t1")))
    after = store.agents.get_agent(ref)
    assert after is not None and after.visibility == "private" and after.stats.runs == 1
    assert after.display_name == "Secret"
