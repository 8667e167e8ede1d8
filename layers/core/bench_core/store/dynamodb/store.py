"""The DynamoDB adapter: one table (`dynamodb_table.py`), the same meaning as `sqlite.py`.

Key design (single table; `A` below is `{login}#{slug}`), item: pk, sk [gsi1pk, gsi1sk]
[gsi2pk, gsi2sk]:

- user:             USER#{login}, META
- API key:          KEY#{sha256}, META  [KEYS, {login}#{created_at}#{hash}]
- agent + counters: AGENT#{A}, META  [OWNER#{login}, AGENT#{slug}]
- day counters:     AGENT#{A}, DAY#{yyyy-mm-dd}
- task:             AGENT#{A}, TASK#{task_id}  [TASKS#{A}#{L}, {sort_ts}#{task_id}]
                    [TSTATUS#{A}#{L}#{status}, {sort_ts}#{task_id}]
                    where `L` is ROOT for a root task, else P#{parent_task_id}
- event (dedupe):   AGENT#{A}, EV#{event_id}  [EVENTS#{A}, {ts}#{event_id}]
                    [TASKEV#{A}#{task_id}, {ts}#{event_id}]

The agent item holds the counters (`runs`, `successes`, `failures`, `cost_usd_total`,
`dropped_events`) and the latency histogram as one number per bucket (`h0`..`h89`), all changed
only by atomic `ADD`, so concurrent batches never lose an update. A parent known only from its
subtasks is a placeholder task item without index keys (listings skip it, `get_task` too).

How a batch is made atomic without SQLite's lock:
- Events already stored are found first (one consistent BatchGetItem) and counted as duplicates.
- The rest is written in as few TransactWriteItems as fit (100 items, 4 MB; normally one per
  batch): each event as a Put conditional on `attribute_not_exists(pk)`, each folded task as an
  Update conditional on the `version` it was folded from, and the run counters as ADDs. A batch
  that needs several transactions splits between tasks (or within a huge task); each part folds
  on the state the previous one left, and a retried batch finds the stored parts as duplicates.
- A cancelled transaction says why, item by item: an event that is there already is a duplicate
  (sent by a concurrent sender) and is dropped; a task whose version moved is read again and
  refolded. Retries are few and jittered; past them the caller gets 429 and resends safely.
- `first_event_at`/`last_event_at` are moved only outward, by conditional SETs.

Reads use the base table for one item or one agent's days (strongly consistent) and the GSIs
for listings (eventually consistent, like every GSI). Nothing scans.

Evaluations, judge spend, failure clusters and their work queues: `dynamodb_evals.py`.
Benchmark runs and the suite registry: `dynamodb_benchmarks.py`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import boto3
from botocore.exceptions import ClientError

from ...domain.errors import TooManyRequests
from ...domain.field_limits import dumps
from ...domain.folding import BatchFold, fold_batch, group_by_task
from ...domain.live import LiveConnection
from ...domain.models import (
    Agent,
    AgentMeta,
    AgentRef,
    CleanEvent,
    IngestOutcome,
    KeyRecord,
    TaskState,
    add_usage,
    iso,
    utcnow,
)
from ...domain.runs import parent_ids
from ...runtime.config import Limits
from .. import SETTABLE, decode_cursor, encode_cursor
from . import accounts, codec
from .benchmarks import DynamoBenchmarks
from .codec import AgentKeys, Update
from .evals import DynamoEvals
from .leaderboard import DynamoLeaderboard
from .retention import DynamoRetention
from .reuse import DynamoReuse
from .runs import DynamoRuns

MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 3_000_000
"""Below DynamoDB's 4 MB per transaction, leaving room for keys and attribute names."""
MAX_ATTEMPTS = 8
BACKOFF_SECONDS = 0.01
_RETRYABLE = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
                        "RequestLimitExceeded"})
_LOWEST_SORT_TS = "0"
"""Every real sort_ts starts with a digit; keys below it belong to tasks seen only in logs."""


class _ConditionFailed(Exception):
    """A conditional single-item write whose condition did not hold."""


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _pause(attempt: int) -> None:
    """Full jitter: concurrent writers of one agent spread out instead of colliding again."""
    time.sleep(random.uniform(0, BACKOFF_SECONDS * 2 ** attempt))


