"""What the MCP tools answer: public agents only, through the same views and privacy gate as the
public pages (the viewer is always anonymous), with owner telemetry and benchmark evidence in
separately labelled sections so an assistant cannot mistake one for the other.

Each function takes the store and validated arguments and returns a pydantic model (the tool's
structured output); an agent that is absent or private is `NotFound("agent not found")` alike.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..benchmarks.read_models import BenchmarkReads, agent_benchmark_results, suites_overview
from ..domain import ranking as leaderboard
from ..domain.errors import NotFound
from ..domain.models import Agent, AgentRef
from ..domain.privacy import ANONYMOUS, alert_view, listed
from ..ports.services import (
    WithAgents,
    WithAlerts,
    WithBenchmarks,
    WithEvals,
    WithLeaderboard,
    WithReuse,
)
from ..reads import agents as views
from ..reuse.capability import public_capability

OwnerTelemetryLabel = Literal["owner telemetry"]
BenchmarkEvidenceLabel = Literal["benchmark evidence"]
OWNER_TELEMETRY: OwnerTelemetryLabel = "owner telemetry"
BENCHMARK_EVIDENCE: BenchmarkEvidenceLabel = "benchmark evidence"

MAX_QUERY_CHARS = 100
"""As long as a leaderboard search (`leaderboard.normalise_query`) may be."""
MAX_SEARCH_LIMIT = 50
MAX_TOP = 20
MAX_CLUSTERS = 10
MAX_BENCHMARK_RESULTS = 20
MAX_SUITES = 50
SortName = Literal["runs", "success", "score", "cost", "latency"]


class Latency(BaseModel):
    """Latency percentiles in milliseconds from the agent's histogram; None without timings."""

    p50: float | None = None
    p95: float | None = None
    p99: float | None = None


class AgentListing(BaseModel):
    """One public agent in a search, with its headline numbers (owner telemetry)."""

    rank: int
    login: str
    slug: str
    display_name: str
    model: str | None = Field(None, description="declared by the owner, else the model(s) seen in provider evidence")
    framework: str | None = None
    profile_path: str
    runs: int
    success_rate: float | None = None
    success_rate_ci95: list[float] | None = Field(None, description="Wilson 95% interval")
    avg_eval_score: float | None = Field(None, description="mean 0-1 score of the judged runs")
    avg_eval_score_judge: str | None = None
    cost_usd_per_run: float | None = Field(None, description="owner-reported")
    headline_cost_usd_per_run: float | None = Field(
        None, description="owner-reported where the owner reports cost, else provider evidence")
    headline_cost_source: str | None = Field(
        None, description='"owner-reported", "provider evidence", or none')
    latency_ms: Latency


class AgentSearch(BaseModel):
    source: OwnerTelemetryLabel = OWNER_TELEMETRY
    query: str
    sort: SortName
    rule: str = Field(description="which agents qualify for this sort")
    agents: list[AgentListing]


class FailureCluster(BaseModel):
    """A recurring failure mode; the label is `[hidden by owner]` when inputs or outputs are."""

    label: str
    count: int
    share: float
    terms: list[str] = []
    example_task_ids: list[str] = []


class RunLink(BaseModel):
    """A run to open on Bench: its name and status are public, its content is not here."""

    run_id: str
    name: str | None = None
    status: str
    at: str = Field(description="when the run started (when it ended, if its start is unknown)")
    url: str = Field(description="the run's page: its tree of subtasks, a path on this server")


class OpenAlert(BaseModel):
    """An unresolved regression alert (`domain.privacy.alert_view`): public numbers only."""

    model_config = ConfigDict(extra="allow")

    metric: str
    title: str
    version: str | None = None
    against: str | None = None
    baseline: float | None = None
    current: float | None = None
    change: float | None = None
    p_value: float | None = None
    since: str
    opened_at: str


class OwnerTelemetry(BaseModel):
    """What the owner's agent reported doing on the owner's own work, and what Bench's judge
    made of it."""

    source: OwnerTelemetryLabel = OWNER_TELEMETRY
    runs: int
    successes: int
    failures: int
    success_rate: float | None = None
    success_rate_ci95: list[float] | None = Field(None, description="Wilson 95% interval")
    avg_eval_score: float | None = None
    avg_eval_score_judge: str | None = Field(None, description="the judge behind the scores")
    eval_count: int
    cost_usd_total: float = Field(description="owner-reported")
    cost_usd_per_run: float | None = Field(None, description="owner-reported")
    headline_cost_usd_per_run: float | None = Field(
        None, description="owner-reported where the owner reports cost, else provider evidence")
    headline_cost_source: str | None = Field(
        None, description='"owner-reported", "provider evidence", or none')
    cost_evidence: dict[str, Any] | None = Field(
        None, description="cost proven by provider usage and priced by Bench, when reported")
    latency_ms: Latency
    first_event_at: str | None = None
    last_event_at: str | None = None
    latest_run: RunLink | None = Field(None, description="the newest finished run")
    latest_failure: RunLink | None = Field(None, description="the newest failed run")
    open_alerts: list[OpenAlert] = Field(default_factory=list, description=(
        "regressions Bench's monitors found and have not seen recover: a metric (of a version "
        "against the one before it) worse beyond noise"))
    failure_insights: list[FailureCluster] | None = Field(
        None, description="None until failures have been clustered")


