"""Events whose fields their task's row gives back (`events.py`'s records): a span's input,
output, metadata and evidence were stored twice, in its task's row and in its events' record
(some 90 of the 226 bytes of an OTLP chat span's record), and its name, parent, status and
duration too.

An event's entry holds, for each of its fields after its id, kind, time and task id, in the
order it was sent, a letter (`FIELDS`): `.` for a field its entry holds (`rest`), else the
task's field that gives it back. A field is given back only where the task's row, as read,
gives exactly its JSON: the value the batch's fold left (`_same`, checked against the task
as `_save_tasks` stores it in the same transaction), so an event reads back as it was sent,
key order included.

A task's row changes after its events are stored only through the fold of a later batch
(`ingest._write`; the other writers of `tasks` set what no entry takes: its cost owed by
children, run, evidence, evaluation, and a session only where it had none). That fold reads
the task's rows anyway (the dedupe, `events.new_events`), so in the transaction that saves the
task again, each entry a changed field gave back is written out whole (`written_out`, from the
task as it was): what every read returns never changes, whatever a later batch does to the
task. A read takes the rows and their tasks in one snapshot (`events._snapshot`). An event of
no task takes nothing, and no task's row is deleted while its events stay (a temporary agent
goes whole).
"""

from __future__ import annotations

from math import copysign, isfinite
from typing import Any

from ...domain.field_limits import dumps
from ...domain.models import CleanEvent, TaskState

_TEXT, _REAL, _JSON = range(3)
"""How a task's column gives a value back: as the text it holds (or NULL), as a float (an
integer comes back as one, and -0.0 as 0.0), or as the JSON text it holds, parsed."""

FIELDS: dict[str, tuple[str, str, int]] = {
    "n": ("name", "name", _TEXT),
    "p": ("parent_task_id", "parent_task_id", _TEXT),
    "S": ("session_id", "session_id", _TEXT),
    "U": ("user_id", "user_id", _TEXT),
    "i": ("input", "input", _JSON),
    "s": ("status", "status", _TEXT),
    "u": ("duration_ms", "duration_ms", _REAL),
    "c": ("cost_usd", "reported_cost_usd", _REAL),
    "b": ("cost_breakdown", "cost_breakdown", _JSON),
    "o": ("output", "output", _JSON),
    "d": ("data", "metadata", _JSON),
    "l": ("data", "logs", _JSON),
}
"""Each letter's event field, the task's field that gives it back, and how its column reads:
the letters are part of the stored format, never to be changed (`l` is the data of the
task's log entry at the place the entry records)."""
_COMMON = {"name": "n", "parent_task_id": "p", "session_id": "S", "user_id": "U"}
_LETTERS: dict[str, dict[str, str]] = {
    "task.start": {**_COMMON, "input": "i"},
    "task.log": {**_COMMON, "data": "l"},
    "task.end": {**_COMMON, "status": "s", "duration_ms": "u", "cost_usd": "c",
                 "cost_breakdown": "b", "output": "o", "data": "d"},
}
"""The fields each kind of event may take from its task: those the fold sets from it."""
_TAKES = {kind: {name: (letter, *FIELDS[letter][1:]) for name, letter in letters.items()}
          for kind, letters in _LETTERS.items()}
"""Each kind's fields as `derived_entry` looks them up: letter, task's field, column's form."""
_KEPT = "."


def _value(state: TaskState, letter: str, at: int) -> Any:
    attribute = FIELDS[letter][1]
    value = getattr(state, attribute)
    return value[at]["data"] if letter == "l" else value


def _same(form: int, sent: Any, kept: Any) -> bool:
    """Whether a column holding `kept` gives back `sent`'s JSON."""
    if form == _JSON:
        return sent is kept or dumps(sent) == dumps(kept)
    if form == _TEXT:
        return (sent is None or type(sent) is str) and type(kept) is type(sent) and sent == kept
    if sent is None or kept is None:
        return sent is kept
    return (type(sent) is float and type(kept) is float and isfinite(sent) and sent == kept
            and copysign(1.0, sent) > 0)