def _busy() -> TooManyRequests:
    return TooManyRequests("too many concurrent writes to this agent; send the batch again",
                           headers={"Retry-After": "1"})


class DynamoStore(DynamoLeaderboard, DynamoEvals, DynamoReuse, DynamoBenchmarks, DynamoRetention,
                  DynamoRuns):
    def __init__(self, table_name: str, *, client: Any = None,
                 event_retention_days: int = Limits.event_retention_days) -> None:
        """`client` is a boto3 DynamoDB (low-level) client; by default one is made on first use,
        for the region in the environment. Events expire `event_retention_days` after their
        time (0: never; `dynamodb_retention`)."""
        self.table_name = table_name
        self.event_retention_days = event_retention_days
        self._client = client
        self._owns_client = client is None
        self._client_lock = threading.Lock()

    # ---- plumbing ---------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = boto3.client("dynamodb")
        return self._client

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def _get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self.client.get_item(TableName=self.table_name, Key=key,
                                    ConsistentRead=True).get("Item")
        return codec.plain(item) if item else None

    def _update(self, update: Update, returns: str = "NONE") -> dict[str, Any]:
        """One UpdateItem. A plain write to an item inside a running transaction is rejected
        (and botocore does not retry that), which happens to the agent item under load."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                response = self.client.update_item(**update.params(self.table_name),
                                                   ReturnValues=returns)
                return codec.plain(response.get("Attributes", {}))
            except ClientError as exc:
                if _code(exc) == "ConditionalCheckFailedException":
                    raise _ConditionFailed from exc
                if _code(exc) != "TransactionConflictException":
                    raise
                _pause(attempt)
        raise _busy()

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        """The token makes botocore's own retry of a committed transaction a no-op."""
        self.client.transact_write_items(TransactItems=actions,
                                         ClientRequestToken=uuid.uuid4().hex)

    def _put(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"Put": {"TableName": self.table_name, "Item": item,
                        "ConditionExpression": "attribute_not_exists(pk)"}}

    def _batch_get(self, keys: list[dict[str, Any]], *, only_keys: bool = False
                   ) -> list[dict[str, Any]]:
        """The items that exist of `keys`, strongly consistent, 100 keys per request."""
        found: list[dict[str, Any]] = []
        for i in range(0, len(keys), 100):
            request: dict[str, Any] = {"Keys": keys[i:i + 100], "ConsistentRead": True}
            if only_keys:
                request["ProjectionExpression"] = "pk, sk"
            pending = {self.table_name: request}
            for attempt in range(MAX_ATTEMPTS):
                response = self.client.batch_get_item(RequestItems=pending)
                found += map(codec.plain, response["Responses"].get(self.table_name, []))
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                _pause(attempt)
            else:
                raise _busy()
        return found

    def _query(self, pk: str, sk: str = "", *, index: str = "", forward: bool = True,
               page: int | None = None, projection: str = "", **bounds: str
               ) -> Iterator[dict[str, Any]]:
        """One partition in sort-key order, fetched page by page as the caller consumes it.
        `sk` is a key condition on `#sk` whose values are `bounds` (`:name` for `name=`)."""
        params: dict[str, Any] = {
            "TableName": self.table_name, "ScanIndexForward": forward,
            "KeyConditionExpression": "#pk = :pk" + (f" AND {sk}" if sk else ""),
            "ExpressionAttributeNames": {"#pk": f"{index}pk", **({"#sk": f"{index}sk"} if sk
                                                                 else {})},
            "ExpressionAttributeValues": codec.to_item(
                {":pk": pk, **{f":{k}": v for k, v in bounds.items()}})}
        if index:
            params["IndexName"] = index
        else:
            params["ConsistentRead"] = True
        if page:
            params["Limit"] = page
        if projection:
            params["ProjectionExpression"] = projection
        while True:
            response = self.client.query(**params)
            yield from map(codec.plain, response["Items"])
            if "LastEvaluatedKey" not in response:
                return
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    # ---- keys and users ---------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        self._transact([{"Update": codec.user_upsert(record.login, record.created_at)
                         .params(self.table_name)},
                        self._put(codec.key_item(record))])

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        item = self._get(codec.api_key_key(key_hash))
        return codec.key_from_item(item) if item else None

    def list_keys(self, login: str | None = None) -> list[KeyRecord]:
        items = (self._query("KEYS", "begins_with(#sk, :login)", index="gsi1", login=f"{login}#")
                 if login is not None else self._query("KEYS", index="gsi1"))
        return sorted(map(codec.key_from_item, items), key=lambda k: (k.created_at, k.key_hash))

    def revoke_key(self, key_hash: str, when: str) -> bool:
        try:
            self._update(Update(codec.api_key_key(key_hash), set={"revoked_at": when},
                                condition="attribute_exists(#pk) AND "
                                          "attribute_not_exists(#revoked_at)"))
        except _ConditionFailed:
            return False
        return True

    def touch_key(self, key_hash: str, when: str) -> None:
        with contextlib.suppress(_ConditionFailed):  # an unknown key stays unknown
            self._update(Update(codec.api_key_key(key_hash), set={"last_used_at": when},
                                condition="attribute_exists(#pk)"))

    # ---- users, grants, counters, live connections (dynamodb_accounts.py) -------------------

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        if github_id is None:
            self._update(codec.user_upsert(login, when))
            return True
        user = self._update(accounts.claim_update(login, github_id, when), returns="ALL_NEW")
        return int(user["github_id"]) == github_id

    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        try:
            self.client.put_item(
                TableName=self.table_name, Item=accounts.grant_item(kind, grant_id, body, expires_at),
                ConditionExpression="attribute_not_exists(pk) OR #until <= :now",
                ExpressionAttributeNames={"#until": "until"},
                ExpressionAttributeValues=codec.to_item({":now": now}))
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _live_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        item = self._get(accounts.grant_key(kind, grant_id))
        return item if item is not None and item["until"] > now else None

    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        item = self._live_grant(kind, grant_id, now)
        return json.loads(item["body"]) if item else None

    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        """Read, compare, then write guarded by the version read: a concurrent change in
        between fails the write, as SQLite's lock would have made it wait and see it."""
        item = self._live_grant(kind, grant_id, now)
        body = json.loads(item["body"]) if item else None
        if body is None or any(body.get(k) != v for k, v in expected.items()):
            return False
        update = Update(accounts.grant_key(kind, grant_id), set={"body": dumps({**body, **changes})},
                        add={"version": 1}, condition="#version = :version",
                        condition_values={":version": item["version"]})
        try:
            self._update(update)
        except _ConditionFailed:
            return False
        return True

    def delete_grant(self, kind: str, grant_id: str) -> None:
        self.client.delete_item(TableName=self.table_name, Key=accounts.grant_key(kind, grant_id))

    def count_hit(self, bucket: str, expires_at: str) -> int:
        return int(self._update(accounts.counter_hit(bucket, expires_at), returns="ALL_NEW")["count"])

    def add_connection(self, connection: LiveConnection) -> None:
        self.client.put_item(TableName=self.table_name, Item=accounts.connection_item(connection))

    def remove_connection(self, connection_id: str) -> None:
        self.client.delete_item(TableName=self.table_name,
                                Key=accounts.connection_key(connection_id))

    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        items = self._query(f"LIVE#{login}", index="gsi1")
        connections = [accounts.connection_from_item(item) for item in items if item["until"] > now]
        return sorted(connections, key=lambda c: c.connection_id)

    # ---- agents -----------------------------------------------------------------------------

    def get_agent(self, ref: AgentRef) -> Agent | None:
        """A temporary agent past its expiry is gone, even before TTL deletes it."""
        item = self._get(AgentKeys(ref.login, ref.slug).key(codec.META))
        if not item or item.get("until") is not None and item["until"] <= iso(utcnow()):
            return None
        return codec.agent_from_item(item)

    def list_agents(self, login: str) -> list[Agent]:
        items = self._query(f"OWNER#{login}", index="gsi1")
        return [codec.agent_from_item(item) for item in items]

    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
        unknown = set(changes) - SETTABLE
        if unknown:
            raise ValueError(f"not settable: {sorted(unknown)}")
        if not changes:
            return self.get_agent(ref)
        update = Update(AgentKeys(ref.login, ref.slug).key(codec.META),
                        set={k: v for k, v in changes.items() if v is not None},
                        remove=[k for k, v in changes.items() if v is None],
                        condition="attribute_exists(#pk)")
        try:
            item = self._update(update, returns="ALL_NEW")
        except _ConditionFailed:
            return None
        self._refresh_rank(ref)
        return codec.agent_from_item(item)

    def create_agent(self, agent: Agent) -> bool:
        try:
            self._transact([{"Update": codec.user_upsert(agent.login, agent.created_at,
                                                         agent.expires_at)
                             .params(self.table_name)},
                            self._put(accounts.agent_item(agent))])
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if _code(exc) == "TransactionCanceledException" and "ConditionalCheckFailed" in reasons:
                return False
            raise
        self._refresh_rank(agent.ref)
        return True

    # ---- ingest -----------------------------------------------------------------------------

    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        agent = AgentKeys(login, meta.slug)
        firsts: dict[str, CleanEvent] = {}
        for event in events:
            firsts.setdefault(event.id, event)
        stored = {item["sk"][len(codec.EVENT):] for item in self._batch_get(
            [agent.key(codec.EVENT + event_id) for event_id in firsts], only_keys=True)}
        fresh = [e for e in firsts.values() if e.id not in stored]
        now = iso(utcnow())
        dropped = dropped if fresh or not events else 0  # a replayed batch reported them already
        old = self._upsert_agent(agent, meta, dropped, [e.ts for e in fresh], now)
        if not old:
            self._update(codec.user_upsert(login, now))
        agent = codec.temporary(agent, old)
        arrival = time.time_ns()
        write = _BatchWrite(self, agent, self._load_tasks(agent, _task_ids(fresh) | parent_ids(fresh)),
                            {e.id: e.body_json or dumps(e.body) for e in fresh},
                            {e.id: arrival + i for i, e in enumerate(fresh)},
                            self.event_retention_days)
        for unit in _units(fresh, write.bodies):
            write.commit(unit)
        if write.accepted or meta.updates():
            self._refresh_rank(AgentRef(login, meta.slug))
        return IngestOutcome(accepted=len(write.accepted),
                             duplicates=len(events) - len(write.accepted),
                             finished=write.finished)

    def _upsert_agent(self, agent: AgentKeys, meta: AgentMeta, dropped: int, times: list[str],
                      now: str) -> dict[str, Any]:
        """Create or update the agent and widen its event window; the agent item as it was.

        Usually one write: a batch newer than the agent's last event moves `last_event_at`
        under a condition, and only an older batch takes the second write without it."""
        update = codec.agent_upsert(agent, meta, now, dropped)
        if not times:
            return self._update(update, returns="ALL_OLD")
        first, last = min(times), max(times)
        update.set_if_absent["first_event_at"] = first
        newer = replace(update, set={**update.set, "last_event_at": last},
                        condition="attribute_not_exists(#last_event_at) OR "
                                  "#last_event_at <= :last",
                        condition_values={":last": last})
        try:
            old = self._update(newer, returns="ALL_OLD")
        except _ConditionFailed:
            old = self._update(update, returns="ALL_OLD")
        if old.get("first_event_at") and first < old["first_event_at"]:
            with contextlib.suppress(_ConditionFailed):  # a concurrent batch went further back
                self._update(Update(agent.key(codec.META), set={"first_event_at": first},
                                    condition="#first_event_at > :first",
                                    condition_values={":first": first}))
        return old

    def _load_tasks(self, agent: AgentKeys, task_ids: Iterable[str]) -> dict[str, TaskState]:
        items = self._batch_get([agent.key(codec.TASK + task_id) for task_id in task_ids])
        states = map(codec.task_from_item, items)
        return {state.task_id: state for state in states}

    # ---- reads ------------------------------------------------------------------------------

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        """Newest first. Events of one millisecond go by arrival, so the ones tied with the
        last kept are all read before cutting at `limit`."""
        if limit <= 0:
            return []
        items = self._query(AgentKeys(ref.login, ref.slug).events_pk, index="gsi1",
                            forward=False, page=limit + 1)
        kept: list[dict[str, Any]] = []
        for item in items:
            ts = codec.event_order(item)[0]
            if len(kept) >= limit and ts != codec.event_order(kept[-1])[0]:
                break
            kept.append(item)
        kept.sort(key=codec.event_order, reverse=True)
        return [json.loads(item["body"]) for item in kept[:limit]]

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        items = self._query(AgentKeys(ref.login, ref.slug).task_events_pk(task_id), index="gsi2")
        return [json.loads(item["body"]) for item in sorted(items, key=codec.event_order)]

    def get_task(self, ref: AgentRef, task_id: str) -> TaskState | None:
        item = self._get(AgentKeys(ref.login, ref.slug).key(codec.TASK + task_id))
        task = codec.task_from_item(item) if item else None
        return task if task and task.sort_ts else None

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        agent = AgentKeys(ref.login, ref.slug)
        index, pk = (("gsi1", agent.tasks_pk(parent)) if status is None
                     else ("gsi2", agent.status_pk(parent, status)))
        if cursor:
            sort_ts, task_id = decode_cursor(cursor)
            after = codec.task_sort_key(sort_ts, task_id)
            items = self._query(pk, "#sk BETWEEN :low AND :after", index=index, forward=False,
                                page=limit + 2, low=_LOWEST_SORT_TS, after=after)
            items = (item for item in items if item[f"{index}sk"] != after)
        else:
            items = self._query(pk, "#sk >= :low", index=index, forward=False, page=limit + 1,
                                low=_LOWEST_SORT_TS)
        page = [codec.task_from_item(item) for item in itertools.islice(items, limit + 1)]
        tasks = page[:limit]
        more = len(page) > limit
        return tasks, (encode_cursor(tasks[-1].sort_ts, tasks[-1].task_id) if more else None)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        """One query per parent, run side by side: a page asks for all of its tasks at once."""
        agent = AgentKeys(ref.login, ref.slug)

        def children(parent: str) -> list[str]:
            items = self._query(agent.tasks_pk(parent), index="gsi1", projection="sk")
            return [item["sk"][len(codec.TASK):] for item in items]

        if not task_ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(8, len(task_ids))) as pool:
            return dict(zip(task_ids, pool.map(children, task_ids), strict=True))

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        items = self._query(AgentKeys(ref.login, ref.slug).pk, "#sk BETWEEN :since AND :end",
                            since=codec.DAY + since_day, end="DAY$")
        return [codec.day_from_item(item) for item in items]


