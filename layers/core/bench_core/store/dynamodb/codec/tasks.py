"""The task item (PART#{A}#{n}, TASK#{task_id}), which ingest folds, runs read and evals score.

A task's folded fields are a JSON text, `task` (`task_fields`); its content is in its events
alone (`content.py`), but for an item older code wrote, which keeps it as `content`. What its
subtasks ADD to it without reading it (child cost, evidence) is in numbers until its next fold
takes them into `task` (`ADDED`). Its run is `run_id`, and a span below a root is in the `spans`
index (`run_keys`, `codec.spans`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_core import from_json

from ....domain.field_limits import dumps
from ....domain.folding import Owed, owe_session
from ....domain.models import TASK_CONTENT, USAGE_FIELDS, EvalResult, TaskState, Usage, add_usage, from_fields
from .keys import CHUNK_SUFFIX, TASK, TASK_OVERFLOW, AgentKeys, expiring, expiry, task_sort_key
from .spans import span_keys
from .values import Update, number, set_or_remove, to_item

_TASK_TEXT = ("parent_task_id", "name", "status", "started_at", "ended_at", "recorded", "model",
              "agent_version", "session_id", "user_id")
_TASK_NUMBERS = ("duration_ms", "cost_usd", "reported_cost_usd", "cost_logged_usd")
_TASK_JSON = ("input", "output", "metadata", "cost_breakdown", "logs")
TASK_FIELDS = (*_TASK_TEXT, *_TASK_NUMBERS, *_TASK_JSON)
OWED_SESSION = ("owed_session_id", "owed_user_id")
"""The session and user a subtask handed to a task this write does not fold
(`folding.owe_session`), kept beside its fields until a fold of it takes them in."""
"""What folding a task's own events gives (`TaskState`): kept as two JSON texts, `task` and
`content` (its `TASK_CONTENT`), not one attribute each (see `task_fields`). Items written
before that hold one attribute per field; they are read as they are and rewritten whole by
their next fold or by the table's migration (`migration.py`)."""
_EVIDENCE = "ev_"
"""Prefix of the evidence (`models.Usage`) subtasks ADDed to a task, one number each, absent
when unknown."""
ADDED = ("child_cost_usd", *(_EVIDENCE + name for name in USAGE_FIELDS))
"""What finished subtasks ADD to their parent without reading it (`child_cost_update`), on top
of what its `task` text holds. The parent's next fold reads them, writes the sums into `task`
and removes them, under its `version` (which every ADD bumps), so nothing is added twice or
lost; most tasks (leaves, and parents folded after their subtasks) hold none, and a read
decodes no number for them."""
_EVIDENCE_INTS = tuple((name, _EVIDENCE + name) for name in USAGE_FIELDS if name != "cost_usd")
_ADDED_CALLS = _EVIDENCE + "calls"


def digest(event_id: str) -> bytes:
    """What a task keeps of each event folded into it (`seen`): 8 bytes of the id's SHA-256,
    so a task of 10,000 events holds 80 KB of them, and two ids of one task collide with a
    chance below one in 10^11."""
    return hashlib.sha256(event_id.encode()).digest()[:8]


def task_update(agent: AgentKeys, before: TaskState | None, after: TaskState,
                seen: set[bytes], pages: set[str]) -> Update:
    """Write a folded task whole (`task_fields`), guarded by the version it was folded from,
    adding the `digest`s of the events folded (`seen`) and the pages that hold them.

    Subtasks ADD to a task without reading it (`ADDED`), and every write bumps `version`, so a
    fold from a stale read fails its condition and is redone.
    """
    fields: dict[str, Any] = {
        **task_fields(after, rewrite=before is not None, content=keeps_content(before)),
        **listing_keys(agent, after), **run_keys(agent, after)}
    update = expiring(set_or_remove(Update(agent.key(TASK + after.task_id), add={"version": 1}),
                                    fields), agent)
    add_events(update, seen, pages)
    if before is None:
        update.condition = "attribute_not_exists(#pk)"
    else:
        update.condition = "#version = :expected"
        update.condition_values = {":expected": before.version}
    return update


