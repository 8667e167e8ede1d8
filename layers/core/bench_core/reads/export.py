"""The runs list exported (JSON Lines or CSV), through the privacy gate, a page at a time.

What is exported is what the runs list finds with the same filters (`reads.runs.run_filter`),
newest first, each run as the run's JSON shows it (`run_record`, its feedback from people
included: `reads.feedback.run_feedback`, comments through the privacy gate) and, with `spans`, every span
under it as the run's JSON shows it (`reads.runs.loose_view`, in start order). Records are
yielded one by one, read `RUNS_READ` runs and `CONTENT_READ` spans at a time, so an export
of any size holds one page in memory; a root's content is read (by key) only when the viewer
may see some of it. Where answers cannot stream (AWS Lambda, which returns at most 6 MB), an
export that passes `ANSWER_BYTES` goes to a file drop (`ports/files.py`) and is answered with
a short-lived link (`delivered`).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Iterator
from typing import Any, Literal, Protocol

from ..domain.models import Agent, AgentRef, TaskState
from ..domain.privacy import HIDDEN, Sight, Viewer, evidence_view
from ..domain.runs import span_key
from ..ports.files import FileDrop
from ..ports.services import WithFeedback
from .agents import visible
from .feedback import run_feedback
from .run_filters import run_filter
from .runs import (
    ANSWER_BYTES,
    CONTENT_READ,
    Run,
    RunListReads,
    RunReads,
    loose_view,
    run_summary,
)

Format = Literal["jsonl", "csv"]
MEDIA_TYPES: dict[str, str] = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}
RUNS_READ = 100
"""Runs read from the list at once."""
MAX_RUNS = 100_000
"""The most runs one export holds (`limit`); the export says where it stopped (`more`)."""
COLUMNS = ("record", "run_id", "task_id", "parent_id", "name", "status", "started_at",
           "ended_at", "duration_ms", "cost_usd", "headline_cost_usd", "headline_cost_source",
           "evidence_cost_usd", "model", "input_tokens", "output_tokens", "score", "input",
           "output", "feedback_count", "feedback_mean_score", "feedback_labels")
"""A CSV export's columns: a run's row and its spans' rows alike (`record` says which);
inputs and outputs as JSON text, or the hidden marker; a run's feedback from people as its
count, mean score and labels (`;`-separated, first seen first), never its comments."""
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula: a text cell starting so gets a `'`."""


class ExportReads(RunReads, RunListReads, WithFeedback, Protocol):
    """The runs list, each run's spans and feedback, and a run's root read whole."""


def export(store: ExportReads, ref: AgentRef, viewer: Viewer, filters: dict[str, Any], *,
           spans: bool, limit: int) -> Iterator[dict[str, Any]]:
    """The export's records (`{"record": "run" | "span" | "end", ...}`), the agent and the
    filters checked before the first is read, so a refusal is an answer, not a cut stream;
    the last record says how many runs it holds and whether the list goes on."""
    agent = visible(store, ref, viewer)
    where = run_filter(agent, viewer, filters)
    sight = Sight.of(agent, viewer)

    def records() -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        count = 0
        while count < limit:
            found = store.runs.list_runs(agent.ref, where, limit=min(RUNS_READ, limit - count),
                                         cursor=cursor)
            tasks, cursor = found.runs, found.next_cursor
            for task in tasks:
                root = _whole(store, agent, sight, task)
                yield {**run_record(root, agent, viewer, sight),
                       "feedback": run_feedback(store, agent, viewer, root.task_id)}
                if spans:
                    yield from span_records(store, agent, sight, root)
            count += len(tasks)
            if cursor is None:
                break
        yield {"record": "end", "runs": count, "more": cursor is not None, "limit": limit}

    return records()


def _whole(store: RunReads, agent: Agent, sight: Sight, task: TaskState) -> TaskState:
    """The root with its content where the viewer may see some (a list reads roots without
    it on DynamoDB), else as listed."""
    if not (sight.inputs or sight.outputs or sight.content):
        return task
    return store.ingest.get_task(agent.ref, task.task_id) or task


