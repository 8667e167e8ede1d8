"""The MCP server's backstops, through the official client connected in-process: an answer
larger than the limit is a tool error, not a huge response; a tool outside `serving` fails as
a tool error, not a crash of the server."""

from __future__ import annotations

import asyncio

import pytest
from bench_core.domain.models import AgentMeta
from bench_core.domain.ranking import Qualification
from bench_core.mcp import server as mcp_server
from bench_core.store.memory.store import MemoryStore
from mcp import Client
from mcp.types import CallToolResult

from tests.factories import clean, day_old, task_events


def call(tool: str, arguments: dict) -> CallToolResult:
    async def run() -> CallToolResult:
        async with Client(mcp_server.server) as client:
            return await client.call_tool(tool, arguments)
    return asyncio.run(run())


@pytest.fixture
def store() -> MemoryStore:
    """A store with one agent that ranks: a day old, with its runs."""
    store = MemoryStore.open()
    store.agents.create_agent(day_old("ada", "big"))
    events = [e for i in range(Qualification().min_runs) for e in task_events(f"t{i}")]
    store.ingest.ingest("ada", AgentMeta(slug="big", display_name="Big Agent"), clean(events))
    return store


def test_an_answer_over_the_size_limit_is_a_tool_error(store: MemoryStore,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with mcp_server.serving(store):
        assert not call("search_agents", {}).is_error
        monkeypatch.setattr(mcp_server, "MAX_RESULT_BYTES", 100)
        result = call("search_agents", {})
    assert result.is_error
    assert "too large" in result.content[0].text


def test_the_store_is_only_the_one_being_served(store: MemoryStore) -> None:
    with mcp_server.serving(store):
        found = call("search_agents", {"query": "big"})
    assert [a["slug"] for a in found.structured_content["agents"]] == ["big"]
    outside = call("search_agents", {"query": "big"})
    assert outside.is_error and outside.structured_content is None