def keeps_content(before: TaskState | None) -> bool:
    """Whether a task's item keeps its content itself: only one written by older code that
    does (`content.py`: a task's content is otherwise in its events alone), so that a task
    started then reads the same until it is done."""
    return before is not None and any(getattr(before, name) for name in TASK_CONTENT)


def as_stored(before: TaskState | None, after: TaskState) -> TaskState:
    """`after` (folded on `before`) as its item now holds it: without content, unless the
    item keeps it (`keeps_content`)."""
    if keeps_content(before):
        return after
    empty: dict[str, Any] = {name: [] if name == "logs" else None for name in TASK_CONTENT}
    return replace(after, **empty)


def task_fields(task: TaskState, *, rewrite: bool, content: bool = True) -> dict[str, Any]:
    """A task's folded fields as the attributes `task` and `content` (None: no content), JSON
    texts of the fields that are set. A read of a thousand tasks then parses two texts per
    task (pydantic-core, in native code) instead of some twenty typed attributes, which was
    most of the time a run took to read; a read that leaves content out (`task_attributes`)
    does not fetch it at all. Numbers are rounded as `number` rounds them; what the task's
    subtasks cost and proved is in `task` too. `rewrite`: of a stored item, which may hold one
    attribute per field (`TASK_FIELDS`) and what subtasks ADDed (`ADDED`, part of `task`'s
    sums now): they go (None). Without `content`, the item keeps none (`keeps_content`)."""
    own: dict[str, Any] = {}
    folded: dict[str, Any] = {}
    for name in TASK_FIELDS:
        value = getattr(task, name)
        if value is None or name in ("logs", "cost_logged_usd") and not value:
            continue  # read back as their defaults: none, 0
        if name in _TASK_NUMBERS:
            value = float(number(value))
        (folded if name in TASK_CONTENT else own)[name] = value
    if task.child_cost_usd:
        own["child_cost_usd"] = float(number(task.child_cost_usd))
    if task.evidence is not None:
        own["evidence"] = _usage_fields(task.evidence)
    gone = dict.fromkeys((*TASK_FIELDS, *ADDED) if rewrite else ())
    kept = dumps(folded) if folded and content else None
    return {**gone, "task": dumps(own), "content": kept}


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
    return expiring(set_or_remove(update, {**task_fields(task, rewrite=True),
                                           **listing_keys(agent, task),
                                           **run_keys(agent, task)}), agent)


def listing_keys(agent: AgentKeys, task: TaskState) -> dict[str, Any]:
    """A root's entries in the `tasks` and `tstatus` listings; None (no entry) for a subtask,
    which its run's `spans` entries list (`ingest.py`), so a span's write costs one index
    entry (its row), not two."""
    if task.parent_task_id is not None:
        return {"tlpk": None, "tlsk": None, "tspk": None, "tssk": None}
    sort_key = task_sort_key(task.sort_ts, task.task_id)
    return {"tlpk": agent.tasks_pk(None), "tlsk": sort_key,
            "tspk": agent.status_pk(None, task.status), "tssk": sort_key}


def run_keys(agent: AgentKeys, task: TaskState) -> dict[str, Any]:
    """A task's run attributes: `run_id` and its `spans` index entry (`codec.spans`)."""
    return {"run_id": task.run_id, **span_keys(agent, task)}


def child_cost_update(agent: AgentKeys, parent: str, amount: float,
                      evidence: Usage | None = None, pages: set[str] | None = None,
                      seen: set[bytes] | None = None, *, run_holder: bool = False,
                      session: Owed | None = None) -> Update:
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
    for name, value in zip(OWED_SESSION, session or (), strict=False):
        if value is not None:  # read back where the task names none (`task_from_item`)
            update.set_if_absent[name] = value
    add_events(update, seen or set(), pages or set())
    if run_holder:  # only while it is one: a parent that arrived meanwhile has its own run
        update.set["run_id"] = parent
        update.condition = "attribute_not_exists(#ssk) AND attribute_not_exists(#gsi3sk)"
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