def run_record(root: TaskState, agent: Agent, viewer: Viewer, sight: Sight) -> dict[str, Any]:
    """One run as the runs list and the run's header show it, with its input and output as
    the privacy gate lets the viewer see them."""
    return {"record": "run", **run_summary(root, agent, viewer), "ended_at": root.ended_at,
            "model": root.model, "evidence": evidence_view(root, None),
            "input": root.input if sight.inputs else HIDDEN,
            "output": root.output if sight.outputs else HIDDEN,
            "inputs_hidden": not sight.inputs, "outputs_hidden": not sight.outputs}


def span_records(store: RunReads, agent: Agent, sight: Sight, root: TaskState
                 ) -> Iterator[dict[str, Any]]:
    """Every span under `root`, in start order, as the run's JSON shows it."""
    run = Run(agent, root, [], None)
    after: tuple[str, str] | None = None
    while True:
        page = store.runs.run_spans(agent.ref, root, limit=CONTENT_READ, after=after)
        for task in page:
            yield {"record": "span", "run_id": root.task_id,
                   **loose_view(task, run, sight), "model": task.model}
        if len(page) < CONTENT_READ:
            return
        after = span_key(page[-1])


def delivered(chunks: Iterator[bytes], drop: FileDrop, name: str, media_type: str
              ) -> bytes | str:
    """An export where answers cannot stream (AWS Lambda): the whole of it if it fits one
    answer (`ANSWER_BYTES`, as `answer_size` counts), else a link to it, written to `drop` as it is made (what was
    read before it passed the limit first)."""
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += answer_size(chunk)
        if size > ANSWER_BYTES:
            return drop.put(name, itertools.chain(head, chunks), media_type)
    return b"".join(head)


ESCAPED = b'"\\\n\r\t'
"""What the JSON of a Lambda answer writes as two characters."""
NON_ASCII = bytes(range(128, 256))


def answer_size(chunk: bytes) -> int:
    """What `chunk` takes in a Lambda answer, whose body travels as a JSON string: its bytes,
    one more for each that JSON escapes, and two more for each byte of a character beyond
    ASCII (a six-character `\\u` escape where a character took two or three), at most."""
    escaped = sum(chunk.count(bytes([c])) for c in ESCAPED)
    return len(chunk) + escaped + 2 * (len(chunk) - len(chunk.translate(None, NON_ASCII)))


def encoded(records: Iterator[dict[str, Any]], form: Format) -> Iterator[bytes]:
    """The records as JSON Lines, or as CSV rows under a header (`COLUMNS`; the closing
    record is JSON Lines only: a CSV ends where its rows do)."""
    if form == "jsonl":
        for record in records:
            yield json.dumps(record, ensure_ascii=False, default=str).encode() + b"\n"
        return
    yield _csv_line(COLUMNS)
    for record in records:
        if record["record"] != "end":
            yield _csv_line([_cell(value) for value in _columns(record)])


def _columns(record: dict[str, Any]) -> list[Any]:
    evidence = record.get("evidence") or {}
    verdict = record.get("eval") or {}
    people = record.get("feedback") or {}
    labels = dict.fromkeys(f["label"] for f in people.get("items", ()) if f["label"])
    run_id = record["run_id"]
    return [record["record"], run_id, record.get("task_id", run_id), record.get("parent_id"),
            record.get("name"), record.get("status"), record.get("started_at"),
            record.get("ended_at"), record.get("duration_ms"), record.get("cost_usd"),
            record.get("headline_cost_usd"), record.get("headline_cost_source"),
            evidence.get("cost_usd"), record.get("model", evidence.get("model")),
            evidence.get("input_tokens"), evidence.get("output_tokens"),
            verdict.get("score") if verdict.get("status") == "scored" else None,
            _text(record.get("input")), _text(record.get("output")), people.get("count"),
            people.get("mean_score"), ";".join(labels) or None]


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


def _csv_line(values: Any) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(values)
    return out.getvalue().encode()
