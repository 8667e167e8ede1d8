"""DynamoDB items and writes of evaluations, judge spend and failure clusters (the meaning is
`bench_core.domain.eval_records`; SQLite's adapter applies the same rules in one SQL transaction).

Items (pk, sk; `AGENT` is `{login}#{slug}`):

- the result:       on the task item: `eval` (JSON), `eval_status`, `eval_score`, `eval_version`
- judge spend/day:  AGENT#{AGENT}, JDAY#{yyyy-mm-dd}#{n}  tokens, cost_usd (one of
                    `codec.agents.DAY_SHARDS`, picked per write, summed on read; a day written
                    before the shards is JDAY#{yyyy-mm-dd}, read with them)
- low-scored run:   AGENT#{AGENT}, LOW#{sort_ts}#{task_id}  (cluster material besides failures)
- insights:         AGENT#{AGENT}, INSIGHTS                body (JSON)
- pending evals:    EVALQ#{shard}, {AGENT}#{name}          login, slug, task_ids, marked_at (+TTL)
                    one item for the runs queued together (`pending_key`)
- agent due:        CLUSTERQ#{shard}, {AGENT}              login, slug, due_at

Work queues are spread over `SHARDS` partitions so that no single partition takes every
ingest's writes; a sweep reads them all (they hold only what is waiting, so they stay small).

The results of runs queued together are one transaction (`record_evals`): each task guarded
by the `eval_version` it was read at (so two concurrent results cannot both subtract the same
old score), ONE ADD of all their deltas (and their judges, a set) to one of the agent's counter
shards (`codec.agents`: never `META`), the day's spend (ADD), the queue's marker (deleted) and
the due and low-score markers. What a run costs to judge is then mostly its own task's write
(`tests/perf/dynamodb_cost.py` counts it).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain import eval_records as evals
from ...domain.field_limits import dumps
from ...domain.models import AgentRef, EvalResult, TaskState, iso
from ...domain.sessions import IdleSession
from ...domain.timeseries import Bucket, BucketKey, eval_buckets
from .client import MAX_ATTEMPTS, ConditionFailed, Table, pause
from .codec.agents import DAY_SHARDS, JUDGES, counter_key, pick_shard
from .codec.keys import META, TASK, AgentKeys, expiring, expiry, temporary
from .codec.sessions import (
    QUEUE_INDEX,
    QUEUE_PK,
    QUEUE_SHARDS,
    SESSIONQ,
    idle_from_item,
    requeue_update,
    verdict_update,
)
from .codec.tasks import eval_text, task_from_item
from .codec.values import Update, number, set_or_remove, to_item, ttl
from .codec.versions import version_eval_updates
from .content import ContentReader
from .ingest import MAX_TRANSACTION_ITEMS
from .leaderboard import DynamoLeaderboard, read_agent
from .rehome import at_home
from .timeseries import series_updates

SHARDS = 8
JDAY = "JDAY#"
LOW = "LOW#"
INSIGHTS = "INSIGHTS"
CHUNK = 40
"""Results per transaction: a task, perhaps a low-score marker each, and a few items for the
agent, within DynamoDB's 100 items."""
PENDING_KEEP = timedelta(days=3)
"""A pending marker outlives the sweep window, then DynamoDB's TTL removes it for free."""


def _shard(kind: str, key: str) -> str:
    return f"{kind}#{int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % SHARDS}"


def pending_key(agent: AgentKeys, task_ids: list[str]) -> dict[str, Any]:
    """The marker of runs queued together: named by the run for one (as markers were before
    runs were queued together), else by a digest of the set."""
    ids = sorted(set(task_ids))
    name = ids[0] if len(ids) == 1 else "*" + hashlib.sha256("\0".join(ids).encode()).hexdigest()[:24]
    sk = f"{agent.name}#{name}"
    return to_item({"pk": _shard("EVALQ", sk), "sk": sk})


def due_key(agent: AgentKeys) -> dict[str, Any]:
    return to_item({"pk": _shard("CLUSTERQ", agent.name), "sk": agent.name})


def insights_from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    return json.loads(item["body"]) if item else None


