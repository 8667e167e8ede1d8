"""Sessions on DynamoDB (`domain.sessions`), under the agent's own key AGENT#{A}:

- SESSION#{session}#: the session's counters, ADDed to in the transaction that finishes its runs
  (exactly once, as the agent's counters are), with when it began and last ended, and its
  user; its `gsi1` entry (`SESSIONS#{A}`, `{first_at}#{session}`) lists the agent's sessions
  newest first in one Query, a page at a time.
- SESSION#{session}#{started_at}#{recorded}#{run}: a finished run as its session lists it (in
  the order `sessions.turn_order` says), put before the transaction that finishes the run, as
  the event pages are (`ingest.write_pages`): one write unit, not two, and never lost, since a
  transaction that fails leaves its events to be sent again, which put the same item again. A
  session's page may list a run a moment before its counters count it. Written in the
  batch's unit. The counters' key is the prefix of its runs', so it sorts first: a session
  with its runs, in the order they started, is one Query of `begins_with(sk,
  "SESSION#{session}#")`, with no task item read.

- The sessions no verdict covers (`evals/session_judge.py`): the counters update that finds
  the item off the queue puts it on, in the KEYS_ONLY `tasks` index under partitions of its
  own (`tlpk` = `SESSIONQ#{shard}`, the shard by agent and session; `tlsk` =
  `{last_at}#{AGENT}#{session}`), and later ones leave those keys as they are: a KEYS_ONLY
  entry whose keys stay is not written again, so a session's later batches cost its queue
  nothing, and entering it one index write once per verdict. The sessions whose last run
  ended before a moment are then among those keyed before it: one Query of each of
  `QUEUE_SHARDS` partitions, oldest first, a page each (no Scan), their items read by key for
  their `last_at`; one still going is keyed again by its last run, back in line. Its verdict
  removes the keys while no run ended since, and a later run puts them back.

A session id never holds '#' (`field_limits.SESSION_RULE`), so one session's prefix is no other's.
Each finished run in a session puts its item (1 WRU), and each session a batch finishes runs of
updates its counters in the transaction (2 WRU) and their `gsi1` entry (1); a run without a
session writes neither
(`tests/perf/dynamodb_cost.py --sessions`).
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from ....domain.models import AgentRef, EvalResult, RunDelta
from ....domain.sessions import IdleSession, SessionRun, SessionStats, runs_by_session
from .keys import AgentKeys, expiring, expiry
from .values import Update, number, to_item

SESSION = "SESSION#"
SESSIONQ = "SESSIONQ#"
QUEUE_SHARDS = 8
"""Partitions the sessions awaiting a verdict are spread over (by agent and session)."""
QUEUE_INDEX, QUEUE_PK, QUEUE_SK = "tasks", "tlpk", "tlsk"
"""Where they wait: a KEYS_ONLY index (`table.py`), whose entry no counters update rewrites."""


def queue_pk(agent: AgentKeys, session_id: str) -> str:
    digest = hashlib.sha256(f"{agent.name}#{session_id}".encode()).hexdigest()
    return f"{SESSIONQ}{int(digest[:8], 16) % QUEUE_SHARDS}"


def queue_sk(agent: AgentKeys, session_id: str, last_at: str) -> str:
    return f"{last_at}#{agent.name}#{session_id}"


def requeue_update(item: dict[str, Any]) -> Update:
    """A session found still going, keyed again by its last run (while it is queued)."""
    session = idle_from_item(item)
    agent = AgentKeys(session.ref.login, session.ref.slug)
    return Update(agent.key(session_prefix(session.session_id)),
                  set={QUEUE_SK: queue_sk(agent, session.session_id, session.last_at)},
                  condition=f"attribute_exists(#{QUEUE_PK})")


def sessions_pk(agent: AgentKeys) -> str:
    """The `gsi1` partition of the agent's sessions."""
    return f"SESSIONS#{agent.name}"


def session_prefix(session_id: str) -> str:
    """The sort key of a session's counters, and the prefix of its runs'."""
    return f"{SESSION}{session_id}#"