# ---- the write of one batch -----------------------------------------------------------------


@dataclass
class _Plan:
    """One transaction: its events' Puts come first, so cancellation reason i < len(events)
    is about events[i]."""

    events: list[CleanEvent]
    actions: list[dict[str, Any]]
    fold: BatchFold


@dataclass
class _BatchWrite:
    """The fresh events of one batch, written unit by unit on the task states read so far.
    `bodies` holds each event's JSON; `seqs` numbers the events in batch order (see
    `codec.event_item`); they expire `retention_days` after their time (`codec.event_expiry`)."""

    store: DynamoStore
    agent: AgentKeys
    states: dict[str, TaskState]
    bodies: dict[str, str]
    seqs: dict[str, int]
    retention_days: int
    accepted: list[CleanEvent] = field(default_factory=list)
    finished: list[tuple[str, bool]] = field(default_factory=list)

    def commit(self, unit: list[CleanEvent]) -> None:
        for attempt in range(MAX_ATTEMPTS):
            plan = self._plan(unit)
            try:
                self.store._transact(plan.actions)
            except ClientError as exc:
                if _code(exc) != "TransactionCanceledException":
                    raise
                unit = self._after_cancel(exc, plan, attempt)
                if not unit:
                    return
                continue
            moves = [m for m in plan.fold.reassign
                     if (held := self.states.get(m.old)) is not None and held.run_id == m.old]
            self._applied(plan)
            self.store._move_runs(self.agent, moves)
            return
        raise _busy()

    def _plan(self, unit: list[CleanEvent]) -> _Plan:
        table, agent = self.store.table_name, self.agent
        fold = fold_batch(self.states, unit)
        updates = [codec.task_update(agent, self.states.get(task_id), task)
                   for task_id, task in fold.tasks.items()]
        updates += [codec.child_cost_update(agent, parent, fold.child_costs.get(parent, 0.0),
                                            fold.child_evidence.get(parent),
                                            run_holder=parent in fold.unknown_parents)
                    for parent in _untouched_parents(fold)]
        updates += codec.run_updates(agent, [delta for _, delta in fold.runs], fold.evidence)
        puts = [self.store._put(codec.event_item(
            agent, e, self.bodies[e.id], self.seqs[e.id],
            codec.event_expiry(agent, e.ts, self.retention_days))) for e in unit]
        return _Plan(unit, puts + [{"Update": u.params(table)} for u in updates], fold)

    def _after_cancel(self, exc: ClientError, plan: _Plan, attempt: int) -> list[CleanEvent]:
        """The unit left to write: without the events a concurrent sender stored first, and
        folded again on fresh task states if anything else got in the way."""
        reasons = [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]
        if any(code not in _RETRYABLE | {"None", "ConditionalCheckFailed"} for code in reasons):
            raise exc
        stored = {e.id for e, code in zip(plan.events, reasons, strict=False)
                  if code == "ConditionalCheckFailed"}
        unit = [e for e in plan.events if e.id not in stored]
        if unit:
            task_ids = _task_ids(unit) | parent_ids(unit)
            for task_id in task_ids:
                self.states.pop(task_id, None)
            self.states |= self.store._load_tasks(self.agent, task_ids)
            _pause(attempt)
        return unit

    def _applied(self, plan: _Plan) -> None:
        """Keep the states in step with what was just written, for the units still to come."""
        for task_id, task in plan.fold.tasks.items():
            before = self.states.get(task_id)
            self.states[task_id] = replace(task, version=(before.version if before else 0) + 1)
        fold = plan.fold
        for parent in _untouched_parents(fold):
            before = self.states.get(parent) or TaskState(task_id=parent)
            self.states[parent] = replace(
                before, child_cost_usd=before.child_cost_usd + fold.child_costs.get(parent, 0.0),
                evidence=add_usage(before.evidence, fold.child_evidence.get(parent)),
                run_id=parent if parent in fold.unknown_parents else before.run_id,
                version=before.version + 1)
        self.accepted += plan.events
        self.finished += plan.fold.finished


