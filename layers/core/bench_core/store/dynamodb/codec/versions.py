"""An agent's versions on DynamoDB (`domain.versions`): one counter item per version and counter
shard, AGENT#{A}, VER#{version}#{n} (`n` the shard the batch or eval adds to, as in
`codec.agents`), ADDed to in the transaction that already counts the runs (ingest) or their
scores (evals), so they stay exactly-once and no item takes more transactions a second than the
agent's own counter shards. A version never holds '#' (`field_limits.VERSION_RULE`).

A read is one Query of `begins_with(sk, "VER#")`, the shards of a version added up. When a
version was first and last seen is SET on its shard (the first if absent, the last as the
batch's newest run ended): shards merge to the earliest first and latest last.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ....domain import stats
from ....domain.models import RunDelta
from ....domain.versions import VersionStats, newest_first, runs_by_version
from .keys import AgentKeys, expiring
from .values import Update, number

VER = "VER#"


def version_key(agent: AgentKeys, version: str, shard: int) -> dict[str, Any]:
    return agent.key(f"{VER}{version}#{shard}")


def version_run_updates(agent: AgentKeys, runs: list[RunDelta], shard: int) -> list[Update]:
    """What a batch's finished runs add to their versions (one update per version)."""
    updates = []
    for version, added in runs_by_version(runs).items():
        update = Update(version_key(agent, version, shard), add={
            "runs": added.runs, "successes": added.successes,
            "cost_usd_total": number(added.cost_usd_total),
            "evidence_cost_usd_total": number(added.evidence_cost_usd_total),
            **{f"h{i}": n for i, n in enumerate(added.latency_hist) if n}})
        if added.first_run_at and added.last_run_at:
            update.set_if_absent["first_run_at"] = added.first_run_at
            update.set["last_run_at"] = added.last_run_at
        updates.append(expiring(update, agent))
    return updates


def version_eval_updates(agent: AgentKeys, scored: dict[str, tuple[int, float]], shard: int
                         ) -> list[Update]:
    """What an eval round's score changes add to their runs' versions: version → (count, sum)."""
    return [expiring(Update(version_key(agent, version, shard), add={
        "eval_count": count, "eval_score_sum": number(score_sum)}), agent)
        for version, (count, score_sum) in scored.items() if count or score_sum]


def versions_from_items(items: Iterable[dict[str, Any]]) -> list[VersionStats]:
    """Each version's shards added up, the newest version first."""
    versions: dict[str, VersionStats] = {}
    for item in items:
        name = item["sk"][len(VER):].rpartition("#")[0]
        versions.setdefault(name, VersionStats(name)).add(VersionStats(
            version=name, runs=int(item.get("runs", 0)), successes=int(item.get("successes", 0)),
            cost_usd_total=float(item.get("cost_usd_total", Decimal(0))),
            evidence_cost_usd_total=float(item.get("evidence_cost_usd_total", Decimal(0))),
            latency_hist=[int(item.get(f"h{i}", 0)) for i in range(stats.BUCKETS)],
            eval_count=int(item.get("eval_count", 0)),
            eval_score_sum=float(item.get("eval_score_sum", Decimal(0))),
            first_run_at=item.get("first_run_at"), last_run_at=item.get("last_run_at")))
    return newest_first(versions.values())