def session_updates(agent: AgentKeys, runs: list[RunDelta]) -> list[Update]:
    """What a batch's finished runs add to their sessions' counters, one update per session."""
    updates = []
    for session_id, added in runs_by_session(runs).items():
        update = Update(agent.key(session_prefix(session_id)), add={
            "runs": added.runs, "successes": added.successes,
            "cost_usd_total": number(added.cost_usd_total),
            "evidence_cost_usd_total": number(added.evidence_cost_usd_total),
            "tokens": added.tokens, "duration_ms_total": number(added.duration_ms_total)},
            set={"gsi1pk": sessions_pk(agent), "session_id": session_id})
        if added.first_at:
            update.set_if_absent["first_at"] = added.first_at
            update.set_if_absent["gsi1sk"] = f"{added.first_at}#{session_id}"
        if added.last_at:
            update.set["last_at"] = added.last_at
            update.set_if_absent[QUEUE_PK] = queue_pk(agent, session_id)
            update.set_if_absent[QUEUE_SK] = queue_sk(agent, session_id, added.last_at)
        if added.user_id:
            update.set_if_absent["user_id"] = added.user_id
        updates.append(expiring(update, agent))
    return updates


def session_run_items(agent: AgentKeys, runs: list[RunDelta]) -> list[dict[str, Any]]:
    """The item of each finished run in a session, as its session lists it."""
    return [{**agent.key(f"{session_prefix(run.session_id)}{run.started_at}#{run.recorded}#"
                         f"{run.run_id}"),
             **to_item({"run_id": run.run_id, "status": "success" if run.success else "failed",
                        "started_at": run.started_at, "ended_at": run.ended_at,
                        "cost_usd": number(run.cost_usd),
                        "evidence_cost_usd": number(run.evidence_cost_usd),
                        "tokens": run.tokens, **expiry(agent),
                        **({"name": run.name} if run.name else {}),
                        **({"duration_ms": number(run.duration_ms)}
                           if run.duration_ms is not None else {})})}
            for run in runs if run.session_id is not None]


def session_from_item(item: dict[str, Any]) -> SessionStats:
    verdict = item.get("eval")
    return SessionStats(
        session_id=item["session_id"], user_id=item.get("user_id"),
        runs=int(item.get("runs", 0)), successes=int(item.get("successes", 0)),
        cost_usd_total=float(item.get("cost_usd_total", Decimal(0))),
        evidence_cost_usd_total=float(item.get("evidence_cost_usd_total", Decimal(0))),
        tokens=int(item.get("tokens", 0)),
        duration_ms_total=float(item.get("duration_ms_total", Decimal(0))),
        first_at=item.get("first_at"), last_at=item.get("last_at"),
        eval=EvalResult.from_dict(json.loads(verdict)) if verdict else None,
        judged_through=item.get("judged_through"))


def idle_from_item(item: dict[str, Any]) -> IdleSession:
    """A queued session's item as the sweep reads it; the agent from the item's own key."""
    _, login, slug = item["pk"].split("#", 2)
    return IdleSession(AgentRef(login, slug), item["session_id"], item["last_at"])


def verdict_update(agent: AgentKeys, session_id: str, result: EvalResult, judged_through: str,
                   *, leave_queue: bool) -> Update:
    """The session's verdict; `leave_queue` also takes it off the queue, on the condition
    that no run ended since `judged_through` (else it stays due)."""
    update = Update(agent.key(session_prefix(session_id)),
                    set={"eval": json.dumps(result.to_dict()), "judged_through": judged_through},
                    condition="attribute_exists(#pk)")
    if leave_queue:
        update.remove += [QUEUE_PK, QUEUE_SK]
        update.condition = "attribute_exists(#pk) AND #last_at = :judged"
        update.condition_values = {":judged": judged_through}
    return update


def session_run_from_item(item: dict[str, Any]) -> SessionRun:
    duration = item.get("duration_ms")
    return SessionRun(
        run_id=item["run_id"], name=item.get("name"), status=item["status"],
        started_at=item["started_at"], ended_at=item.get("ended_at"),
        duration_ms=float(duration) if duration is not None else None,
        cost_usd=float(item.get("cost_usd", Decimal(0))),
        evidence_cost_usd=float(item.get("evidence_cost_usd", Decimal(0))),
        tokens=int(item.get("tokens", 0)))