def task_attributes(*, content: bool = True) -> tuple[str, ...]:
    """The attributes `task_from_item` reads (without `content`: not the `TASK_CONTENT`). A
    Query of many tasks reads only these: a task's listing keys and the digests of its events
    (`seen`, `pages`) are much of its size, and nothing a read shows."""
    fields = ("task", "content") if content else ("task",)
    legacy = (f for f in TASK_FIELDS if content or f not in TASK_CONTENT)
    return ("sk", *fields, *legacy, *ADDED, "version", "eval", "eval_version", "run_id")


def task_from_item(item: dict[str, Any]) -> TaskState:
    own, content = item.get("task"), item.get("content")
    fields = _legacy_fields(item) if own is None else from_json(own)
    if content is not None:
        fields.update(from_json(content))
    evidence = fields.get("evidence")
    if evidence is not None:
        fields["evidence"] = Usage.from_dict(evidence)
    fields.update(task_id=item["sk"][len(TASK):], version=int(item.get("version", 0)),
                  eval=eval_from_item(item), eval_version=int(item.get("eval_version", 0)),
                  run_id=item.get("run_id"))
    task = from_fields(TaskState, fields)
    if OWED_SESSION[0] in item or OWED_SESSION[1] in item:
        task = owe_session(task, (item.get(OWED_SESSION[0]), item.get(OWED_SESSION[1])))
    if "child_cost_usd" in item:  # rounded as the next fold will store the sum
        task.child_cost_usd = float(number(task.child_cost_usd + float(item["child_cost_usd"])))
    added = _added_evidence(item)
    if added is not None:
        task.evidence = add_usage(task.evidence, added)
        if task.evidence is not None and task.evidence.cost_usd is not None:
            task.evidence = replace(task.evidence, cost_usd=float(number(task.evidence.cost_usd)))
    return task


def _legacy_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of a task item written with one attribute per field (`TASK_FIELDS`)."""
    fields: dict[str, Any] = {name: item[name] for name in _TASK_TEXT if name in item}
    fields |= {name: float(item[name]) for name in _TASK_NUMBERS if name in item}
    fields |= {name: from_json(item[name]) for name in _TASK_JSON if name in item}
    return fields


def eval_text(result: EvalResult) -> str:
    """The judge's result as the task item keeps it: JSON without the fields at their default
    (a null reason, no tokens, not private), which `eval_from_item` restores. The eval rewrites
    the run's root item in a transaction, two write units per started KB of the whole item: a
    root of some 700 bytes stays within one KB with a short verdict."""
    return dumps({name: value for name, value in result.to_dict().items()
                  if value != _EVAL_DEFAULTS.get(name, _REQUIRED)})


_REQUIRED = object()
_EVAL_DEFAULTS = {name: spec.default for name, spec in EvalResult.__dataclass_fields__.items()
                  if not isinstance(spec.default, type(dataclasses.MISSING))}


def eval_from_item(item: dict[str, Any]) -> EvalResult | None:
    """The judge's result on a task item (written by `evals.py`), as JSON text (older items
    hold every field)."""
    return EvalResult.from_dict(from_json(item["eval"])) if item.get("eval") else None


# ---- what a task records of its events ------------------------------------------------------

SEEN_INLINE = 448
"""Event digests a task item holds itself; past them they move to a sealed chunk (`TaskLedger`).
448 of 8 bytes and a chunk's keys stay under 4 KB: a consistent read of a chunk costs 1 RRU."""
PAGES_INLINE = 48
"""Page keys (about 60 bytes each) a task item holds itself before they move to a chunk."""
_SEEN_CHUNK, _PAGE_CHUNK = "#S", "#P"


