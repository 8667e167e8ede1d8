"""What the API, the pages and MCP show of benchmarks, through the privacy gate (`privacy.py`).

Every result here is labelled *benchmark evidence* (`records.LABEL`), apart from the owner
telemetry of the rest of Bench. Rankings and public summaries hold listed (public) agents only;
a run's attempts show inputs, outputs and the judge's reasoning only as `privacy` allows.
`agent_benchmark_results` and `suites_overview` are what the MCP server serves: JSON values only.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.benchmark_records import LABEL, Attempt, RunRecord
from ..domain.errors import NotFound
from ..domain.models import Agent, AgentRef
from ..domain.privacy import HIDDEN, Sight, Viewer, listed, visible_agent
from ..ports.services import WithAgents, WithBenchmarks
from .suites import Suite, load_suite, packaged_suites

AGENT_RUNS = 20
RANKING_PAGE = 50


AGGREGATES = ("attempts", "cases", "pass_rate", "pass_rate_ci95", "pass_hat_k", "pass_at_k", "k",
              "mean_score", "cost_usd_total", "latency_ms")
"""The summary's headline figures; None while the run is still being graded."""


def run_summary(run: RunRecord) -> dict[str, Any]:
    """A run's public headline: who, which suite, its grading status and progress, and the
    server's aggregates (once done)."""
    return {"label": LABEL, "run_id": run.run_id, "agent": f"{run.login}/{run.slug}",
            "login": run.login, "slug": run.slug, "suite": run.suite,
            "suite_hash": run.suite_hash, "judge": run.judge, "submitted_at": run.submitted_at,
            "repeats": run.repeats, "status": run.status, "error": run.error,
            "progress": {"graded": run.graded, "total": run.total},
            **{name: run.summary.get(name) for name in AGGREGATES},
            "url": f"/benchmarks/{run.suite}/runs/{run.run_id}"}


def accepted(run: RunRecord) -> dict[str, Any]:
    """The answer to a submission (202): where to follow the run until it is graded. It also
    has what an older `bench benchmark run`, which expected the graded run, prints."""
    view = run_summary(run)
    return {"id": run.run_id, **view, "judge": run.judge or "pending: grading in the background",
            "message": f"accepted: Bench grades the run in the background; follow {view['url']} "
                       f"(or GET /api/benchmarks/runs/{run.run_id}, or `bench benchmark show "
                       f"{run.run_id}`) until its status is done. bench-observe 0.2.0 and later "
                       f"wait for it."}


def attempt_view(attempt: Attempt, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """One attempt as `viewer` may see it. Its output's hash goes with the output: a short
    answer is found again by hashing guesses."""
    sight = Sight.of(agent, viewer)
    view = attempt.model_dump()
    if not sight.inputs:
        view["input"] = HIDDEN
    if not sight.outputs:
        view["output"] = view["output_hash"] = HIDDEN
        view["error"] = HIDDEN if attempt.error else None
    if not sight.shows_derived(private=False):
        view["reasoning"] = HIDDEN
    view["inputs_hidden"] = view["input"] == HIDDEN
    view["outputs_hidden"] = view["output"] == HIDDEN
    return view


class BenchmarkReads(WithBenchmarks, WithAgents, Protocol):
    """Benchmark runs and the agents they are of (whose privacy says who sees them)."""


def visible_run(store: BenchmarkReads, suite_id: str | None, run_id: str, viewer: Viewer
                ) -> tuple[RunRecord, Agent]:
    """The run (of `suite_id`, when given) and its agent if the viewer may see the agent; 404
    alike otherwise."""
    run = store.benchmarks.get_benchmark_run(run_id) if len(run_id) <= 64 else None
    if run is None or suite_id not in (None, run.suite):
        raise NotFound("benchmark run not found")
    try:
        agent = visible_agent(store.agents.get_agent(AgentRef(run.login, run.slug)), viewer)
    except NotFound:
        raise NotFound("benchmark run not found") from None
    return run, agent


def run_detail(run: RunRecord, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """The whole run: status, summary and per-case aggregates (once done), every attempt's
    evidence (gated)."""
    return {**run_summary(run), "summary": run.summary or None,
            "attempts": [attempt_view(a, agent, viewer) for a in run.attempts]}


def ranking(store: BenchmarkReads, suite_id: str, limit: int) -> list[dict[str, Any]]:
    """Each listed agent's latest run of the suite, best first (pass rate, then pass^k),
    numbered; private agents are skipped, however many there are."""
    found: list[dict[str, Any]] = []
    after: str | None = None
    while len(found) < limit:
        page = store.benchmarks.benchmark_ranking(suite_id, limit=RANKING_PAGE, after=after)
        for run in page:
            agent = store.agents.get_agent(AgentRef(run.login, run.slug))
            if agent is not None and listed(agent) and len(found) < limit:
                found.append({"rank": len(found) + 1, "display_name": agent.display_name or agent.slug,
                              **run_summary(run)})
        if len(page) < RANKING_PAGE:
            break
        after = page[-1].rank_key
    return found


def suite_info(suite: Suite, content_hash: str) -> dict[str, Any]:
    m = suite.manifest
    return {"suite": suite.suite_id, "name": m.name, "version": m.version,
            "description": m.description, "content_hash": content_hash, "cases": len(suite.cases),
            "judge_prompt": m.grading.judge_prompt, "offline_grader": m.grading.offline_grader,
            "pass_threshold": m.grading.pass_threshold, "repeats": m.grading.repeats}


def suite_detail(store: BenchmarkReads, suite_id: str, ranking_size: int) -> dict[str, Any]:
    """A suite as packaged, whether and with which hash it is published, and its ranking."""
    packaged = load_suite(suite_id)
    return {**suite_info(packaged.suite, packaged.content_hash), "label": LABEL,
            "published_hash": store.benchmarks.registered_suites().get(suite_id),
            "ranking": ranking(store, suite_id, ranking_size)}


def suites_overview(store: BenchmarkReads, top: int = 5) -> list[dict[str, Any]]:
    """Every suite this server has, by name, each version with its description, whether it is
    published (registered by a first run) and its `top` results."""
    registered = store.benchmarks.registered_suites()
    by_name: dict[str, list[dict[str, Any]]] = {}
    for suite_id, packaged in packaged_suites().items():
        suite = packaged.suite
        version = {**suite_info(suite, packaged.content_hash), "published": suite_id in registered,
                   "top": ranking(store, suite_id, top) if top > 0 else []}
        by_name.setdefault(suite.manifest.name, []).append(version)
    return [{"name": name, "label": LABEL,
             "versions": sorted(versions, key=lambda v: -v["version"])}
            for name, versions in sorted(by_name.items())]


def agent_benchmark_results(store: WithBenchmarks, agent: Agent) -> list[dict[str, Any]]:
    """The agent's runs as anyone may see them, newest first; none for an unlisted agent."""
    if not listed(agent):
        return []
    return [run_summary(run) for run in store.benchmarks.benchmark_runs_of(agent.ref, AGENT_RUNS)]


def visible_runs(store: WithBenchmarks, agent: Agent, viewer: Viewer) -> list[dict[str, Any]]:
    """The agent's runs for a page the viewer may already see (its owner sees a private one's)."""
    if viewer.owns(agent):
        return [run_summary(run) for run in store.benchmarks.benchmark_runs_of(agent.ref, AGENT_RUNS)]
    return agent_benchmark_results(store, agent)
