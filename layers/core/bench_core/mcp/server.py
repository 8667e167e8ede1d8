"""The MCP server object: three read-only tools, registered once at import.

The tools read the store of the request being served (`serving`), so one server object serves
every request of a process, locally and in a warm Lambda. Arguments are checked against each
tool's JSON schema by the SDK before a tool runs; a failure Bench anticipated (an agent that is
not found, an answer too large) becomes a tool error (`isError`) naming the problem, and the SDK
turns anything else into a tool error too, never an HTTP 500.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from ..domain.errors import BenchError
from ..domain.models import LOGIN_PATTERN, SLUG_PATTERN
from ..ports.store import Store
from . import tools

MAX_RESULT_BYTES = 256 * 1024
"""A backstop: the tools' own limits keep answers far below this."""

INSTRUCTIONS = " ".join((
    "Bench is a public registry of AI agents with their observed quality, cost and latency.",
    "Find agents with search_agents, then read one with get_agent.",
    'Numbers labelled "owner telemetry" are reported by the agent\'s owner from their own work;',
    '"benchmark evidence" comes from versioned benchmark suites run the same way for every',
    "agent (see list_benchmarks).",
    "Only public agents are visible; hidden inputs and outputs are never served."))

# The SDK calls logging.basicConfig with this level when nothing has configured logging yet
# (the local server): WARNING keeps the SDK's per-request INFO lines out of the console.
server = MCPServer("bench", title="Bench", instructions=INSTRUCTIONS, log_level="WARNING")
_store: ContextVar[Store] = ContextVar("bench_mcp_store")
Result = TypeVar("Result", bound=BaseModel)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)


@contextmanager
def serving(store: Store) -> Iterator[None]:
    """Let the tools called within read `store`."""
    token = _store.set(store)
    try:
        yield
    finally:
        _store.reset(token)


def _answer(tool: Callable[..., Result], *args: object) -> Result:
    """`tool` on the current store; Bench's own errors as tool errors the caller can read."""
    try:
        result = tool(_store.get(), *args)
    except BenchError as exc:
        raise ToolError(exc.message) from exc
    if len(result.model_dump_json()) > MAX_RESULT_BYTES:
        raise ToolError("the answer is too large: ask for fewer results")
    return result


@server.tool(title="Search public agents", annotations=READ_ONLY)
def search_agents(
    query: Annotated[str, Field(max_length=tools.MAX_QUERY_CHARS, description=(
        "words matched against login, slug, display name, framework and model; empty: all"))] = "",
    sort: Annotated[tools.SortName, Field(description=(
        "runs (most first), success (rate), score (judge), cost (per run, cheapest first) or "
        "latency (p50, fastest first); all but runs need at least 10 qualifying runs"))] = "runs",
    limit: Annotated[int, Field(ge=1, le=tools.MAX_SEARCH_LIMIT)] = 10,
) -> tools.AgentSearch:
    """Search the public agents on Bench, ranked like the leaderboard (owner telemetry)."""
    return _answer(tools.search_agents, query, sort, limit)


@server.tool(title="Read one public agent", annotations=READ_ONLY)
def get_agent(
    login: Annotated[str, Field(pattern=LOGIN_PATTERN, description="the owner's login")],
    slug: Annotated[str, Field(pattern=SLUG_PATTERN, description="the agent's slug")],
) -> tools.AgentReport:
    """One public agent: runs, success rate with its 95% interval, judge scores, cost, latency,
    failure insights and open regression alerts (owner telemetry), benchmark results
    (benchmark evidence) and its capability card. An agent that does not exist or is private is "agent not found"."""
    return _answer(tools.get_agent, login, slug)


@server.tool(title="List benchmark suites", annotations=READ_ONLY)
def list_benchmarks(
    suite: Annotated[str | None, Field(max_length=80, description=(
        "one suite, by name (grounded-research) or version (grounded-research-v1)"))] = None,
    top: Annotated[int, Field(ge=1, le=tools.MAX_TOP, description="results per suite")] = 5,
) -> tools.BenchmarkRegistry:
    """Benchmark suites, each version with its best public results (benchmark evidence)."""
    return _answer(tools.list_benchmarks, suite, top)
