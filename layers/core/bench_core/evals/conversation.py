"""What the judge reads of a run whose root span recorded no content: its conversation, taken
from the model calls below it.

OpenTelemetry GenAI agents often put nothing on the run's root (an `invoke_agent` or a plain
parent span) while each model call beneath it holds the conversation so far. Such a run is
judged on the first model call's input (what the agent was asked), the tool calls and results
the last model call was shown, and the last model call's output (what it answered), in that
order, and its verdict says so. A span counts as a model call when its content reads as a
conversation (`domain.messages`); where none does, the first span that recorded an input and
the last that recorded an output stand in. A run none of whose spans recorded anything stays
unscored for it (`domain.models.NO_CONTENT`).

Bounded on every store: one read of the run's rows without content (what the run page draws,
`RunStore.run_spans`), then at most `SIDE_READS` spans read whole from each end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from ..domain.messages import Message, conversation
from ..domain.models import AgentRef, TaskState
from ..domain.task_text import is_empty
from ..ports.services import WithIngest, WithRuns

ROWS = 1000
"""Rows of the run read to find its ends (a run page's worth)."""
SIDE_READS = 10
"""Spans read whole at most from each end, looking for the first input and the last output."""
NOTE = "Judged on the run's model calls: its root span recorded no content."
"""What a verdict reached this way starts its reasoning with."""


class RunContent(WithRuns, WithIngest, Protocol):
    """A run's spans: their rows, and single spans read whole."""


def run_conversation(store: RunContent, ref: AgentRef, root: TaskState) -> TaskState | None:
    """`root` with the input and output its spans' conversation gives it (see the module), or
    None when no span recorded any content."""
    rows = store.runs.run_spans(ref, root, limit=ROWS, content=False)
    if not rows:
        return None
    first = store.runs.run_spans(ref, root, limit=SIDE_READS, content=True)
    by_end = sorted(rows, key=lambda t: (t.ended_at or t.sort_ts, t.sort_ts, t.task_id),
                    reverse=True)[:SIDE_READS]
    last = [t for t in (_whole(store, ref, row, first) for row in by_end) if t is not None]
    asked, answered = _model_call(first, "input"), _model_call(last, "output")
    if asked is None and answered is None:
        asked = next((t for t in first if not is_empty(t.input)), None)
        answered = next((t for t in last if not is_empty(t.output) and t.status != "failed"),
                        None)
        if asked is None and answered is None:
            return None
        return replace(root, input=None if asked is None else asked.input,
                       output=None if answered is None else answered.output)
    return replace(root, input=_input_text(asked), output=_output_text(asked, answered))


def _whole(store: RunContent, ref: AgentRef, row: TaskState, read: list[TaskState]
           ) -> TaskState | None:
    return next((t for t in read if t.task_id == row.task_id), None) or \
        store.ingest.get_task(ref, row.task_id)


def _model_call(spans: Iterable[TaskState], side: str) -> TaskState | None:
    """The first of `spans` whose `side` holds a conversation."""
    for task in spans:
        messages = _messages(task)
        if messages and any(m.side == side for m in messages):
            return task
    return None


def _messages(task: TaskState) -> list[Message]:
    output = task.output if task.status == "success" else None
    return conversation(task.input, output) or []


def _input_text(asked: TaskState | None) -> str | None:
    if asked is None:
        return None
    return "The run's first model call was asked:\n" + transcript(
        [m for m in _messages(asked) if m.side == "input"])


def _output_text(asked: TaskState | None, answered: TaskState | None) -> str | None:
    """The tool calls and results the last model call was shown that the first was not, then
    what the last one answered."""
    if answered is None:
        return None
    messages = _messages(answered)
    seen = len([m for m in _messages(asked) if m.side == "input"]) if asked is not None else 0
    between = [m for m in messages[seen:] if m.side == "input"
               and any(p.kind in ("tool_call", "tool_result") for p in m.parts)]
    answer = [m for m in messages if m.side == "output"]
    shown = f"Its last model call was shown these tool calls:\n{transcript(between)}\n" \
        if between else ""
    return f"{shown}The run's last model call answered:\n{transcript(answer)}"


def transcript(messages: list[Message]) -> str:
    """Messages as the text a judge reads: one block per part, its role first."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            if part.kind == "tool_call":
                lines.append(f"[{message.role}] calls {part.name or 'a tool'}: {part.text}")
            elif part.kind == "tool_result":
                lines.append(f"[tool result{' of ' + part.name if part.name else ''}] {part.text}")
            elif part.kind == "attachment":
                lines.append(f"[{message.role}] attaches {part.name}: {part.text}")
            else:
                lines.append(f"[{message.role}] {part.text}")
    return "\n".join(lines)

