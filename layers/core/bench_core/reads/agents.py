"""JSON shapes of the read API, built from stored records through the privacy gate."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Protocol
from urllib.parse import quote

from ..domain import ranking as leaderboard
from ..domain import stats
from ..domain.errors import NotFound
from ..domain.models import Agent, AgentRef, RunRef
from ..domain.pricing import headline_cost
from ..domain.privacy import ANONYMOUS, Viewer, insights_view, listed, task_view, visible_agent
from ..ports.services import (
    WithAgents,
    WithBenchmarks,
    WithClock,
    WithEvals,
    WithFeedback,
    WithIngest,
    WithLeaderboard,
    WithReuse,
)
from . import versions
from .agreement import UNLABELLED, judge_agreement
from .versions import agent_versions

RECENT_TASKS = 10


def agent_summary(agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """Headline numbers, from counters only (no scan of tasks or events). The headline cost per
    run is the owner's where reported, else provider evidence's, with its source named
    (`pricing.headline_cost`); both totals stay apart beside it."""
    s = agent.stats
    interval = stats.wilson_interval(s.successes, s.runs)
    headline, source = headline_cost(s.cost_usd_total, s.evidence_cost_usd_total, s.runs)
    return {
        "login": agent.login,
        "slug": agent.slug,
        "display_name": agent.display_name or agent.slug,
        "model": agent.model,
        "framework": agent.framework,
        "architecture": agent.architecture,
        "tools": agent.tools,
        "visibility": agent.visibility,
        "hide_inputs": agent.hide_inputs,
        "hide_outputs": agent.hide_outputs,
        "runs": s.runs,
        "successes": s.successes,
        "failures": s.failures,
        "success_rate": stats.rate(s.successes, s.runs),
        "success_rate_ci95": list(interval) if interval else None,
        "avg_eval_score": (s.eval_score_sum / s.eval_count) if s.eval_count else None,
        "avg_eval_score_judge": s.eval_judge,
        "eval_count": s.eval_count,
        "judged_share": stats.rate(s.eval_count + s.eval_unscored, s.runs),
        "evals": eval_summary(agent, viewer),
        "cost_usd_total": round(s.cost_usd_total, 10),
        "cost_usd_per_run": round(s.cost_usd_total / s.runs, 10) if s.runs else None,
        "evidence_cost_usd_total": round(s.evidence_cost_usd_total, 10),
        "evidence_cost_usd_per_run": (round(s.evidence_cost_usd_total / s.runs, 10)
                                      if s.runs else None),
        "headline_cost_usd_per_run": None if headline is None else round(headline, 10),
        "headline_cost_source": source,
        "evidence": evidence_summary(agent),
        "latency_ms": stats.latency_summary(s.latency_hist),
        "first_event_at": s.first_event_at,
        "last_event_at": s.last_event_at,
        "latest_run": run_link(agent, s.latest_run),
        "latest_failure": run_link(agent, s.latest_failure),
        "dropped_events": s.dropped_events if viewer.owns(agent) else None,
        "created_at": agent.created_at,
    }


def run_link(agent: Agent, run: RunRef | None) -> dict[str, Any] | None:
    """A run the agent keeps a link to (`AgentStats.latest_run`), with its page's path: its
    name and status are shown as every task's are (`privacy.task_view`), its content is not
    here. None for an agent with none recorded (none finished since the agent kept one)."""
    if run is None:
        return None
    return {**run.to_dict(),
            "url": f"/u/{agent.login}/{agent.slug}/runs/{quote(run.run_id, safe='')}"}


def eval_summary(agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """What the judge did with the agent's runs: judged (scored or unscored), skipped by the
    budget, not yet done; what it cost; and, for the owner, the budget settings (None: the
    deployment's default)."""
    s = agent.stats
    done = s.eval_count + s.eval_unscored + s.eval_skipped
    summary: dict[str, Any] = {
        "judge": s.eval_judge, "scored": s.eval_count, "unscored": s.eval_unscored,
        "skipped": s.eval_skipped, "pending": max(0, s.runs - done),
        "judged_share": stats.rate(s.eval_count + s.eval_unscored, s.runs),
        "judge_tokens": s.judge_tokens, "judge_cost_usd": round(s.judge_cost_usd, 6)}
    if viewer.owns(agent):
        summary.update(judge_daily_budget_usd=agent.judge_daily_budget_usd,
                       judge_sample_rate=agent.judge_sample_rate)
    return summary


class DetailReads(WithIngest, WithFeedback, Protocol):
    """An agent's newest runs and its judge's agreement with people."""


class BoardReads(WithLeaderboard, WithFeedback, Protocol):
    """A page of ranked agents and their judges' agreement with people."""


class AgentReads(WithIngest, WithEvals, WithAgents, WithClock, WithFeedback, Protocol):
    """An agent's numbers: its days (up to today) and recent events, its versions, and its
    failure insights."""


class ProfileReads(AgentReads, WithReuse, WithBenchmarks, Protocol):
    """A profile page: the agent's numbers, its capability card and benchmark runs."""


def visible(store: WithAgents, ref: AgentRef, viewer: Viewer) -> Agent:
    """The agent if `viewer` may see it; 404 alike when it is absent or hidden from them."""
    return visible_agent(store.agents.get_agent(ref), viewer)


def agent_detail(store: DetailReads, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    tasks, _ = store.ingest.list_tasks(agent.ref, limit=RECENT_TASKS)
    return {**agent_summary(agent, viewer),
            "judge_agreement": judge_agreement(store, [agent.ref])[agent.ref],
            "recent_tasks": [task_view(t, agent, viewer) for t in tasks]}


# ---- public surfaces (pages, badges, embeds, OG images) ----------------------------------------

DAILY_WINDOW = 30


def public_agent(store: WithAgents, ref: AgentRef) -> Agent | None:
    """The agent as anyone may see it, for responses shared through public caches (badges,
    embeds, OG images): None when it is absent or private, which callers answer alike."""
    try:
        return visible_agent(store.agents.get_agent(ref), ANONYMOUS)
    except NotFound:
        return None


def public_summary(store: WithAgents, ref: AgentRef, version: str | None = None
                   ) -> dict[str, Any] | None:
    """What anyone may see of the agent's numbers; with `version`, that version's
    (`reads.versions`) in place of the agent's."""
    agent = public_agent(store, ref)
    if agent is None:
        return None
    summary = agent_summary(agent, ANONYMOUS)
    return summary if version is None else {**summary, **versions.version_stats(store, ref,
                                                                                version)}


def day_window(last_day: str | None, today: date, days: int = DAILY_WINDOW) -> list[str]:
    """The `days` ISO dates ending on the agent's last active day (`today` if it has none), so
    an agent that went quiet still shows its recent history (the dates are on the chart)."""
    end = date.fromisoformat(last_day[:10]) if last_day else today
    return [(end - timedelta(days=days - 1 - k)).isoformat() for k in range(days)]


def daily_series(store: AgentReads, agent: Agent) -> tuple[list[str], list[dict[str, Any]]]:
    window = day_window(agent.stats.last_event_at, store.clock.now().date())
    return window, store.ingest.daily(agent.ref, window[0])


def evidence_summary(agent: Agent) -> dict[str, Any]:
    """Cost proven by provider usage (adapters, OTLP spans) and priced by Bench's table, never
    mixed with the owner's `cost_usd_total`; `unpriced_calls` had models the table lacks (their
    tokens count, their cost is left out rather than guessed)."""
    s = agent.stats
    return {"cost_usd_total": round(s.evidence_cost_usd_total, 10),
            "input_tokens": s.evidence_input_tokens, "output_tokens": s.evidence_output_tokens,
            "calls": s.evidence_calls, "unpriced_calls": s.evidence_unpriced_calls}


def cost_evidence(agent: Agent, viewer: Viewer) -> dict[str, Any] | None:
    """Cost backed by provider evidence (model, token counts, price table), shown apart from
    the owner's own reports; None while the agent has no evidence (SPEC section 1, adapters)."""
    return evidence_summary(agent) if agent.stats.evidence_calls else None


def failure_insights(store: WithEvals, agent: Agent, viewer: Viewer) -> list[dict[str, Any]] | None:
    """Labelled clusters of failures through the privacy gate; None until the cluster workflow
    has stored any (SPEC 5)."""
    insights = store.evals.get_insights(agent.ref)
    return None if insights is None else insights_view(insights, agent, viewer)["clusters"]


def insights_of(store: WithEvals, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """`GET .../insights`: the stored clusters (or none yet) through the privacy gate."""
    return insights_view(store.evals.get_insights(agent.ref), agent, viewer)


def profile(store: AgentReads, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """Everything the profile page shows: the read API's detail plus the series behind its
    charts, all from counters and the newest tasks (no scan of history)."""
    window, daily = daily_series(store, agent)
    return {**agent_detail(store, agent, viewer), "latency_hist": list(agent.stats.latency_hist),
            "window": window, "daily": daily, "cost_evidence": cost_evidence(agent, viewer),
            "insights": failure_insights(store, agent, viewer),
            "versions": agent_versions(store, agent, versions.SHOWN)}


def profile_page(store: ProfileReads, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """What the profile page reads: the profile, the capability card and benchmark runs."""
    from ..benchmarks.read_models import visible_runs
    from ..reuse.capability import capability_view

    return {"p": profile(store, agent, viewer), "capability": capability_view(store, agent, viewer),
            "benchmarks": visible_runs(store, agent, viewer)}


def leaderboard_page(store: BoardReads, sort: str, query: str | None, page: int,
                     qualification: leaderboard.Qualification) -> dict[str, Any]:
    """One page of the leaderboard: public agents only, as the read API shows them (with their
    judges' agreement with people, read for the agents with a judge's score), and when a new
    agent first ranks (`qualification`: the store's, from the same settings)."""
    offset = (page - 1) * leaderboard.PAGE_SIZE
    agents = store.leaderboard.leaderboard(sort, query=query, offset=offset,
                                           limit=leaderboard.PAGE_SIZE + 1)
    shown = [a for a in agents[:leaderboard.PAGE_SIZE] if listed(a)]
    agreement = judge_agreement(store, [a.ref for a in shown if a.stats.eval_count])
    return {
        "sort": sort, "q": query, "page": page, "page_size": leaderboard.PAGE_SIZE,
        "min_runs": leaderboard.MIN_RUNS, "rule": leaderboard.SORTS[sort].rule,
        "entry": qualification.rule,
        "agents": [{"rank": offset + i + 1, **agent_summary(a, ANONYMOUS),
                    "judge_agreement": agreement.get(a.ref, UNLABELLED)}
                   for i, a in enumerate(shown)],
        "prev_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if len(agents) > leaderboard.PAGE_SIZE else None,
    }
