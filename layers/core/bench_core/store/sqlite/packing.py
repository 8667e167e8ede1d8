"""How SQLite stores JSON that is big enough to pay for packing: a task's metadata, cost
breakdown and evaluation (`repack.PACKED_COLUMNS`; an OTLP span's metadata without the ids its
task id holds, `pack_metadata`), its logs and a subtask's evidence (`task_row.py`), and an
event's body, as raw deflate against
a preset dictionary of the keys and values spans and events repeat (zlib, stdlib).

A span's JSON is a few hundred bytes of the same keys again and again: compressed one value at
a time with no dictionary it keeps some 60% of its bytes, against `DICTIONARY` some 30%, for
about 4 µs to pack and 1.5 µs to unpack. A packed value is a BLOB whose first byte names the
dictionary (so a later one can be added beside it, never changed); anything else in the column
is the JSON text as written before packing existed, read as it is.

An event is stored as one record (`pack_event`, since the events were keyed: `events.py`): its
kind, task id, id and the rest of its body, its time in a column; `unpack_event` puts them back
first, in the order they were sent (they lead every body `ingest.wire.clean_event` makes).
`pack_body` and `event_body` are what the events table held before, which its migrations read.
"""

from __future__ import annotations

import zlib
from typing import Any

from pydantic_core import from_json

from ...domain.field_limits import dumps

DICTIONARY = (
    b'"cache_read_input_tokens":null,"cache_creation_input_tokens":null,'
    b'"reasoning_output_tokens":null,"price_source":"bench price table '
    b'{"status":"unscored","judge":"heuristic-v1","score":null,"reasoning":null,'
    b'"reason":"no content captured","prompt_version":null,"attempts":0,"private":true'
    b'"status":"success","status":"failed","error":"duration_ms":"cost_usd":'
    b'"parent_task_id":"input":null,"output":null,"name":"data":{"label":"value":'
    b'{"label":"evidence","provider":"openai","model":"gpt-4o-mini","operation":"chat",'
    b'"calls":1,"unpriced_calls":0}'
    b'{"trace_id":"span_id":"service":"attributes":{"gen_ai.operation.name":"chat",'
    b'"gen_ai.provider.name":"openai","gen_ai.request.model":"gen_ai.response.model":'
    b'"gen_ai.usage.input_tokens":"gen_ai.usage.output_tokens":"gen_ai.tool.name":'
    b'"_bench_public":["gen_ai.operation.name","input_tokens":"output_tokens":'
)
"""The preset dictionary of packing format 1: never change it (stored values need it to be
read); a better one is format 2, beside it."""

WIDE_DICTIONARY = DICTIONARY + (
    b',"session_id":"user_id":"status":"success","duration_ms":"output":"data":{"label":'
    b'["task.content",["task.log",["task.end",["task.start",'
)
"""The preset dictionary of format 2, which values are packed with since events were keyed
(`pack`, `pack_event`): format 1's and the way an event's record starts (its kind, task id and
id), read through a window that reaches all of it. Never change it either."""

JUDGED_DICTIONARY = (
    b'"reasoning":"The task failed: "reasoning":"The task succeeded, but the output is empty'
    b'{"status":"scored","judge":"heuristic-v1","at":"2026-12-05T15:30:33.028Z","score":1.0,'
    b'"reasoning":"The task succeeded with a non-empty output; no warning signs.","reason":null,'
    b'"prompt_version":"heuristic-v1","input_tokens":0,"output_tokens":0,"cost_usd":0.0,'
    b'"attempts":1,"private":true}'
) + WIDE_DICTIONARY
"""The preset dictionary of format 3, which a task's packed columns were packed with (`pack`,
before format 5) and an OTLP span's metadata is (`pack_metadata`): the offline judge's
evaluation as every run gets one (`evals/heuristic.py`), then format 2's, whose end (what
spans' metadata repeats) stays nearest. A root's evaluation takes some 25 bytes where format 2
took 126. Never change it either."""