@dataclass
class TaskLedger:
    """What a task item records of its events: the `digest` of each (a resent event is known by
    it) and the keys of the pages holding them (`read_task_events` reads them from there).

    The item holds the newest of them (`seen`, `pages`: at most about `SEEN_INLINE` and
    `PAGES_INLINE`, so a task item stays small however many batches brought its events, and
    every write of it, which DynamoDB bills whole, stays cheap); the older ones are in sealed
    chunks under the same agent (`TASK_OVERFLOW`), numbered from 0 (`seen_chunks`,
    `page_chunks` on the item count them). A chunk is written once, never changed: `spill`
    moves the item's own into new chunks in one transaction conditional on the `version` the
    item was read at (without moving it: a batch folded on that read stays right), so every
    digest is either on the item or in a chunk the item counts."""

    seen: set[bytes] = field(default_factory=set)
    pages: set[str] = field(default_factory=set)
    seen_chunks: int = 0
    page_chunks: int = 0
    packed: str | None = None
    """The key of the pack holding the task, if it has no item of its own (`codec.packs`)."""

    def crowded(self, seen: int = 0, pages: int = 0) -> tuple[bool, bool]:
        """Whether the digests, and the page keys, overflow the item with `seen` digests and
        `pages` page keys more."""
        return len(self.seen) + seen > SEEN_INLINE, len(self.pages) + pages > PAGES_INLINE


def task_ledger(item: dict[str, Any]) -> TaskLedger:
    return TaskLedger(task_seen(item), task_pages(item), int(item.get("seen_chunks", 0)),
                      int(item.get("page_chunks", 0)), item.get("pack"))


def seen_chunk_keys(agent: AgentKeys, task_id: str, ledger: TaskLedger) -> list[dict[str, Any]]:
    return [agent.key(_chunk_sk(task_id, _SEEN_CHUNK, n)) for n in range(ledger.seen_chunks)]


def page_chunk_keys(agent: AgentKeys, task_id: str, ledger: TaskLedger) -> list[dict[str, Any]]:
    return [agent.key(_chunk_sk(task_id, _PAGE_CHUNK, n)) for n in range(ledger.page_chunks)]


def _chunk_sk(task_id: str, kind: str, n: int) -> str:
    """The suffix has a fixed length, so no task id (which may hold `#`) names another's chunk."""
    return f"{TASK_OVERFLOW}{task_id}{kind}{n:06d}"


def spill(agent: AgentKeys, task_id: str, version: int, ledger: TaskLedger, *, seen: bool,
          pages: bool, most: int = 64) -> tuple[list[dict[str, Any]], Update, TaskLedger]:
    """Move the task item's own digests (`seen`) and page keys (`pages`) into new chunks, at
    most `most` of them (an item of an older layout may hold thousands: the rest stays for the
    next call). Returns the chunks (Put only if absent), the item's update (conditional on
    `version` and the chunk counts it was read with; it leaves `version` as it is) and the
    ledger after both."""
    items: list[dict[str, Any]] = []
    after = replace(ledger, seen=set(ledger.seen), pages=set(ledger.pages))
    moves = ((seen, "seen", _SEEN_CHUNK, "seen_chunks", SEEN_INLINE),
             (pages, "pages", _PAGE_CHUNK, "page_chunks", PAGES_INLINE))
    fields: dict[str, Any] = {}
    for wanted, name, kind, counter, size in moves:
        values: list[Any] = sorted(getattr(after, name))
        while wanted and values and len(items) < most:
            part, values = values[:size], values[size:]
            n = getattr(after, counter)
            items.append({**agent.key(_chunk_sk(task_id, kind, n)),
                          **to_item({name: set(part), **expiry(agent)})})
            setattr(after, counter, n + 1)
            getattr(after, name).difference_update(part)
        if wanted:
            fields |= {name: set(values) or None, counter: getattr(after, counter)}
    update = set_or_remove(Update(agent.key(TASK + task_id)), fields)
    update.condition = " AND ".join((
        "attribute_exists(#pk)", _counted("version", ":version", version),
        _counted("seen_chunks", ":seen", ledger.seen_chunks),
        _counted("page_chunks", ":pages", ledger.page_chunks)))
    update.condition_values = {":version": version, ":seen": ledger.seen_chunks,
                               ":pages": ledger.page_chunks}
    return items, update, after


def _counted(attr: str, value: str, n: int) -> str:
    return f"#{attr} = {value}" if n else f"(attribute_not_exists(#{attr}) OR #{attr} = {value})"


def chunk_task_id(sk: str) -> str:
    """The task whose chunk has sort key `sk` (`_chunk_sk`)."""
    return sk[len(TASK_OVERFLOW):-CHUNK_SUFFIX]
