"""DynamoDB items and writes of evaluations, judge spend and failure clusters (the meaning is
`bench_core.domain.eval_records`; SQLite's adapter applies the same rules in one SQL transaction).

Items (pk, sk; `AGENT` is `{login}#{slug}`):

- the result:       on the task item: `eval` (JSON), `eval_status`, `eval_score`, `eval_version`
- judge spend/day:  AGENT#{AGENT}, JDAY#{yyyy-mm-dd}      tokens, cost_usd
- low-scored run:   AGENT#{AGENT}, LOW#{sort_ts}#{task_id}  (cluster material besides failures)
- insights:         AGENT#{AGENT}, INSIGHTS                body (JSON)
- pending eval:     EVALQ#{shard}, {AGENT}#{task_id}       login, slug, task_id, marked_at (+TTL)
- agent due:        CLUSTERQ#{shard}, {AGENT}              login, slug, due_at

Work queues are spread over `SHARDS` partitions so that no single partition takes every
ingest's writes; a sweep reads them all (they hold only what is waiting, so they stay small).

A result is one transaction over the task (guarded by the `eval_version` it was read at, so
two concurrent results cannot both subtract the same old score), the agent's counters (ADD),
the day's spend (ADD), the pending marker (deleted) and the due and low-score markers.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from ...domain import eval_records as evals
from ...domain.field_limits import dumps
from ...domain.models import AgentRef, EvalResult, TaskState, iso
from .client import MAX_ATTEMPTS, Table
from .codec.keys import META, TASK, AgentKeys, expiring, expiry, temporary
from .codec.tasks import task_from_item
from .codec.values import Update, number, set_or_remove, to_item, ttl
from .leaderboard import DynamoLeaderboard

SHARDS = 8
JDAY = "JDAY#"
LOW = "LOW#"
INSIGHTS = "INSIGHTS"
PENDING_KEEP = timedelta(days=3)
"""A pending marker outlives the sweep window, then DynamoDB's TTL removes it for free."""


def _shard(kind: str, key: str) -> str:
    return f"{kind}#{int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % SHARDS}"


def pending_key(agent: AgentKeys, task_id: str) -> dict[str, Any]:
    sk = f"{agent.name}#{task_id}"
    return to_item({"pk": _shard("EVALQ", sk), "sk": sk})


def due_key(agent: AgentKeys) -> dict[str, Any]:
    return to_item({"pk": _shard("CLUSTERQ", agent.name), "sk": agent.name})


def insights_from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    return json.loads(item["body"]) if item else None