def _untouched_parents(fold: BatchFold) -> set[str]:
    """Parents the batch writes without folding: owed cost or evidence, or holding a run."""
    return fold.child_costs.keys() | fold.child_evidence.keys() | fold.unknown_parents


def _units(events: list[CleanEvent], bodies: dict[str, str]) -> Iterator[list[CleanEvent]]:
    """The events in transactions DynamoDB accepts: whole tasks together where they fit, one
    task's events split in order where it alone is too big. Costs are counted generously: a
    task's item can be as large as its events, and it may add a parent, a day and the agent."""
    pieces = [piece for group in group_by_task(events).values()
              for piece in _pieces(group, bodies, overhead=3)]
    pieces += _pieces([e for e in events if not _is_task_event(e)], bodies, overhead=0)
    unit: list[CleanEvent] = []
    items = size = 0
    for piece, piece_items, piece_size in pieces:
        if unit and (items + piece_items > MAX_TRANSACTION_ITEMS - 1
                     or size + piece_size > MAX_TRANSACTION_BYTES):
            yield unit
            unit, items, size = [], 0, 0
        unit += piece
        items += piece_items
        size += piece_size
    if unit:
        yield unit


def _is_task_event(event: CleanEvent) -> bool:
    """What `folding.group_by_task` folds: the other events are only stored."""
    return event.task_id is not None and event.kind.startswith("task.")


def _task_ids(events: Iterable[CleanEvent]) -> set[str]:
    return {e.task_id for e in events if e.task_id is not None and _is_task_event(e)}


def _pieces(events: list[CleanEvent], bodies: dict[str, str], overhead: int
            ) -> Iterator[tuple[list[CleanEvent], int, int]]:
    """Runs of `events` that fit one transaction: (events, items, estimated bytes)."""
    piece: list[CleanEvent] = []
    size = 0
    for event in events:
        event_size = 2 * (len(bodies[event.id].encode()) + 200)
        if piece and (len(piece) + overhead >= MAX_TRANSACTION_ITEMS - 1
                      or size + event_size > MAX_TRANSACTION_BYTES):
            yield piece, len(piece) + overhead, size
            piece, size = [], 0
        piece.append(event)
        size += event_size
    if piece:
        yield piece, len(piece) + overhead, size
