"""The agent item (AGENT#{A}, META; `A` is `{login}#{slug}`): its details and settings, its
rank keys and the counters they were computed from (`ranked`, what listings show); its counter
shards (AGENT#{A}, META#C{n}), which ingest and evals ADD to; and its days (AGENT#{A},
DAY#{yyyy-mm-dd}#{n}), which each finished run counts in.

Why shards: a hot agent (2,000 events/s) sends 40 batches a second and has 40 eval records a
second, each one transaction adding to its counters. On one item that is 80 transactions a
second (they conflict past about ten) and 80 rewrites of a 2-3 KB item with its `gsi1` entry.
Each transaction instead ADDs to one of `COUNTER_SHARDS` small items, picked per write: 80 / 10
= 8 transactions a second on each, a few hundred bytes each. The counts stay exactly-once (the
ADDs are inside the transactions that already make a batch or an eval count once) and are
merged on read: `META` and its shards are one Query (`begins_with(sk, "META")`), so a profile
pays one request. An agent's counters from before the shards stay on `META` as they are (its
base: reads add the shards to them), so the table's migration has nothing to fold.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ....domain import stats
from ....domain.eval_records import MIXED
from ....domain.field_limits import dumps
from ....domain.models import Agent, AgentMeta, AgentStats, RunDelta, RunRef, Usage
from ....domain.privacy import new_agent, settings_of
from .keys import DAY, META, AgentKeys, expiring
from .values import Update, loads, number, optional_float

_AGENT_TEXT = ("display_name", "model", "framework", "architecture", "created_at")
_EVIDENCE_COUNTS = ("evidence_input_tokens", "evidence_output_tokens", "evidence_calls",
                    "evidence_unpriced_calls")
COUNTERS = "META#C"
"""Counter shards: `META#C{n}`, after `META` so one Query of `begins_with(sk, "META")` reads
the agent whole."""
COUNTER_SHARDS = 10
"""A hot agent's 40 batches and 40 eval records a second over 10 shards: 8 transactions a second
on each, below the ~10 at which overlapping transactions start to conflict."""
DAY_SHARDS = 8
"""A day's counters, one item per shard `n % DAY_SHARDS`: only batches add to them (40 a second
for a hot agent, 5 on each), and a 30-day chart reads 240 items of ~100 bytes (6 RRU)."""
SUMS = ("runs", "successes", "failures", "cost_usd_total", "dropped_events", "eval_count",
        "eval_score_sum", "eval_unscored", "eval_skipped", "judge_tokens", "judge_cost_usd",
        "evidence_cost_usd_total", *_EVIDENCE_COUNTS, *(f"h{i}" for i in range(stats.BUCKETS)))
"""The counters ADDed (to a shard) and summed on read."""
_NEWEST = ("latest_run", "latest_failure")
JUDGES = "eval_judges"
"""On a shard: the set of judges whose scores it counts (an ADD needs no condition); merged
with the base's `eval_judge` label into one judge or "mixed"."""
RANKED = "ranked"
"""On `META`: the merged counters the rank keys were last computed from, what listings show."""


def pick_shard() -> int:
    return random.randrange(COUNTER_SHARDS)


def counter_key(agent: AgentKeys, shard: int) -> dict[str, Any]:
    return agent.key(f"{COUNTERS}{shard}")


