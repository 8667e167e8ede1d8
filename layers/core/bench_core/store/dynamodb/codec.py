"""How Bench's records are laid out as DynamoDB items: keys, numbers, JSON values, updates.

The one place that knows an item's attributes, so each concern (`ingest.py`, `evals.py`, ...)
reads as its writes and queries. Each concern's docstring lists its items; the indexes are in
`table.py`.

- Numbers: DynamoDB keeps exact decimals of at most 38 digits, so floats are rounded to 12
  decimal places (far below any cost or duration that matters) and clamped to +-1e15; sums made
  by `ADD` then never lose precision and never carry binary float noise.
- Arbitrary JSON (inputs, outputs, metadata, cost breakdowns, event bodies) is stored as JSON
  text: no Decimal conversion, no empty-set or nesting limits, and reads give back exactly what
  SQLite gives. A task's folded fields are two such texts, `task` and `content`
  (`task_fields`). What its subtasks ADD to it without reading it (child cost, evidence) is in
  numbers until its next fold takes them into `task` (`ADDED`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic_core import from_json

from ...domain import stats
from ...domain.field_limits import dumps
from ...domain.models import (
    TASK_CONTENT,
    USAGE_FIELDS,
    Agent,
    AgentMeta,
    AgentStats,
    CleanEvent,
    EvalResult,
    KeyRecord,
    RunDelta,
    RunRef,
    TaskState,
    Usage,
    add_usage,
    from_fields,
)
from ...domain.privacy import new_agent, settings_of

META = "META"
ROOT = "ROOT"
PARENT = "P#"
"""Task listings: roots are under `ROOT`, subtasks under `PARENT` + their parent's id, so no
client-chosen id (not even "ROOT") can name the root listing."""
TASK = "TASK#"
EVENT = "EV#"
PAGE = "B#"
DAY = "DAY#"
_MAX_NUMBER = 1e15
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()

_TASK_TEXT = ("parent_task_id", "name", "status", "started_at", "ended_at")
_TASK_NUMBERS = ("duration_ms", "cost_usd", "reported_cost_usd", "cost_logged_usd")
_TASK_JSON = ("input", "output", "metadata", "cost_breakdown", "logs")
_TASK_FIELDS = (*_TASK_TEXT, *_TASK_NUMBERS, *_TASK_JSON)
"""What folding a task's own events gives (`TaskState`): kept as two JSON texts, `task` and
`content` (its `TASK_CONTENT`), not one attribute each (see `task_fields`). Items written
before that hold one attribute per field; they are read as they are and rewritten whole by
their next fold."""
_KEY_FIELDS = ("key_hash", "prefix", "login", "agent_slug", "name", "created_at", "last_used_at",
               "revoked_at")
_AGENT_TEXT = ("display_name", "model", "framework", "architecture", "created_at")
_EVIDENCE = "ev_"
"""Prefix of the evidence (`models.Usage`) subtasks ADDed to a task, one number each, absent
when unknown."""
ADDED = ("child_cost_usd", *(_EVIDENCE + name for name in USAGE_FIELDS))
"""What finished subtasks ADD to their parent without reading it (`child_cost_update`), on top
of what its `task` text holds. The parent's next fold reads them, writes the sums into `task`
and removes them, under its `version` (which every ADD bumps), so nothing is added twice or
lost; most tasks (leaves, and parents folded after their subtasks) hold none, and a read
decodes no number for them."""


# ---- values ---------------------------------------------------------------------------------


def number(x: float) -> Decimal:
    """A float or int as a DynamoDB number (see the module docstring for why it is rounded)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return Decimal(x)
    text = f"{max(-_MAX_NUMBER, min(_MAX_NUMBER, float(x))):.12f}".rstrip("0").rstrip(".")
    return Decimal(text)


def av(value: Any) -> dict[str, Any]:
    """A Python value as an AttributeValue (boto3 refuses floats; they become `number`s)."""
    return _SERIALIZER.serialize(number(value) if isinstance(value, float) else value)


def to_item(attrs: dict[str, Any]) -> dict[str, Any]:
    return {name: av(value) for name, value in attrs.items()}


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """An item's AttributeValues as Python values (numbers come back as Decimal)."""
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}


def _loads(text: str | None) -> Any:
    """JSON text `dumps` wrote, as values (pydantic-core's parser: three times `json.loads`'
    speed, which a run of a thousand task items notices)."""
    return None if text is None else from_json(text)


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