NOTED_DICTIONARY = (
    b'"reasoning":"Judged on the run\'s model calls: its root span recorded no content. The task '
) + JUDGED_DICTIONARY
"""The preset dictionary of format 5, which a task's packed columns are packed with since
(`pack`): format 3's after the note that leads the offline judge's reasoning on a run whose
root span recorded no content (`evals/conversation.py`), an OTLP agent's usual run: its
evaluation takes some 40 bytes where format 3 took 80. Never change it either."""

_FORMAT = 1
_WIDE = 2
_JUDGED = 3
_OWN_IDS = 4
"""Format 3's packing of a task's metadata without the ids it leads with, its task id's halves
(`pack_metadata`): read only with its task id (`load_metadata`), never by `load`."""
_NOTED = 5
_DICTIONARIES = {_FORMAT: DICTIONARY, _WIDE: WIDE_DICTIONARY, _JUDGED: JUDGED_DICTIONARY,
                 _NOTED: NOTED_DICTIONARY}
_WINDOWS = {_FORMAT: -10, _WIDE: -11, _JUDGED: -11, _NOTED: -11}
"""Raw deflate's window of each format: format 1's (1 KB) reaches only its dictionary's last
700-odd bytes (deflate keeps 262 of a window for what it looks ahead); formats 2, 3 and 5 (2 KB)
all of theirs, a fifth off an event's record."""
_MEM_LEVEL = 4  # small state: a compressor is made per value, and a big one costs 70 µs
PACK_FROM = 96
"""Shorter JSON is stored as it is: the few bytes packing saves would not pay its time."""

_BODY_PLAIN = 0x80
"""The first byte of a body stored without its columns: alone, its JSON follows; with a
format's number added, its packed JSON."""
_HEAD = ('{"id":', ',"kind":', ',"ts":', ',"task_id":')


_PACKERS = {form: zlib.compressobj(6, zlib.DEFLATED, _WINDOWS[form], _MEM_LEVEL,
                                   zlib.Z_DEFAULT_STRATEGY, dictionary)
            for form, dictionary in _DICTIONARIES.items()}
"""A compressor per format with its dictionary set, never fed: each value is packed by a copy
(a third of the time of making one, which loads the dictionary)."""


def _deflate(data: bytes, form: int = _FORMAT) -> bytes:
    packer = _PACKERS[form].copy()
    return packer.compress(data) + packer.flush()


def _inflate(form: int, data: bytes) -> bytes:
    """The value `data` packs: all of it in one call (a whole stream leaves nothing for a flush,
    whose call cost two fifths of the time, which a run's page pays on some 2,000 values), by a
    decompressor made for it (a tenth less time than copying one made with the dictionary set,
    whose copy takes the whole state and window along: not so for packing, `_PACKERS`)."""
    if form not in _DICTIONARIES:
        raise ValueError(f"unknown packing format {form}")
    unpacker = zlib.decompressobj(_WINDOWS[form], _DICTIONARIES[form])
    value = unpacker.decompress(data)
    if not unpacker.eof:
        raise ValueError("a packed value cut short")
    return value


def pack(text: str | None, least: int = PACK_FROM) -> str | bytes | None:
    """`text` (JSON) as it is best stored: packed when that is smaller (and at least `least`
    characters long)."""
    if text is None or len(text) < least:
        return text
    data = text.encode()
    packed = bytes((_NOTED,)) + _deflate(data, _NOTED)
    return packed if len(packed) < len(data) else text


def pack_json(value: Any) -> str | bytes | None:
    """A value as `pack` stores its JSON; None stays NULL."""
    return None if value is None else pack(dumps(value))