class DynamoEvals:
    """Evaluation results, judge spend, failure clusters and their work queues, on `table`;
    `ranks` re-ranks an agent whose average score moved."""

    def __init__(self, table: Table, ranks: DynamoLeaderboard, content: ContentReader) -> None:
        self.table = table
        self.ranks = ranks
        self.content = content

    # ---- results -----------------------------------------------------------------------------

    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        return task_id in self.record_evals(ref, {task_id: result})

    def record_evals(self, ref: AgentRef, results: Mapping[str, EvalResult], *,
                     read: Mapping[str, TaskState] | None = None,
                     queued: Sequence[str] = ()) -> set[str]:
        """A transaction per `CHUNK` results, over their tasks (each guarded by the
        `eval_version` it was read at, so two results never both take out the same old
        score), the agent (one ADD of their deltas) and the markers; the tasks in `read` are
        not read again, the others with one BatchGetItem. A cancelled chunk is read again and
        retried; the queued runs' marker goes with the last chunk."""
        agent = AgentKeys(ref.login, ref.slug)
        known = {task_id: task for task_id, task in (read or {}).items() if task_id in results}
        recorded: set[str] = set()
        rescored: tuple[dict[str, Any], list[dict[str, Any]]] | None = None
        chunks = [list(results)[i:i + CHUNK] for i in range(0, len(results), CHUNK)] or [[]]
        for n, chunk in enumerate(chunks):
            last = n == len(chunks) - 1
            for attempt in range(MAX_ATTEMPTS):
                if attempt:
                    pause(attempt - 1)
                missing = [task_id for task_id in chunk if task_id not in known]
                known |= {task.task_id: task for task in map(task_from_item, at_home(
                    self.table, self.table.batch_get([agent.key(TASK + t) for t in missing])))}
                # the agent (its expiry) with its counter shards, to rank it after: a moment
                # old is as good, until a retry
                owner, shards = read_agent(self.table, agent, consistent=attempt > 0)
                if owner is None:
                    return recorded
                writes = [(known[task_id], results[task_id]) for task_id in chunk
                          if task_id in known and known[task_id].ended_at
                          and evals.replaces(results[task_id], known[task_id].eval)]
                actions, added, due = self._result_actions(temporary(agent, owner), writes)
                if len(actions) >= MAX_TRANSACTION_ITEMS and len(chunk) > 1:
                    # runs far apart in time add to many buckets: half now, half next
                    chunks.insert(n + 1, chunk[len(chunk) // 2:])
                    del chunk[len(chunk) // 2:]
                    last = False
                    continue
                if last and queued:
                    actions.append({"Delete": {"TableName": self.table.name,
                                               "Key": pending_key(agent, list(queued))}})
                try:
                    if actions:
                        self.table.transact(actions)
                except self.table.client.exceptions.TransactionCanceledException:
                    for task_id in chunk:  # a task or the agent's judge label moved
                        known.pop(task_id, None)
                    continue
                if due is not None:
                    self.table.update(due)
                recorded |= {task.task_id for task, _ in writes}
                if any(_scored(result) or _scored(task.eval) for task, result in writes):
                    rescored = (owner, [*shards, added])
                break
            else:
                raise RuntimeError(f"could not record evals of {ref.path}: too much contention")
        if rescored:
            self.ranks.refresh_if_due(ref, *rescored)
        return recorded

    def _result_actions(self, agent: AgentKeys, writes: list[tuple[TaskState, EvalResult]]
                        ) -> tuple[list[dict[str, Any]], dict[str, Any], Update | None]:
        """The transaction of `writes` (each result on its task as read): the tasks, the
        agent's counters and judges (on one of its counter shards, `codec.agents`: no
        condition, so no conflict with a batch's or another eval's), the days' judge spend (a
        day shard) and the low-score markers; what it adds to the counter shard; and the
        agent's due mark for its failure clusters, written after the transaction: one item per
        agent, which every eval of a failing agent would otherwise put in a transaction (a
        mark lost to a crash in between waits for the agent's next failure)."""
        updates: list[Update] = []
        total: dict[str, float] = {}
        spend: dict[str, dict[str, float]] = {}
        judges: set[str] = set()
        by_version: dict[str, tuple[int, float]] = {}
        series: dict[BucketKey, Bucket] = {}
        markers: list[dict[str, Any]] = []
        due_at = ""
        for task, result in writes:
            is_run = task.parent_task_id is None
            updates.append(self._on_task(agent, task, result))
            delta = evals.eval_delta(result, task.eval, is_run=is_run)
            for name, value in vars(delta).items():
                if value and not name.startswith("judge_"):
                    total[name] = total.get(name, 0) + value
            if delta.judge_tokens or delta.judge_cost_usd:
                day = spend.setdefault(result.at[:10], {"tokens": 0, "cost_usd": 0.0})
                day["tokens"] += delta.judge_tokens
                day["cost_usd"] += delta.judge_cost_usd
                total["judge_tokens"] = total.get("judge_tokens", 0) + delta.judge_tokens
                total["judge_cost_usd"] = total.get("judge_cost_usd", 0) + delta.judge_cost_usd
            if is_run and task.agent_version is not None:
                count, score_sum = by_version.get(task.agent_version, (0, 0.0))
                by_version[task.agent_version] = (count + delta.eval_count,
                                                  score_sum + delta.eval_score_sum)
            for key, bucket in eval_buckets(task, delta.eval_count, delta.eval_score_sum).items():
                series.setdefault(key, Bucket()).add(bucket)
            if is_run:
                if result.status == "scored" and result.judge:
                    judges.add(result.judge)
                markers += self._low_marker(agent, task, result)
                if evals.makes_cluster_due(task.status, result):
                    due_at = max(due_at, result.at)
        if not updates:
            return [], {}, None
        shard = pick_shard()
        on_agent = expiring(Update(counter_key(agent, shard),
                                   add={k: v for k, v in total.items() if v}), agent)
        if judges:
            on_agent.add[JUDGES] = judges
        if on_agent.add:
            updates.append(on_agent)
        updates += version_eval_updates(agent, by_version, shard)
        updates += series_updates(agent, series, shard)
        updates += [expiring(Update(agent.key(f"{JDAY}{day}#{pick_shard() % DAY_SHARDS}"), add={
            "tokens": int(spent["tokens"]), "cost_usd": number(spent["cost_usd"])}), agent)
            for day, spent in spend.items()]
        due = (expiring(Update(due_key(agent), set={
            "login": agent.login, "slug": agent.slug, "due_at": due_at}), agent)
            if due_at else None)
        return ([*(self.table.update_action(u) for u in updates), *markers], dict(on_agent.add),
                due)

    @staticmethod
    def _on_task(agent: AgentKeys, task: TaskState, result: EvalResult) -> Update:
        version = task.eval_version
        on_task = Update(agent.key(TASK + task.task_id),
                         set={"eval": eval_text(result), "eval_status": result.status},
                         add={"eval_version": 1},
                         condition=("#eval_version = :seen" if version else
                                    "attribute_exists(#pk) AND "
                                    "attribute_not_exists(#eval_version)"),
                         condition_values={":seen": version} if version else {})
        set_or_remove(on_task, {"eval_score": result.score})
        return on_task

    def _low_marker(self, agent: AgentKeys, task: TaskState,
                    result: EvalResult) -> list[dict[str, Any]]:
        """A low-scored run is cluster material (`LOW#`); one that was and is no more is
        taken out. Nothing is written for the rest (a Delete of nothing is still a write)."""
        key = agent.key(f"{LOW}{task.sort_ts}#{task.task_id}")
        if _low(result):
            return [{"Put": {"TableName": self.table.name, "Item": {
                **key, **to_item({"task_id": task.task_id, **expiry(agent)})}}}]
        if task.eval is not None and _low(task.eval):
            return [{"Delete": {"TableName": self.table.name, "Key": key}}]
        return []

    def judge_spend(self, ref: AgentRef, day: str) -> float:
        """The day's shards, one Query, eventually consistent: the budget allows the slack of
        the judgements in flight anyway (`domain.judge_budget`), and a second more is nothing
        to it."""
        params = self.table.query_params(AgentKeys(ref.login, ref.slug).pk,
                                         "begins_with(#sk, :day)", day=JDAY + day)
        params["ConsistentRead"] = False
        return sum(float(item.get("cost_usd", 0)) for page in self.table.answers(params)
                   for item in page["Items"])

    # ---- session verdicts -----------------------------------------------------------------

    def idle_sessions(self, before: str, limit: int) -> list[IdleSession]:
        """A Query of each queue partition (`codec.sessions`: `SESSIONQ#{n}` in the KEYS_ONLY
        `tasks` index), oldest key first, a page of at most `limit` each, and one
        BatchGetItem of those items for their `last_at`, eventually consistent: for 50
        sessions, some 8 RRU of keys and 25 of items, whatever the table holds. The sessions
        whose last run ended since `before` are keyed again by it (a write each, at most a
        page's), the others returned oldest first."""
        keys: list[dict[str, Any]] = []
        for shard in range(QUEUE_SHARDS):
            params = self.table.query_params(f"{SESSIONQ}{shard}", "#sk < :before",
                                             index=QUEUE_INDEX, before=before)
            params["Limit"] = limit
            keys += ({"pk": item["pk"], "sk": item["sk"]}
                     for item in itertools.islice(self.table.pages(params), limit))
        due: list[dict[str, Any]] = []
        for item in self.table.batch_get([to_item(k) for k in keys], consistent=False):
            if QUEUE_PK not in item:  # judged since the index was read
                continue
            if item["last_at"] < before:
                due.append(item)
            else:
                with contextlib.suppress(ConditionFailed):  # judged meanwhile
                    self.table.update(requeue_update(item))
        due.sort(key=lambda item: item["last_at"])
        return [idle_from_item(item) for item in due[:limit]]

    def record_session_eval(self, ref: AgentRef, session_id: str, result: EvalResult,
                            judged_through: str) -> bool:
        """The verdict, off the queue while no run ended since (else kept on it, due again),
        then the day's judge spend (ADD, one of its shards)."""
        agent = AgentKeys(ref.login, ref.slug)
        try:
            try:
                self.table.update(verdict_update(agent, session_id, result, judged_through,
                                                 leave_queue=True))
            except ConditionFailed:
                self.table.update(verdict_update(agent, session_id, result, judged_through,
                                                 leave_queue=False))
        except ConditionFailed:
            return False
        tokens = result.input_tokens + result.output_tokens
        if tokens or result.cost_usd:
            self.table.update(expiring(Update(
                agent.key(f"{JDAY}{result.at[:10]}#{pick_shard() % DAY_SHARDS}"),
                add={"tokens": tokens, "cost_usd": number(result.cost_usd)}), agent))
        return True

    # ---- pending evals -----------------------------------------------------------------------

    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """One small item for the runs queued together; marking them again keeps its first
        time (the sweep window counts from it, so a run that can never be judged is given
        up)."""
        if not task_ids:
            return
        agent = AgentKeys(ref.login, ref.slug)
        expires = iso(datetime.fromisoformat(when.replace("Z", "+00:00")) + PENDING_KEEP)
        self.table.update(Update(pending_key(agent, task_ids),
                                 set={"login": ref.login, "slug": ref.slug,
                                      "task_ids": sorted(task_ids), **ttl(expires)},
                                 set_if_absent={"marked_at": when}))

    def pending_evals(self, since: str, before: str, limit: int
                      ) -> list[tuple[AgentRef, list[str]]]:
        """Each marker whose runs are not all judged, with all its runs (so that starting them
        again marks the same item and keeps its time; the judged ones are found so)."""
        marks = [item for shard in range(SHARDS) for item in self.table.query(f"EVALQ#{shard}")
                 if since <= item.get("marked_at", "") < before]
        marks.sort(key=lambda item: item["marked_at"])
        groups: list[tuple[AgentRef, list[str]]] = []
        taken = 0
        for item in marks:
            # a marker of one run written before runs were queued together names it alone
            task_ids = list(item.get("task_ids") or [item["task_id"]])
            if groups and taken + len(task_ids) > limit:
                break
            ref = AgentRef(item["login"], item["slug"])
            if self._unjudged(ref, task_ids):
                groups.append((ref, task_ids))
                taken += len(task_ids)
        return groups

    def _unjudged(self, ref: AgentRef, task_ids: list[str]) -> bool:
        """Whether any of these runs still has no result (an eventually consistent read: a
        result a moment old may be missed, and the run is judged "already" once more)."""
        agent = AgentKeys(ref.login, ref.slug)
        items = self.table.batch_get([agent.key(TASK + task_id) for task_id in task_ids],
                                     consistent=False)
        return any(not item.get("eval_status") for item in items)

    # ---- failure clusters --------------------------------------------------------------------

    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        agent = AgentKeys(ref.login, ref.slug)
        failed = self.table.query(agent.status_pk(None, "failed"), "#sk >= :low",
                                  index="tstatus", forward=False, page=limit, low="0")
        keys = [agent.key(item["sk"]) for item in itertools.islice(failed, limit)]
        lows = itertools.islice(self.table.query(agent.pk, "begins_with(#sk, :low)",
                                                 forward=False, page=limit, low=LOW), limit)
        keys += [agent.key(TASK + item["task_id"]) for item in lows]
        unique = list({key["sk"]["S"]: key for key in keys}.values())  # failed and low alike
        items = self.table.get_all(unique, consistent=False)
        tasks = {t.task_id: t for t in self.content.with_content(agent, items)}
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


def _low(result: EvalResult) -> bool:
    return result.status == "scored" and (result.score or 0.0) < evals.LOW_SCORE


def _scored(result: EvalResult | None) -> bool:
    return result is not None and result.status == "scored"