# ---- keys -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentKeys:
    """Every key that belongs to one agent (`AGENT` in the key design is `{login}#{slug}`).
    `expires_at` (epoch seconds) is set for a temporary agent: every item written for it
    carries it as its TTL (`expiring`), so DynamoDB deletes the agent whole."""

    login: str
    slug: str
    expires_at: int | None = None

    @property
    def name(self) -> str:
        return f"{self.login}#{self.slug}"

    @property
    def pk(self) -> str:
        return f"AGENT#{self.name}"

    def key(self, sk: str) -> dict[str, Any]:
        return to_item({"pk": self.pk, "sk": sk})

    def tasks_pk(self, parent: str | None) -> str:
        return f"TASKS#{self.name}#{_listing(parent)}"

    def status_pk(self, parent: str | None, status: str) -> str:
        return f"TSTATUS#{self.name}#{_listing(parent)}#{status}"

    def run_pk(self, run_id: str) -> str:
        """The `runs` index partition of every task recorded under run `run_id` (`domain.runs`)."""
        return f"RUN#{self.name}#{run_id}"


def _listing(parent: str | None) -> str:
    """Which listing a task is in: the roots, or its parent's subtasks (`PARENT`)."""
    return ROOT if parent is None else PARENT + parent


def user_key(login: str) -> dict[str, Any]:
    return to_item({"pk": f"USER#{login}", "sk": META})


def api_key_key(key_hash: str) -> dict[str, Any]:
    return to_item({"pk": f"KEY#{key_hash}", "sk": META})


def task_sort_key(sort_ts: str, task_id: str) -> str:
    """Sorts like SQLite's `(sort_ts, task_id)`: every sort_ts has the same length. A task seen
    only through logs has no sort_ts, so its key starts with `#`, before every real one."""
    return f"{sort_ts}#{task_id}"


# ---- update expressions ---------------------------------------------------------------------


@dataclass
class Update:
    """One UpdateItem built field by field. Every attribute name goes through a `#name`
    placeholder, since many of Bench's (name, status, input, day) are DynamoDB reserved words;
    a `condition` names attributes the same way and its values by the `:names` it uses."""

    key: dict[str, Any]
    set: dict[str, Any] = field(default_factory=dict)
    set_if_absent: dict[str, Any] = field(default_factory=dict)
    add: dict[str, Any] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)
    condition: str | None = None
    condition_values: dict[str, Any] = field(default_factory=dict)

    def params(self, table: str) -> dict[str, Any]:
        """The arguments of `UpdateItem`, or of an `Update` inside `TransactWriteItems`."""
        names: dict[str, str] = {}
        values: dict[str, Any] = {}

        def name(attr: str) -> str:
            names[f"#{attr}"] = attr
            return f"#{attr}"

        def value(v: Any) -> str:
            placeholder = f":v{len(values)}"
            values[placeholder] = av(v)
            return placeholder

        sets = [f"{name(k)} = {value(v)}" for k, v in self.set.items()]
        sets += [f"{name(k)} = if_not_exists({name(k)}, {value(v)})"
                 for k, v in self.set_if_absent.items()]
        clauses = [("SET", sets), ("ADD", [f"{name(k)} {value(v)}" for k, v in self.add.items()]),
                   ("REMOVE", [name(k) for k in self.remove])]
        out: dict[str, Any] = {
            "TableName": table, "Key": self.key,
            "UpdateExpression": " ".join(f"{verb} {', '.join(parts)}"
                                         for verb, parts in clauses if parts)}
        if self.condition:
            for attr in re.findall(r"#(\w+)", self.condition):
                name(attr)
            values.update({k: av(v) for k, v in self.condition_values.items()})
            out["ConditionExpression"] = self.condition
        out["ExpressionAttributeNames"] = names
        if values:
            out["ExpressionAttributeValues"] = values
        return out


def _set_or_remove(update: Update, fields: dict[str, Any]) -> Update:
    update.set.update({k: v for k, v in fields.items() if v is not None})
    update.remove.extend(k for k, v in fields.items() if v is None)
    return update


def ttl(until: str) -> dict[str, Any]:
    """The expiry attributes of an item that lives until the ISO instant `until`: `expires_at`
    (epoch seconds, the table's TTL attribute, so DynamoDB deletes it for free) and `until`
    (the same instant, compared exactly on every read: TTL deletion can lag by a day or two,
    so an expired item must never count as live)."""
    epoch = math.ceil(datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp())
    return {"until": until, "expires_at": epoch}