def merged(item: dict[str, Any], shards: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """`item`'s own counters (its base) with every shard's added: sums summed, the event window
    widest, the newest runs newest, the judges one label."""
    out = dict(item)
    judges: set[str] = {item["eval_judge"]} if item.get("eval_judge") else set()
    for shard in shards:
        for name in SUMS:
            if shard.get(name):
                value = shard[name]
                out[name] = out.get(name, 0) + (number(value) if isinstance(value, float) else value)
        for name, pick in (("first_event_at", min), ("last_event_at", max)):
            if shard.get(name):
                out[name] = pick(v for v in (out.get(name), shard[name]) if v)
        for name in _NEWEST:
            ref = RunRef.from_dict(shard.get(name))
            if ref is not None and ref.replaces(RunRef.from_dict(out.get(name))):
                out[name] = shard[name]
        judges |= set(shard.get(JUDGES) or ())
    if judges:
        out["eval_judge"] = judges.pop() if len(judges) == 1 else MIXED
    return out


def snapshot(counted: dict[str, Any]) -> dict[str, Any]:
    """What `RANKED` keeps of merged counters: the ones that are set."""
    names = (*SUMS, "first_event_at", "last_event_at", "eval_judge", *_NEWEST)
    return {name: counted[name] for name in names if counted.get(name)}


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


def changes_details(item: dict[str, Any], meta: AgentMeta) -> bool:
    """Whether a batch's `meta` says anything of the agent that its item does not hold."""
    return any(item.get(k) != (dumps(v) if k == "tools" else v) for k, v in meta.updates().items())


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


def record_window(update: Update, times: list[str], recorded: dict[str, Any]) -> dict[str, Any]:
    """Add to `update` (of a counter shard) the widening of the event window to `times` where it
    widens what `recorded` (the shard as last read) holds, under the condition that it still
    holds no wider one. The attributes it sets."""
    if not times:
        return {}
    sets: dict[str, Any] = {}
    first, last = min(times), max(times)
    if not recorded.get("first_event_at") or first < recorded["first_event_at"]:
        sets["first_event_at"] = first
        update.condition_values[":first"] = first
    if not recorded.get("last_event_at") or last > recorded["last_event_at"]:
        sets["last_event_at"] = last
        update.condition_values[":last"] = last
    conditions = [f"(attribute_not_exists(#{name}) OR #{name} {op} :{name[:-9]})"
                  for name, op in (("first_event_at", ">="), ("last_event_at", "<="))
                  if name in sets]
    update.condition = " AND ".join(c for c in (update.condition, *conditions) if c) or None
    update.set |= sets
    return sets


def listed_item(item: dict[str, Any]) -> dict[str, Any]:
    """The agent item as listings read it: its counters as last ranked (`RANKED`, at most
    `leaderboard.RANK_EVERY` behind while the agent sends), else its own."""
    ranked = item.get(RANKED)
    return item if ranked is None else {**item, **ranked}


def agent_from_item(item: dict[str, Any]) -> Agent:
    """The agent of an item whose counters are complete: merged (`merged`) or listed
    (`listed_item`)."""
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


def run_updates(agent: AgentKeys, runs: list[RunDelta], evidence: Usage | None,
                shard: int) -> list[Update]:
    """What finished root tasks add: the agent's counters and histogram (on counter shard
    `shard`), and each day's (on its shard); and what evidence records add to the agent's
    evidence totals. One update per item: a transaction may touch an item only once."""
    if not runs and not evidence:
        return []
    ok = sum(r.success for r in runs)
    hist = Counter(stats.bucket_index(r.duration_ms) for r in runs if r.duration_ms is not None)
    counters = Update(counter_key(agent, shard), add={
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
    days = [expiring(Update(agent.key(f"{DAY}{day}#{shard % DAY_SHARDS}"), add={
        "runs": len(day_runs), "successes": sum(r.success for r in day_runs),
        "failures": sum(not r.success for r in day_runs),
        "cost_usd": sum((number(r.cost_usd) for r in day_runs), Decimal(0))}), agent)
        for day, day_runs in by_day.items()]
    return [expiring(counters, agent), *days]


def days_from_items(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each day's counters, its shards (`DAY#{day}#{n}`, and `DAY#{day}` from before them)
    added up, in day order."""
    days: dict[str, dict[str, Any]] = {}
    for item in items:
        day = item["sk"][len(DAY):len(DAY) + 10]
        into = days.setdefault(day, {"day": day, "runs": 0, "successes": 0, "failures": 0,
                                     "cost_usd": Decimal(0)})
        for name in ("runs", "successes", "failures"):
            into[name] += int(item.get(name, 0))
        into["cost_usd"] += Decimal(item.get("cost_usd", 0))
    return [{**days[day], "cost_usd": float(days[day]["cost_usd"])} for day in sorted(days)]
