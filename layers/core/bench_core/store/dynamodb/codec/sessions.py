"""Sessions on DynamoDB (`domain.sessions`), under the agent's own key AGENT#{A}:

- SESSION#{session}#: the session's counters, ADDed to in the transaction that finishes its runs
  (exactly once, as the agent's counters are), with when it began and last ended, and its
  user; its `gsi1` entry (`SESSIONS#{A}`, `{first_at}#{session}`) lists the agent's sessions
  newest first in one Query, a page at a time.
- SESSION#{session}#{started_at}#{recorded}#{run}: the runs of the session one batch
  finished, in the order `sessions.turn_order` says, keyed by the first of them (`TURNS`,
  compact JSON; a batch's turns of one session nearly always fit one item, and 5 turns fit
  one write unit), put before the transaction that finishes the runs, as the event pages are
  (`ingest.write_pages`): one write unit, not two, and never lost, since a transaction that
  fails leaves its events to be sent again, which put the same items again (the same runs
  make the same items; sent again otherwise cut, a run may be on two items, and is read
  once). A session's page may list a run a moment before its counters count it. The
  counters' key is the prefix of its runs', so it sorts first: a session with its runs, in
  the order they started, is one Query of `begins_with(sk, "SESSION#{session}#")`, with no
  task item read. An item's runs all come at or after its key, so the first `limit` runs
  are known once `limit` of those read come before the next item's key. Older code wrote
  one item per run, its fields as attributes: read as such (`session_runs_from_item`).

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
Each session a batch finishes runs of puts one item of them (1 WRU a KB, where each run
cost 1 WRU when each had its own) and updates its counters in the transaction (2 WRU) and
their `gsi1` entry (1); a run without a session writes neither
(`tests/perf/dynamodb_cost.py --sessions`).
"""

from __future__ import annotations

import hashlib
import json
import os
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
TURNS = "turns"
"""A session-run item's runs, as compact JSON: each `[run_id, name, success (1/0), started_at,
recorded (after `RECORDED`), ended_at, duration_ms, cost_usd, evidence_cost_usd, tokens]`."""
RECORDED = "recorded"
"""What the `recorded` of an item's runs begin with (one batch's runs: its times), kept once;
each run keeps the rest."""
TURNS_BYTES = 16_000
"""Past this much JSON a batch's runs of one session go on a further item (far below 400 KB:
a Query reads whole items)."""
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


def turn_key(run: RunDelta) -> str:
    """Where a run comes in its session (`sessions.turn_order`), as its sort key's tail."""
    return f"{run.started_at}#{run.recorded}#{run.run_id}"


def session_run_items(agent: AgentKeys, runs: list[RunDelta]) -> list[dict[str, Any]]:
    """The items listing a batch's finished runs in their sessions: a session's runs of the
    batch on one item (more only past `TURNS_BYTES`), keyed by the first of them in turn
    order and holding them in that order (`TURNS`). The same runs make the same items, so a
    batch sent again puts the same items again."""
    by_session: dict[str, list[RunDelta]] = {}
    for run in sorted(runs, key=turn_key):
        if run.session_id is not None:
            by_session.setdefault(run.session_id, []).append(run)
    items = []
    for session_id, turns in by_session.items():
        for packed in _packed(turns):
            shared = os.path.commonprefix([run.recorded for run in packed])
            items.append({**agent.key(session_prefix(session_id) + turn_key(packed[0])),
                          **to_item({TURNS: _compact(packed, shared), RECORDED: shared,
                                     **expiry(agent)})})
    return items


def _turn(run: RunDelta, shared: str) -> list[Any]:
    """A run as a turn of its session, in the order `TURNS` names."""
    return [run.run_id, run.name, 1 if run.success else 0, run.started_at,
            run.recorded[len(shared):],
            run.ended_at, run.duration_ms, float(number(run.cost_usd)),
            float(number(run.evidence_cost_usd)), run.tokens]


def _compact(runs: list[RunDelta], shared: str = "") -> str:
    return json.dumps([_turn(run, shared) for run in runs], separators=(",", ":"))


def _packed(runs: list[RunDelta]) -> list[list[RunDelta]]:
    """`runs` in order, cut where an item would pass `TURNS_BYTES`."""
    packs: list[list[RunDelta]] = [[]]
    size = 1  # the list's brackets, and a comma or bracket per turn
    for run in runs:
        grown = size + len(_compact([run]).encode()) - 1
        if packs[-1] and grown > TURNS_BYTES:
            packs.append([])
            grown -= size - 1
        packs[-1].append(run)
        size = grown
    return packs


def session_runs_from_item(item: dict[str, Any], head: str) -> list[tuple[str, SessionRun]]:
    """The runs an item under the session's prefix `head` lists, each with where it comes in
    the session (its sort key's tail): several (`TURNS`), or, as older code wrote it, one."""
    if TURNS not in item:
        return [(item["sk"][len(head):], _one_run(item))]
    shared = item.get(RECORDED, "")
    return [(f"{started}#{shared}{recorded}#{run_id}",
             SessionRun(run_id=run_id, name=name, status="success" if success else "failed",
                        started_at=started, ended_at=ended or None,
                        duration_ms=None if duration is None else float(duration),
                        cost_usd=float(cost), evidence_cost_usd=float(evidence),
                        tokens=int(tokens)))
            for run_id, name, success, started, recorded, ended, duration, cost, evidence, tokens
            in json.loads(item[TURNS])]


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


def _one_run(item: dict[str, Any]) -> SessionRun:
    """A session-run item as older code wrote it: one run, its fields as attributes."""
    duration = item.get("duration_ms")
    return SessionRun(
        run_id=item["run_id"], name=item.get("name"), status=item["status"],
        started_at=item["started_at"], ended_at=item.get("ended_at"),
        duration_ms=float(duration) if duration is not None else None,
        cost_usd=float(item.get("cost_usd", Decimal(0))),
        evidence_cost_usd=float(item.get("evidence_cost_usd", Decimal(0))),
        tokens=int(item.get("tokens", 0)))