# ---- users, keys, agents --------------------------------------------------------------------


def user_upsert(login: str, now: str, until: str | None = None) -> Update:
    """`until`: the user of a temporary agent goes with it."""
    update = Update(user_key(login), set={"login": login}, set_if_absent={"created_at": now})
    if until is not None:
        update.set["expires_at"] = ttl(until)["expires_at"]
    return update


def temporary(agent: AgentKeys, item: dict[str, Any] | None) -> AgentKeys:
    """`agent` with the expiry its stored agent `item` holds, if it is a temporary agent."""
    if item is None or item.get("expires_at") is None:
        return agent
    return replace(agent, expires_at=int(item["expires_at"]))


def expiry(agent: AgentKeys) -> dict[str, Any]:
    """The TTL attribute of an item of `agent`: none unless it is temporary."""
    return {} if agent.expires_at is None else {"expires_at": agent.expires_at}


def expiring(update: Update, agent: AgentKeys) -> Update:
    update.set |= expiry(agent)
    return update


def event_expiry(agent: AgentKeys, ts: str, retention_days: int) -> int | None:
    """When an event of time `ts` expires: `retention_days` later (0: never), or with its
    temporary agent if that is sooner."""
    times = [agent.expires_at]
    if retention_days > 0:
        times.append(ttl(ts)["expires_at"] + retention_days * 86_400)
    return min((t for t in times if t is not None), default=None)


def key_item(record: KeyRecord) -> dict[str, Any]:
    """A temporary key (`expires_at`) gets the TTL attributes (`ttl`)."""
    attrs = {name: getattr(record, name) for name in _KEY_FIELDS}
    attrs = {k: v for k, v in attrs.items() if v is not None}
    attrs |= {"pk": f"KEY#{record.key_hash}", "sk": META, "gsi1pk": "KEYS",
              "gsi1sk": f"{record.login}#{record.created_at}#{record.key_hash}"}
    if record.expires_at is not None:
        attrs |= ttl(record.expires_at)
    return to_item(attrs)


def key_from_item(item: dict[str, Any]) -> KeyRecord:
    fields: dict[str, Any] = {name: item.get(name) for name in _KEY_FIELDS}
    return KeyRecord(**fields, expires_at=item.get("until"))


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
        login=item["login"], slug=item["slug"], tools=_loads(item.get("tools")),
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
        judge_daily_budget_usd=_float(item.get("judge_daily_budget_usd")),
        judge_sample_rate=_float(item.get("judge_sample_rate")), expires_at=item.get("until"))


_EVIDENCE_COUNTS = ("evidence_input_tokens", "evidence_output_tokens", "evidence_calls",
                    "evidence_unpriced_calls")


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


# ---- events and tasks -----------------------------------------------------------------------


def digest(event_id: str) -> bytes:
    """What a task keeps of each event folded into it (`seen`): 8 bytes of the id's SHA-256,
    so a task of 10,000 events holds 80 KB of them, and two ids of one task collide with a
    chance below one in 10^11."""
    return hashlib.sha256(event_id.encode()).digest()[:8]


def page_item(agent: AgentKeys, sk: str, entries: list[str], expires_at: int | None
              ) -> dict[str, Any]:
    """Events stored together (`ingest.py`): `entries` are `page_entry` JSON texts."""
    attrs: dict[str, Any] = {"pk": agent.pk, "sk": sk, "events": "[" + ",".join(entries) + "]"}
    if expires_at is not None:
        attrs["expires_at"] = expires_at
    return to_item(attrs)


def page_entry(event: CleanEvent, body: str, seq: int) -> str:
    """One event of a page as JSON text: [ts, seq, task_id, id, body], `body` as stored."""
    return f"[{json.dumps(event.ts)},{seq},{json.dumps(event.task_id)},{json.dumps(event.id)},{body}]"


@dataclass(frozen=True)
class StoredEvent:
    ts: str
    seq: int
    task_id: str | None
    id: str
    body: dict[str, Any]

    @property
    def order(self) -> tuple[str, int]:
        """Time, then arrival: events of one millisecond keep the order they came in."""
        return self.ts, self.seq