def pack_metadata(text: str | None, task_id: str) -> str | bytes | None:
    """A task's metadata (JSON) as it is best stored: an OTLP span's leads with its trace id
    and span id, the two halves of its task id (`ingest.otlp.mapping`), 48 hex digits that
    packing keeps at some 50 bytes; they are left out (`_OWN_IDS`), the rest packed."""
    head = _ids_head(task_id)
    if (text is None or head is None or not text.startswith(head)
            or text[len(head):len(head) + 1] not in (",", "}")):
        return pack(text)
    return bytes((_OWN_IDS,)) + _deflate(text[len(head):].encode(), _JUDGED)


def load_metadata(stored: str | bytes | None, task_id: str) -> Any:
    """A task's metadata as `pack_metadata` stored it (or `pack`, before it)."""
    if isinstance(stored, bytes) and stored[0] == _OWN_IDS:
        return from_json(f"{_ids_head(task_id)}{_inflate(_JUDGED, stored[1:]).decode()}")
    return load(stored)


def repack_metadata(stored: str | bytes | None, task_id: str) -> str | bytes | None:
    """Metadata stored before `pack_metadata` as it stores it, where it leaves the ids out;
    else as it was."""
    if stored is None or isinstance(stored, bytes) and stored[0] == _OWN_IDS:
        return stored
    text = stored if isinstance(stored, str) else _inflate(stored[0], stored[1:]).decode()
    packed = pack_metadata(text, task_id)
    return packed if isinstance(packed, bytes) and packed[0] == _OWN_IDS else stored


def _ids_head(task_id: str) -> str | None:
    """How the metadata of the OTLP span `task_id` starts (`{"trace_id":…,"span_id":…`), None
    if it is not two halves."""
    trace_id, dash, span_id = task_id.rpartition("-")
    if not dash or not trace_id or not span_id:
        return None
    return f'{{"trace_id":{_quoted(trace_id)},"span_id":{_quoted(span_id)}'


def load(stored: str | bytes | None) -> Any:
    """A stored JSON value, packed or not (pydantic-core's parser: three times `json.loads`'
    speed, which a run of a thousand tasks, four JSON columns each, notices)."""
    if stored is None:
        return None
    return from_json(_inflate(stored[0], stored[1:]) if isinstance(stored, bytes) else stored)


def _quoted(text: str) -> str:
    """`text` as a JSON string, as `dumps` writes it: nothing to escape in an id or a time."""
    if '"' in text or "\\" in text or not text.isprintable():
        return dumps(text)
    return f'"{text}"'


def _rest(body_json: str, event_id: str, kind: str, ts: str, task_id: str | None
          ) -> tuple[str, str, str, str] | None:
    """What `body_json` holds besides the columns, as a JSON object, and the id, kind and task
    id as JSON (the task id `null` when None); None if it does not lead with exactly them."""
    quoted_id, quoted_kind = _quoted(event_id), _quoted(kind)
    quoted_task = "null" if task_id is None else _quoted(task_id)
    head = (f"{_HEAD[0]}{quoted_id}{_HEAD[1]}{quoted_kind}{_HEAD[2]}{_quoted(ts)}"
            + (f"{_HEAD[3]}{quoted_task}" if task_id is not None else ""))
    if not body_json.startswith(head):
        return None
    tail = body_json[len(head):]
    if tail == "}":
        return "{}", quoted_id, quoted_kind, quoted_task
    if not tail.startswith(","):
        return None
    return "{" + tail[1:], quoted_id, quoted_kind, quoted_task


def pack_body(body_json: str, event_id: str, kind: str, ts: str,
              task_id: str | None) -> str | bytes:
    """An event's body as stored: without its columns' values when it leads with them (a BLOB,
    packed if that is smaller), else its JSON text whole."""
    found = _rest(body_json, event_id, kind, ts, task_id)
    if found is None:
        return body_json
    data = found[0].encode()
    packed = _deflate(data) if len(data) >= PACK_FROM else b""
    return (bytes((_BODY_PLAIN | _FORMAT,)) + packed if packed and len(packed) < len(data)
            else bytes((_BODY_PLAIN,)) + data)


