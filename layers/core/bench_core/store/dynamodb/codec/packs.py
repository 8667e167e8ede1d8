"""A pack: the spans of one trace that one batch starts and ends, on one item instead of one
each (PART#{A}#{n}, PACK#{trace_id}#{hash of its spans' ids}; `n` picked by the trace's id).

Why: an OTLP export of 20 spans (five traces of an agent, two chats and a tool) wrote 15
subtask items alone, each a write unit and its `spans` entry another: 30 of the export's 97
write units, the only share that large. Packed, a trace's three subtasks are one item of some
800 bytes and one `spans` entry holding their three rows: 2 write units instead of 6
(`tests/perf/dynamodb_cost.py --otlp --breakdown`).

A span's id names its pack: OTLP task ids are `{trace_id}-{span_id}` (`ingest/otlp/mapping.py`
`task_id`, `pack_trace`), so every lookup of a span by id that misses its own item (`TASK#`)
reads its trace's packs, one Query of the prefix `PACK#{trace_id}#` (`packs.read_tasks`), and
finds it there without a pointer item. Only spans of that shape are packed: a client's own ids
(`/ingest`) name no trace, and cost nothing more to look up.

The item: `row` holds every span's row (`codec.spans.span_row`, the parent a suffix of the
trace), each after its id's suffix and its start, as one JSON text (it begins `[[`, where a
span's own row begins `["`), and `spk`/`ssk` put it in its run's `spans` partition at its
first span's place: the run page, the subtask listing and `run_counts` read a pack's rows from
its entry (`spans_of`; a page of a run holds a pack whole, `runs._page`). `more` (JSON) holds
what a span's row leaves out of its fields (its agent version, session, evidence whole, ...),
how many of `digests` (the `codec.tasks.digest` of each event, 8 bytes each, in span order)
are its own and which of `pages` hold them. A packed span reads as a task item of version 0
(`task_items`), so every reader of task items takes it as it is.

A packed span written later (an event of it in a later batch, a subtask's cost handed to it)
leaves its pack: its item is written whole where a task's own item goes (`TASK#`), in the
batch's transaction with its pack written again without it (`unpacked`; deleted once empty),
guarded by the rows it was read with. Reads take a span's own item and entry before a pack's
(`unique_spans`: the index may show both for a moment). Bounds: `PACK_SPANS` spans and
`PACK_BYTES` besides the keys, far below the 64 KB a task item may take.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import replace
from typing import Any

from pydantic_core import from_json

from ....domain.field_limits import dumps
from ....domain.models import TaskState
from .keys import PACK, TASK, AgentKeys, expiry, task_sort_key
from .spans import span_row, task_from_span
from .tasks import task_fields, task_from_item

PACK_SPANS = 16
"""Spans a pack holds at most."""
PACK_BYTES = 12_000
"""What a pack holds at most besides its keys (its rows, `more`, digests and page keys): far
below the 64 KB a task item may take, and a read of it a few read units."""
PACK_ROW = "[["
"""How a pack's `row` begins (a span's own begins `["`)."""
_OTLP_ID = re.compile(r"([0-9a-f]{32})-([0-9a-f]{16})")
_IN_ROW = ("parent_task_id", "name", "status", "started_at", "ended_at", "duration_ms",
           "cost_usd", "recorded", "model")
"""What a span's row gives back exactly (`codec.spans`); the rest of its fields is in `more`."""


def pack_trace(task_id: str) -> str | None:
    """The trace of a task id that names a pack (`{trace_id}-{span_id}`, 32 and 16 lowercase
    hex digits), else None."""
    match = _OTLP_ID.fullmatch(task_id)
    return match.group(1) if match else None


def pack_prefix(trace: str) -> str:
    return f"{PACK}{trace}#"


def packs_of(task_ids: Iterable[str]) -> set[str]:
    """The traces whose packs may hold any of `task_ids`."""
    return {trace for task_id in task_ids if (trace := pack_trace(task_id)) is not None}


PackedSpan = tuple[TaskState, Collection[bytes], Collection[str]]
"""A span to pack, with the digests of its events and the pages holding them."""