def _log_at(logs: list[dict[str, Any]], ts: str, data: Any) -> int | None:
    """Where among its task's log entries one of time `ts` holds a log event's `data`: the
    one the fold put there (the same object, the newest first), else one of the same JSON
    (a task read from its row, `slim_events`); None if none does."""
    for at in range(len(logs) - 1, -1, -1):
        if "data" in logs[at] and logs[at]["data"] is data:
            return at
    text = dumps(data)
    for at in range(len(logs) - 1, -1, -1):
        if logs[at].get("ts") == ts and "data" in logs[at] and dumps(logs[at]["data"]) == text:
            return at
    return None


def derived_entry(event: CleanEvent, state: TaskState | None, back: int) -> str | None:
    """The event's entry `[kind, id, back, rest, letters]` (and the place of its log entry,
    for `l`) when its task, as the batch leaves it, gives back any of its fields; None when
    it gives back none, or the body does not lead with its id, kind, time and task id."""
    takes = _TAKES.get(event.kind)
    if state is None or takes is None:
        return None
    items = iter(event.body.items())
    if (next(items, None) != ("id", event.id) or next(items, None) != ("kind", event.kind)
            or next(items, None) != ("ts", event.ts)
            or next(items, None) != ("task_id", event.task_id)):
        return None
    code, rest, at = [], {}, None
    for name, sent in items:
        how = takes.get(name)
        letter = None
        if how is not None:
            letter, attribute, form = how
            if letter == "l":
                at = _log_at(state.logs, event.ts, sent)
                letter = None if at is None else letter
            elif not _same(form, sent, getattr(state, attribute)):
                letter = None
        if letter is None:
            rest[name] = sent
        code.append(letter or _KEPT)
    if len(rest) == len(code):
        return None
    entry = [event.kind, event.id, back, rest, "".join(code)]
    return dumps(entry if at is None else [*entry, at])


def is_derived(entry: list[Any]) -> bool:
    return len(entry) >= 5


def _fields(entry: list[Any], task_id: str, state: TaskState | None) -> dict[str, Any]:
    """A derived entry's fields after its id, kind, time and task id, as they were sent."""
    if state is None:
        raise LookupError(f"events of task {task_id!r} refer to its row, which is gone")
    rest, code = entry[3], entry[4]
    at = entry[5] if len(entry) == 6 else 0
    kept = iter(rest.items())
    fields: dict[str, Any] = {}
    for letter in code:
        if letter == _KEPT:
            name, value = next(kept)
            fields[name] = value
        else:
            fields[FIELDS[letter][0]] = _value(state, letter, at)
    return fields


def rebuilt(entry: list[Any], task_id: str, ts: str, state: TaskState | None
            ) -> dict[str, Any]:
    """The event a derived entry holds, as it was sent, from its task as stored."""
    kind, event_id = entry[0], entry[1]
    return {"id": event_id, "kind": kind, "ts": ts, "task_id": task_id,
            **_fields(entry, task_id, state)}


def _changed(entry: list[Any], before: TaskState, after: TaskState) -> bool:
    """Whether the task no longer gives back what a derived entry takes from it."""
    at = entry[5] if len(entry) == 6 else 0
    for letter in set(entry[4]) - {_KEPT}:
        if letter == "l" and (at >= len(after.logs) or "data" not in after.logs[at]):
            return True
        if not _same(FIELDS[letter][2], _value(before, letter, at), _value(after, letter, at)):
            return True
    return False


def written_out(entries: list[Any], task_id: str, before: TaskState, after: TaskState
                ) -> list[Any] | None:
    """A row's entries with each whose fields `after` would no longer give back written out
    whole, from the task as it was (`before`): `[kind, id, back, rest]`; None if none
    changed."""
    changed = False
    out = []
    for entry in entries:
        if is_derived(entry) and _changed(entry, before, after):
            entry = [entry[0], entry[1], entry[2], _fields(entry, task_id, before)]
            changed = True
        out.append(entry)
    return out if changed else None