def page_events(item: dict[str, Any]) -> list[StoredEvent]:
    return [StoredEvent(*entry) for entry in json.loads(item["events"])]


def page_max_ts(sk: str) -> str:
    """The newest event time of a page, from its key (`B#{max ts}#{unique}`)."""
    return sk[len(PAGE):].split("#", 1)[0]


def task_update(agent: AgentKeys, before: TaskState | None, after: TaskState,
                seen: set[bytes], pages: set[str]) -> Update:
    """Write a folded task whole (`task_fields`), guarded by the version it was folded from,
    adding the `digest`s of the events folded (`seen`) and the pages that hold them.

    Subtasks ADD to a task without reading it (`ADDED`), and every write bumps `version`, so a
    fold from a stale read fails its condition and is redone.
    """
    sort_key = task_sort_key(after.sort_ts, after.task_id)
    fields: dict[str, Any] = {
        **task_fields(after, rewrite=before is not None),
        "tlpk": agent.tasks_pk(after.parent_task_id), "tlsk": sort_key,
        "tspk": agent.status_pk(after.parent_task_id, after.status), "tssk": sort_key,
        **run_keys(agent, after)}
    update = expiring(_set_or_remove(Update(agent.key(TASK + after.task_id), add={"version": 1}),
                                     fields), agent)
    add_events(update, seen, pages)
    if before is None:
        update.condition = "attribute_not_exists(#pk)"
    else:
        update.condition = "#version = :expected"
        update.condition_values = {":expected": before.version}
    return update


def task_fields(task: TaskState, *, rewrite: bool) -> dict[str, Any]:
    """A task's folded fields as the attributes `task` and `content` (None: no content), JSON
    texts of the fields that are set. A read of a thousand tasks then parses two texts per
    task (pydantic-core, in native code) instead of some twenty typed attributes, which was
    most of the time a run took to read; a read that leaves content out (`task_attributes`)
    does not fetch it at all. Numbers are rounded as `number` rounds them; what the task's
    subtasks cost and proved is in `task` too. `rewrite`: of a stored item, which may hold one
    attribute per field (`_TASK_FIELDS`) and what subtasks ADDed (`ADDED`, part of `task`'s
    sums now): they go (None)."""
    own: dict[str, Any] = {}
    content: dict[str, Any] = {}
    for name in _TASK_FIELDS:
        value = getattr(task, name)
        if value is None or name == "logs" and not value:
            continue
        if name in _TASK_NUMBERS:
            value = float(number(value))
        (content if name in TASK_CONTENT else own)[name] = value
    if task.child_cost_usd:
        own["child_cost_usd"] = float(number(task.child_cost_usd))
    if task.evidence is not None:
        own["evidence"] = _usage_fields(task.evidence)
    gone = dict.fromkeys((*_TASK_FIELDS, *ADDED) if rewrite else ())
    return {**gone, "task": dumps(own), "content": dumps(content) if content else None}


def _usage_fields(usage: Usage) -> dict[str, Any]:
    """The known fields of `usage`, its cost rounded as `number` rounds it."""
    fields = {name: value for name, value in usage.to_dict().items() if value is not None}
    if "cost_usd" in fields:
        fields["cost_usd"] = float(number(fields["cost_usd"]))
    return fields


def task_rewrite(agent: AgentKeys, task: TaskState) -> Update:
    """Rewrite a stored task's fields and run keys as `task` now holds them, guarded by the
    version it was read at (like `task_update`)."""
    update = Update(agent.key(TASK + task.task_id), add={"version": 1},
                    condition="#version = :expected", condition_values={":expected": task.version})
    return expiring(_set_or_remove(update, {**task_fields(task, rewrite=True),
                                            **run_keys(agent, task)}), agent)


def run_keys(agent: AgentKeys, task: TaskState) -> dict[str, Any]:
    """A task's run attributes: `run_id` and the `runs` index keys that read a run's spans in one
    Query. A run's root is read by its key (it is the run's id), so it takes no index entry."""
    if task.run_id is None or task.parent_task_id is None:
        return {"run_id": task.run_id, "gsi3pk": None, "gsi3sk": None}
    return {"run_id": task.run_id, "gsi3pk": agent.run_pk(task.run_id),
            "gsi3sk": task_sort_key(task.sort_ts, task.task_id)}