def pack_item(agent: AgentKeys, spans: list[PackedSpan], sk: str | None = None
              ) -> dict[str, Any]:
    """The pack (plain attributes) of `spans` of one trace and run, in start order; its key
    is named by its spans' ids (a batch sent again names the same pack) unless given (`sk`:
    a pack written again without a span that left it)."""
    spans = sorted(spans, key=lambda s: task_sort_key(s[0].sort_ts, s[0].task_id))
    first = spans[0][0]
    trace = pack_trace(first.task_id)
    assert trace is not None and first.run_id is not None
    ids = "\n".join(task.task_id for task, _, _ in spans)
    sk = sk or pack_prefix(trace) + hashlib.sha256(ids.encode()).hexdigest()[:16]
    pages = sorted({page for _, _, on in spans for page in on})
    rows, more = [], []
    for task, seen, on in spans:
        own = from_json(task_fields(task, rewrite=False, content=False)["task"])
        extra = {name: value for name, value in own.items() if name not in _IN_ROW}
        rows.append([task.task_id[len(trace) + 1:], task.sort_ts,
                     *from_json(span_row(_short_parent(task, trace)))])
        more.append([extra, len(seen), sorted(pages.index(page) for page in on)])
    return {"pk": agent.pk_of(sk), "sk": sk, "row": dumps(rows), "more": dumps(more), "pages": pages,
            "digests": b"".join(d for _, seen, _ in spans for d in seen), "run_id": first.run_id,
            "spk": agent.run_pk(first.run_id),
            "ssk": task_sort_key(first.sort_ts, first.task_id), **expiry(agent)}


def pack_size(item: dict[str, Any]) -> int:
    """What a pack holds besides its keys (`PACK_BYTES` bounds it)."""
    return (len(item["row"]) + len(item["more"]) + len(item["digests"])
            + sum(map(len, item["pages"])))


def _short_parent(task: TaskState, trace: str) -> TaskState:
    """`task` with its parent's id as a suffix (a packed span's parent is of its trace:
    `packable`)."""
    return replace(task, parent_task_id=(task.parent_task_id or "")[len(trace) + 1:])


def packable(task: TaskState) -> bool:
    """Whether a span may be packed, as far as its id goes: its id and its parent's name the
    same trace."""
    trace = pack_trace(task.task_id)
    return trace is not None and task.parent_task_id is not None \
        and pack_trace(task.parent_task_id) == trace


def spans_of(item: dict[str, Any], run_id: str) -> list[tuple[dict[str, Any], TaskState]]:
    """The spans a `spans` entry holds, each with its own entry (`sk`, `ssk`, `row` as a
    span's own entry has them): one for a span's own, every packed one for a pack's."""
    if not item["row"].startswith(PACK_ROW):
        return [(item, task_from_span(item, run_id))]
    trace = item["sk"][len(PACK):].split("#", 1)[0]
    found = []
    for suffix, sort_ts, *row in from_json(item["row"]):
        task_id = f"{trace}-{suffix}"
        row[1] = f"{trace}-{row[1]}"
        entry = {"sk": TASK + task_id, "ssk": task_sort_key(sort_ts, task_id), "row": dumps(row),
                 "pack": item["sk"]}
        found.append((entry, task_from_span(entry, run_id)))
    return found


def unpacked(item: dict[str, Any], leaving: Collection[str]) -> list[PackedSpan]:
    """The spans of a pack but `leaving`, as `pack_item` takes them."""
    return [(task_from_item(task), task["seen"], task["pages"]) for task in task_items(item)
            if task["sk"][len(TASK):] not in leaving]


def unique_spans(found: Iterable[tuple[dict[str, Any], TaskState]]
                 ) -> Iterator[tuple[dict[str, Any], TaskState]]:
    """Each span of `found` (entries and their spans, `spans_of`) once: a span that left its
    pack may be in it still for a moment (its pack's entry in `spans` lags its own, as every
    index lags the table), and its own entry is what it is now."""
    found = list(found)
    own = {entry["sk"] for entry, _ in found if "pack" not in entry}
    return (f for f in found if "pack" not in f[0] or f[0]["sk"] not in own)


def task_items(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The packed spans of a pack item, each as its own task item would read (version 0, its
    digests and pages, `pack` naming the pack)."""
    digests: bytes = bytes(item.get("digests", b""))
    pages: list[str] = list(item.get("pages", ()))
    items = []
    at = 0
    for (entry, task), (extra, count, on) in zip(spans_of(item, item["run_id"]),
                                                 from_json(item["more"]), strict=True):
        own = from_json(task_fields(task, rewrite=False, content=False)["task"])
        items.append({"pk": item["pk"], "sk": entry["sk"], "task": dumps({**own, **extra}),
                      "version": 0, "run_id": item["run_id"], "pack": item["sk"],
                      "seen": {digests[i:i + 8] for i in range(at, at + 8 * count, 8)},
                      "pages": {pages[n] for n in on}})
        at += 8 * count
    return items