class BenchmarkEvidence(BaseModel):
    """Runs of versioned benchmark suites, graded by Bench: the same work as everyone else's."""

    source: BenchmarkEvidenceLabel = BENCHMARK_EVIDENCE
    results: list[dict[str, Any]]


class CapabilityCard(BaseModel):
    """What the owner says the agent can do and how to call it (owner-published)."""

    source: OwnerTelemetryLabel = OWNER_TELEMETRY
    card: dict[str, Any] | None = None


class AgentIdentity(BaseModel):
    login: str
    slug: str
    display_name: str
    model: str | None = Field(None, description="declared by the owner, else the model(s) seen in provider evidence")
    framework: str | None = None
    architecture: str | None = None
    tools: list[str] | None = None
    created_at: str
    profile_path: str


class AgentReport(BaseModel):
    agent: AgentIdentity
    owner_telemetry: OwnerTelemetry
    benchmark_evidence: BenchmarkEvidence
    capability: CapabilityCard


class SuiteVersion(BaseModel):
    """One published (or packaged) version of a suite and its best public results."""

    model_config = ConfigDict(extra="allow")

    suite: str = Field(description="the version's id, <name>-v<N>")
    version: int
    description: str | None = None
    cases: int
    published: bool
    top: list[dict[str, Any]] = Field(description="each public agent's latest run, best first")


class SuiteSummary(BaseModel):
    model_config = ConfigDict(extra="allow")

    label: BenchmarkEvidenceLabel = BENCHMARK_EVIDENCE
    name: str
    versions: list[SuiteVersion]


class BenchmarkRegistry(BaseModel):
    source: BenchmarkEvidenceLabel = BENCHMARK_EVIDENCE
    suites: list[SuiteSummary]


def profile_path(agent: Agent) -> str:
    return f"/u/{agent.login}/{agent.slug}"


class ToolReads(WithAgents, WithEvals, WithReuse, WithBenchmarks, WithAlerts, Protocol):
    """What `get_agent` reports of an agent: its numbers, insights, open alerts, card and
    benchmark runs."""


def search_agents(store: WithLeaderboard, query: str, sort: SortName, limit: int) -> AgentSearch:
    """Public agents matching `query`, ranked as the leaderboard ranks them (one index read)."""
    normalised = leaderboard.normalise_query(query)
    agents = [a for a in store.leaderboard.leaderboard(sort, query=normalised, limit=limit) if listed(a)]
    return AgentSearch(
        query=normalised or "", sort=sort, rule=leaderboard.SORTS[sort].rule,
        agents=[AgentListing.model_validate({**views.agent_summary(a, ANONYMOUS), "rank": i,
                                             "profile_path": profile_path(a)})
                for i, a in enumerate(agents[:limit], start=1)])


def get_agent(store: ToolReads, login: str, slug: str) -> AgentReport:
    agent = views.public_agent(store, AgentRef(login.lower(), slug.lower()))
    if agent is None:
        raise NotFound("agent not found")
    summary = views.agent_summary(agent, ANONYMOUS)
    insights = views.failure_insights(store, agent, ANONYMOUS)
    telemetry = OwnerTelemetry.model_validate({
        **summary, "cost_evidence": views.cost_evidence(agent, ANONYMOUS),
        "failure_insights": None if insights is None else insights[:MAX_CLUSTERS],
        "open_alerts": [alert_view(a) for a in store.alerts.agent_alerts(agent.ref,
                                                                         unresolved=True)]})
    return AgentReport(
        agent=AgentIdentity.model_validate({**summary, "profile_path": profile_path(agent)}),
        owner_telemetry=telemetry,
        benchmark_evidence=BenchmarkEvidence(
            results=agent_benchmark_results(store, agent)[:MAX_BENCHMARK_RESULTS]),
        capability=CapabilityCard(card=public_capability(store, agent)))


def list_benchmarks(store: BenchmarkReads, suite: str | None, top: int) -> BenchmarkRegistry:
    """The suites, each version with its `top` public results; `suite` narrows the answer to
    one suite (by name) or one version (by id, `<name>-v<N>`)."""
    suites = [SuiteSummary.model_validate(s) for s in suites_overview(store, top)]
    if suite:
        wanted = suite.lower()
        suites = [s.model_copy(update={"versions": [v for v in s.versions
                                                    if wanted in (s.name, v.suite)]})
                  for s in suites]
        suites = [s for s in suites if s.versions]
    return BenchmarkRegistry(suites=suites[:MAX_SUITES])