class DynamoEvals:
    """Evaluation results, judge spend, failure clusters and their work queues, on `table`;
    `ranks` re-ranks an agent whose average score moved."""

    def __init__(self, table: Table, ranks: DynamoLeaderboard) -> None:
        self.table = table
        self.ranks = ranks

    # ---- results -----------------------------------------------------------------------------

    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        agent = AgentKeys(ref.login, ref.slug)
        for _ in range(MAX_ATTEMPTS):
            task = self.table.get(agent.key(TASK + task_id))
            if task is None:
                return False
            state = task_from_item(task)
            if not state.ended_at:
                return False
            old = state.eval
            if not evals.replaces(result, old):
                return False
            is_run = state.parent_task_id is None
            owner = self.table.get(agent.key(META)) if is_run else None
            delta = evals.eval_delta(result, old, is_run=is_run)
            try:
                self.table.transact(self._result_actions(temporary(agent, owner), task,
                                                         owner, delta, result))
            except self.table.client.exceptions.TransactionCanceledException:
                continue  # the task or the agent's judge label moved: read again
            if delta.eval_count or delta.eval_score_sum:
                self.ranks.refresh(ref)
            return True
        raise RuntimeError(f"could not record the eval of {ref.path}/{task_id}: too much contention")

    def _result_actions(self, agent: AgentKeys, task: dict[str, Any], owner: dict[str, Any] | None,
                        delta: evals.EvalDelta, result: EvalResult) -> list[dict[str, Any]]:
        """`owner` is the agent item as read, for a run (None for a subtask)."""
        version = int(task.get("eval_version", 0))
        on_task = Update(agent.key(TASK + task["sk"][len(TASK):]),
                         set={"eval": dumps(result.to_dict()), "eval_status": result.status},
                         add={"eval_version": 1},
                         condition=("#eval_version = :seen" if version else
                                    "attribute_not_exists(#eval_version)"),
                         condition_values={":seen": version} if version else {})
        set_or_remove(on_task, {"eval_score": result.score})
        updates = [on_task]
        counters = {k: v for k, v in vars(delta).items() if v}
        if owner is not None:
            judge = evals.merged_judge(owner.get("eval_judge"), result)
            on_agent = Update(agent.key(META), add=counters)
            if judge != owner.get("eval_judge"):
                on_agent.set["eval_judge"] = judge
                on_agent.condition = ("#eval_judge = :was" if owner.get("eval_judge") else
                                      "attribute_not_exists(#eval_judge)")
                on_agent.condition_values = ({":was": owner["eval_judge"]}
                                             if owner.get("eval_judge") else {})
            if on_agent.add or on_agent.set:
                updates.append(on_agent)
        elif counters:
            updates.append(Update(agent.key(META), add=counters))
        if delta.judge_tokens or delta.judge_cost_usd:
            updates.append(expiring(Update(agent.key(JDAY + result.at[:10]), add={
                "tokens": delta.judge_tokens, "cost_usd": number(delta.judge_cost_usd)}),
                agent))
        actions = [self.table.update_action(u) for u in updates]
        if owner is not None:
            actions += self._marker_actions(agent, task, result)
        return actions

    def _marker_actions(self, agent: AgentKeys, task: dict[str, Any],
                        result: EvalResult) -> list[dict[str, Any]]:
        """The run is no longer pending; it is cluster material if low-scored; its agent is
        due for clustering if it failed or scored low."""
        state = task_from_item(task)
        task_id = state.task_id
        low_key = agent.key(f"{LOW}{state.sort_ts}#{task_id}")
        actions: list[dict[str, Any]] = [
            {"Delete": {"TableName": self.table.name, "Key": pending_key(agent, task_id)}}]
        if result.status == "scored" and (result.score or 0.0) < evals.LOW_SCORE:
            actions.append({"Put": {"TableName": self.table.name, "Item": {
                **low_key, **to_item({"task_id": task_id, **expiry(agent)})}}})
        else:
            actions.append({"Delete": {"TableName": self.table.name, "Key": low_key}})
        if evals.makes_cluster_due(state.status, result):
            actions.append({"Update": expiring(Update(due_key(agent), set={
                "login": agent.login, "slug": agent.slug, "due_at": result.at}), agent
            ).params(self.table.name)})
        return actions

    def judge_spend(self, ref: AgentRef, day: str) -> float:
        item = self.table.get(AgentKeys(ref.login, ref.slug).key(JDAY + day))
        return float(item.get("cost_usd", 0)) if item else 0.0

    # ---- pending evals -----------------------------------------------------------------------

    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """One small write per run, in parallel; a run marked before keeps its first time (the
        sweep window counts from it, so a run that can never be judged is given up)."""
        agent = AgentKeys(ref.login, ref.slug)
        expires = iso(datetime.fromisoformat(when.replace("Z", "+00:00")) + PENDING_KEEP)

        def mark(task_id: str) -> None:
            self.table.update(Update(pending_key(agent, task_id),
                                     set={"login": ref.login, "slug": ref.slug,
                                          "task_id": task_id, **ttl(expires)},
                                     set_if_absent={"marked_at": when}))

        if task_ids:
            with ThreadPoolExecutor(max_workers=min(8, len(task_ids))) as pool:
                list(pool.map(mark, task_ids))

    def pending_evals(self, since: str, before: str, limit: int) -> list[tuple[AgentRef, str]]:
        marks = [item for shard in range(SHARDS) for item in self.table.query(f"EVALQ#{shard}")
                 if since <= item.get("marked_at", "") < before]
        marks.sort(key=lambda item: item["marked_at"])
        return [(AgentRef(item["login"], item["slug"]), item["task_id"]) for item in marks[:limit]]

    # ---- failure clusters --------------------------------------------------------------------

    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        agent = AgentKeys(ref.login, ref.slug)
        failed = self.table.query(agent.status_pk(None, "failed"), "#sk >= :low",
                                  index="tstatus", forward=False, page=limit, low="0")
        keys = [agent.key(item["sk"]) for item in itertools.islice(failed, limit)]
        tasks = {t.task_id: t for t in map(task_from_item,
                                           self.table.get_all(keys, consistent=False))}
        lows = itertools.islice(self.table.query(agent.pk, "begins_with(#sk, :low)",
                                                 forward=False, page=limit, low=LOW), limit)
        for item in lows:
            task = self.table.get(agent.key(TASK + item["task_id"]))
            if task is not None:
                tasks.setdefault(item["task_id"], task_from_item(task))
        newest = sorted(tasks.values(), key=lambda t: (t.sort_ts, t.task_id), reverse=True)
        return newest[:limit]

    def save_insights(self, ref: AgentRef, insights: dict[str, Any]) -> None:
        agent = AgentKeys(ref.login, ref.slug)
        owner = self.table.get(agent.key(META))
        if owner is None:
            return
        self.table.put({**agent.key(INSIGHTS), **to_item({
            "body": dumps(insights), **expiry(temporary(agent, owner))})})
        # A failure recorded while clustering (due_at after computed_at) keeps the agent due.
        self.table.delete(due_key(agent), "due_at <= :computed",
                          {":computed": insights["computed_at"]})

    def get_insights(self, ref: AgentRef) -> dict[str, Any] | None:
        return insights_from_item(self.table.get(AgentKeys(ref.login, ref.slug).key(INSIGHTS)))

    def clusters_due(self, limit: int) -> list[AgentRef]:
        due = [item for shard in range(SHARDS) for item in self.table.query(f"CLUSTERQ#{shard}")]
        due.sort(key=lambda item: item["due_at"])
        return [AgentRef(item["login"], item["slug"]) for item in due[:limit]]
