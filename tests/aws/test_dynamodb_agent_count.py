"""DynamoDB counts an account's agents on its user item (`store/dynamodb/agents.py`); a user
from before that count was kept gets it from its agents the first time it makes another, so
the limit holds for accounts that already had agents."""

from __future__ import annotations

import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.errors import TooManyAgents
from bench_core.domain.models import Agent, AgentMeta, iso
from bench_core.store.dynamodb.codec.users import user_key
from bench_core.store.dynamodb.codec.values import Update
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws.moto_table import dynamo_store
from tests.factories import clean, ev


def test_an_account_from_before_the_count_is_counted_by_its_agents() -> None:
    with dynamo_store() as store:
        for slug in ("a", "b", "c"):
            store.ingest.ingest("alice", AgentMeta(slug=slug), clean([ev("custom")]))
        assert store.table.get(user_key("alice"))["agents"] == 3
        store.table.update(Update(user_key("alice"), remove=["agents"]))  # as before

        strict = DynamoStore.open(store.table_name, client=store.client, max_agents_per_account=3)
        with pytest.raises(TooManyAgents):
            strict.ingest.ingest("alice", AgentMeta(slug="d"), clean([ev("custom")]))
        with pytest.raises(TooManyAgents):
            strict.agents.create_agent(Agent(login="alice", slug="d", created_at=iso(SYSTEM_CLOCK.now())))
        assert store.table.get(user_key("alice"))["agents"] == 3

        roomier = DynamoStore.open(store.table_name, client=store.client, max_agents_per_account=4)
        assert roomier.agents.create_agent(Agent(login="alice", slug="d", created_at=iso(SYSTEM_CLOCK.now())))
        assert store.table.get(user_key("alice"))["agents"] == 4
        assert len(store.agents.list_agents("alice")) == 4