def event_body(stored: str | bytes, event_id: str, kind: str, ts: str,
               task_id: str | None) -> dict[str, Any]:
    """The event's body as it was sent, from what `pack_body` stored and its columns."""
    if isinstance(stored, str):
        return dict(from_json(stored))
    tail = stored[1:]
    rest = tail if stored[0] == _BODY_PLAIN else _inflate(stored[0] & ~_BODY_PLAIN, tail)
    head: dict[str, Any] = {"id": event_id, "kind": kind, "ts": ts}
    if task_id is not None:
        head["task_id"] = task_id
    return {**head, **from_json(rest)}


_EVENT_PLAIN = 0xC0
"""The first byte of an event's record (`pack_event`): alone, its JSON follows; with format 2
added, its packed JSON."""


def pack_event(body_json: str, event_id: str, kind: str, ts: str, task_id: str | None,
               *, with_time: bool = False) -> bytes:
    """An event as the `events` table stores it beside its time: `[kind, task id, id, rest]`
    when its body leads with them (else the body whole, as also `with_time`: a time its column
    cannot give back as it was sent), packed when that is smaller. The columns hold no text of
    the event: its id and task id are indexed as hashes (`events.key`), and packed here the
    task id the id usually starts with costs a few bytes."""
    found = None if with_time else _rest(body_json, event_id, kind, ts, task_id)
    if found is None:
        text = body_json
    else:
        rest, quoted_id, quoted_kind, quoted_task = found
        text = f"[{quoted_kind},{quoted_task},{quoted_id},{rest}]"
    return pack_record(text)


def pack_record(text: str) -> bytes:
    """JSON as an events row's record holds it: packed (format 2) when that is smaller, its
    first byte saying which."""
    data = text.encode()
    packed = _deflate(data, _WIDE)
    return (bytes((_EVENT_PLAIN | _WIDE,)) + packed if len(packed) < len(data)
            else bytes((_EVENT_PLAIN,)) + data)


def unpack_record(stored: bytes) -> Any:
    """The JSON value `pack_record` stored."""
    form = stored[0] & ~_EVENT_PLAIN
    return from_json(_inflate(form, stored[1:]) if form else stored[1:])


def unpack_event(stored: bytes, ts: str) -> dict[str, Any]:
    """The event's body as it was sent, from what `pack_event` stored and its time."""
    found = unpack_record(stored)
    if isinstance(found, dict):
        return found
    kind, task_id, event_id, rest = found
    head: dict[str, Any] = {"id": event_id, "kind": kind, "ts": ts}
    if task_id is not None:
        head["task_id"] = task_id
    return {**head, **rest}


def event_entry(body_json: str, event_id: str, kind: str, ts: str, task_id: str | None,
                back: int, exact: bool) -> str:
    """An event as one entry of its task's record (`events.py`): `[kind, id, back, rest]`
    when its body leads with its columns and its time is `back` milliseconds before the row's
    (`exact`: the row gives it back as it was sent), else `[back, body]`, the body whole."""
    found = _rest(body_json, event_id, kind, ts, task_id) if exact else None
    if found is None:
        return f"[{back},{body_json}]"
    rest, quoted_id, quoted_kind, _ = found
    return f"[{quoted_kind},{quoted_id},{back},{rest}]"


def entry_body(entry: list[Any], task_id: str | None, ts: str) -> dict[str, Any]:
    """The event's body as it was sent, from its `event_entry`, its record's task id and its
    time (`ts`, read from the row, unless the entry holds the body whole)."""
    if len(entry) == 2:
        return dict(entry[1])
    kind, event_id, _, rest = entry
    head: dict[str, Any] = {"id": event_id, "kind": kind, "ts": ts}
    if task_id is not None:
        head["task_id"] = task_id
    return {**head, **rest}