def child_cost_update(agent: AgentKeys, parent: str, amount: float,
                      evidence: Usage | None = None, pages: set[str] | None = None,
                      seen: set[bytes] | None = None, *, run_holder: bool = False) -> Update:
    """A finished subtask's cost and evidence (or only the `pages` and `seen` digests of
    events of a task that no `task.*` event folds), added to a task this write does not fold. A task not seen yet
    becomes a placeholder (no index keys, so no listing shows it) until its events come.
    `run_holder`: subtasks now record the parent as their run, which the placeholder
    remembers as `run_id` = its own id, so the parent's arrival moves them (`runs.Reassign`);
    the version bump makes a concurrent write of the parent fold again."""
    update = expiring(Update(agent.key(TASK + parent),
                             add={"version": 1, **evidence_adds(evidence)}), agent)
    if amount:
        update.add["child_cost_usd"] = number(amount)
    add_events(update, seen or set(), pages or set())
    if run_holder:  # only while it is one: a parent that arrived meanwhile has its own run
        update.set["run_id"] = parent
        update.condition = "attribute_not_exists(#gsi3sk)"
    return update


def add_events(update: Update, seen: set[bytes], pages: set[str]) -> None:
    """DynamoDB sets may not be empty: only what there is to add is added."""
    if seen:
        update.add["seen"] = seen
    if pages:
        update.add["pages"] = pages


def task_seen(item: dict[str, Any]) -> set[bytes]:
    return {bytes(b) for b in item.get("seen", ())}


def task_pages(item: dict[str, Any]) -> set[str]:
    return set(item.get("pages", ()))


def evidence_adds(evidence: Usage | None) -> dict[str, Any]:
    """The ADDs of a subtask's `evidence` to its parent: each known count, 0 included (ADD
    creates it)."""
    if evidence is None:
        return {}
    return {_EVIDENCE + name: number(value) for name, value in evidence.to_dict().items()
            if value is not None}


def _added_evidence(item: dict[str, Any]) -> Usage | None:
    """What subtasks ADDed to a task's evidence since its last fold (`ADDED`)."""
    if _ADDED_CALLS not in item:
        return None
    cost = item.get(_EVIDENCE + "cost_usd")
    return Usage(cost_usd=None if cost is None else float(cost),
                 **{name: int(item[attr]) for name, attr in _EVIDENCE_INTS if attr in item})


_EVIDENCE_INTS = tuple((name, _EVIDENCE + name) for name in USAGE_FIELDS if name != "cost_usd")
_ADDED_CALLS = _EVIDENCE + "calls"


def task_attributes(*, content: bool = True) -> tuple[str, ...]:
    """The attributes `task_from_item` reads (without `content`: not the `TASK_CONTENT`). A
    Query of many tasks reads only these: a task's listing keys and the digests of its events
    (`seen`, `pages`) are much of its size, and nothing a read shows."""
    fields = ("task", "content") if content else ("task",)
    legacy = (f for f in _TASK_FIELDS if content or f not in TASK_CONTENT)
    return ("sk", *fields, *legacy, *ADDED, "version", "eval", "run_id")


def task_from_item(item: dict[str, Any]) -> TaskState:
    own, content = item.get("task"), item.get("content")
    fields = _legacy_fields(item) if own is None else from_json(own)
    if content is not None:
        fields.update(from_json(content))
    evidence = fields.get("evidence")
    if evidence is not None:
        fields["evidence"] = Usage.from_dict(evidence)
    fields.update(task_id=item["sk"][len(TASK):], version=int(item.get("version", 0)),
                  eval=eval_from_item(item), run_id=item.get("run_id"))
    task = from_fields(TaskState, fields)
    if "child_cost_usd" in item:
        task.child_cost_usd += float(item["child_cost_usd"])
    added = _added_evidence(item)
    if added is not None:
        task.evidence = add_usage(task.evidence, added)
    return task


def _legacy_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of a task item written with one attribute per field (`_TASK_FIELDS`)."""
    fields: dict[str, Any] = {name: item[name] for name in _TASK_TEXT if name in item}
    fields |= {name: float(item[name]) for name in _TASK_NUMBERS if name in item}
    fields |= {name: from_json(item[name]) for name in _TASK_JSON if name in item}
    return fields


def eval_from_item(item: dict[str, Any]) -> EvalResult | None:
    """The judge's result on a task item (written by `evals.py`), as JSON text."""
    return EvalResult.from_dict(from_json(item["eval"])) if item.get("eval") else None
