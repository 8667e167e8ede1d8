"""The agent item (AGENT#{A}, META; `A` is `{login}#{slug}`): its details and settings, the
counters and histogram ingest and evals ADD to, its newest runs; and its days (AGENT#{A},
DAY#{yyyy-mm-dd}), which each finished run counts in."""

from __future__ import annotations

from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any

from ....domain import stats
from ....domain.field_limits import dumps
from ....domain.models import Agent, AgentMeta, AgentStats, RunDelta, RunRef, Usage
from ....domain.privacy import new_agent, settings_of
from .keys import DAY, META, AgentKeys, expiring
from .values import Update, loads, number, optional_float

_AGENT_TEXT = ("display_name", "model", "framework", "architecture", "created_at")
_EVIDENCE_COUNTS = ("evidence_input_tokens", "evidence_output_tokens", "evidence_calls",
                    "evidence_unpriced_calls")


def agent_upsert(agent: AgentKeys, meta: AgentMeta, now: str, dropped: int) -> Update:
    """Create the agent on its first batch (`privacy.new_agent`, its stats absent until first added to) and
    keep what later batches say about it; a batch that omits a detail erases nothing."""
    details = {k: (dumps(v) if k == "tools" else v) for k, v in meta.updates().items()}
    update = Update(agent.key(META),
                    set={"login": agent.login, "slug": agent.slug,
                         "gsi1pk": f"OWNER#{agent.login}", "gsi1sk": f"AGENT#{agent.slug}",
                         **details},
                    set_if_absent={"created_at": now,
                                   **settings_of(new_agent(agent.login, agent.slug, now))})
    if dropped:
        update.add["dropped_events"] = dropped
    return update


def record_newest_runs(update: Update, newest: dict[str, RunRef], recorded: dict[str, Any]
                       ) -> dict[str, Any]:
    """Add to `update` (of the agent item) those of a batch's `newest` runs that replace the
    ones in `recorded` (the agent item as last read; `RunRef.replaces`), each under the
    condition that the item holds none newer, as a concurrent batch may have recorded one
    since. The attributes it sets."""
    due = {name: run for name, run in newest.items()
           if run.replaces(RunRef.from_dict(recorded.get(name)))}
    conditions = [f"(attribute_not_exists(#{name}) OR #{name}.#at <= :{name})" for name in due]
    update.condition = " AND ".join(c for c in (update.condition, *conditions) if c) or None
    update.condition_values |= {f":{name}": run.at for name, run in due.items()}
    sets = {name: run.to_dict() for name, run in due.items()}
    update.set |= sets
    return sets


def agent_from_item(item: dict[str, Any]) -> Agent:
    def count(name: str) -> int:
        return int(item.get(name, 0))

    texts: dict[str, Any] = {name: item.get(name) for name in _AGENT_TEXT}
    return Agent(
        login=item["login"], slug=item["slug"], tools=loads(item.get("tools")),
        visibility=item.get("visibility", "public"),
        hide_inputs=bool(item.get("hide_inputs")), hide_outputs=bool(item.get("hide_outputs")),
        **texts,
        stats=AgentStats(
            runs=count("runs"), successes=count("successes"), failures=count("failures"),
            cost_usd_total=float(item.get("cost_usd_total", 0)),
            latency_hist=[count(f"h{i}") for i in range(stats.BUCKETS)],
            first_event_at=item.get("first_event_at"), last_event_at=item.get("last_event_at"),
            eval_count=count("eval_count"),
            eval_score_sum=float(item.get("eval_score_sum", 0)),
            dropped_events=count("dropped_events"),
            evidence_cost_usd_total=float(item.get("evidence_cost_usd_total", 0)),
            **{name: count(name) for name in _EVIDENCE_COUNTS},
            eval_unscored=count("eval_unscored"), eval_skipped=count("eval_skipped"),
            eval_judge=item.get("eval_judge"), judge_tokens=count("judge_tokens"),
            judge_cost_usd=float(item.get("judge_cost_usd", 0)),
            latest_run=RunRef.from_dict(item.get("latest_run")),
            latest_failure=RunRef.from_dict(item.get("latest_failure"))),
        judge_daily_budget_usd=optional_float(item.get("judge_daily_budget_usd")),
        judge_sample_rate=optional_float(item.get("judge_sample_rate")),
        expires_at=item.get("until"))


def run_updates(agent: AgentKeys, runs: list[RunDelta],
                evidence: Usage | None = None) -> list[Update]:
    """What finished root tasks add: the agent's counters and histogram, and each day's; and
    what evidence records add to the agent's evidence totals. One update per item: a
    transaction may touch an item only once."""
    if not runs and not evidence:
        return []
    ok = sum(r.success for r in runs)
    hist = Counter(stats.bucket_index(r.duration_ms) for r in runs if r.duration_ms is not None)
    counters = Update(agent.key(META), add={
        "runs": len(runs), "successes": ok, "failures": len(runs) - ok,
        "cost_usd_total": sum((number(r.cost_usd) for r in runs), Decimal(0)),
        **{f"h{i}": n for i, n in hist.items()}})
    if evidence is not None:
        counters.add |= {"evidence_cost_usd_total": number(evidence.cost_usd or 0.0),
                         "evidence_input_tokens": evidence.input_tokens or 0,
                         "evidence_output_tokens": evidence.output_tokens or 0,
                         "evidence_calls": evidence.calls,
                         "evidence_unpriced_calls": evidence.unpriced_calls}
    by_day: dict[str, list[RunDelta]] = defaultdict(list)
    for run in runs:
        by_day[run.day].append(run)
    days = [expiring(Update(agent.key(DAY + day), add={
        "runs": len(day_runs), "successes": sum(r.success for r in day_runs),
        "failures": sum(not r.success for r in day_runs),
        "cost_usd": sum((number(r.cost_usd) for r in day_runs), Decimal(0))}), agent)
        for day, day_runs in by_day.items()]
    return [counters, *days]


def day_from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {"day": item["sk"][len(DAY):], "runs": int(item.get("runs", 0)),
            "successes": int(item.get("successes", 0)), "failures": int(item.get("failures", 0)),
            "cost_usd": float(item.get("cost_usd", 0))}
