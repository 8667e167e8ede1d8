"""The events table on SQLite: a row per task and batch (its events in one packed record,
`packing.event_entry`) or per event of no task, each row integers (its newest event's time in
milliseconds, hashes of its task id or event id) and the record, and three narrow indexes; and
the migrations that moved a database's events there (`store.MIGRATIONS`), each a chunk per
transaction, resuming where it stopped.

An event's id and task id (an OTLP span's are 50-odd characters) were stored in its row and
again in two indexes, and its time as text in its row and an index: some 1,200 bytes per span
in rows and indexes. Keyed (`rekey_events`), the indexes held 64-bit hashes of the ids (`key`)
and the time as a number (`millis`), the texts once, in a packed record per event: still some
580 bytes per span of three events, a third of them each event's row and index entries, most
of the rest what its records repeat of each other (the task id, the name, the time). Grouped
(`group_events`), a span's events are one row, one record packed as a whole, and two index
entries. A hash finds candidates; the record says what they are: the dedupe compares the ids
themselves among the task's events (an event of no task among those of none, by its id's
hash), as DynamoDB's does, so ids that share a hash are both kept, and a task's events are its
own, and so is their count (`NewEvents.held`, for `field_limits.within_task_limit`), counted
from the same read. An event is inserted after its batch's fold, without the fields its task's
row gives back (`derived_events`): a span's events some 135 bytes where they were 275.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from hashlib import blake2b
from heapq import heappop, heappush
from typing import Any
from zlib import crc32

from ...domain.field_limits import dumps
from ...domain.models import CleanEvent, TaskState, epoch_ms, iso_ms
from .connection import Database, copy_and_swap, migrated, rows_in
from .derived_events import derived_entry, is_derived, rebuilt, written_out
from .packing import (
    entry_body,
    event_body,
    event_entry,
    pack_event,
    pack_record,
    unpack_event,
    unpack_record,
)

EVENTS_SCHEMA = """
    CREATE TABLE IF NOT EXISTS events_keyed (
        seq INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, id_key INTEGER NOT NULL,
        task_key INTEGER, ts INTEGER NOT NULL, record BLOB NOT NULL)
"""
"""The table the migration fills, renamed `events` when it is done."""
EVENT_INDEXES = """
    CREATE INDEX events_by_id ON events (agent_id, id_key);
    CREATE INDEX events_recent ON events (agent_id, ts);
    CREATE INDEX events_by_task ON events (agent_id, task_key) WHERE task_key IS NOT NULL
"""
"""The dedupe's, the recent feed's (its rowid, `seq`, orders events of one time) and a task's
events'."""

CHUNK = 2000
"""Events per transaction of the migration."""


@lru_cache(maxsize=4096)
def key(text: str) -> int:
    """`text`'s 64-bit hash as SQLite stores an integer (8 bytes where the text was dozens):
    its top 16 bits a checksum of its first 8 characters, so that ids sharing a start (a
    trace's spans, a batch's ids made from one prefix) land together in the indexes and a
    batch's inserts touch few of their pages, the rest a hash of the whole. Remembered: a
    batch's dedupe and its rows hash each task id (1.5 µs a hash)."""
    data = text.encode()
    whole = int.from_bytes(blake2b(data, digest_size=6).digest(), "big")
    value = (crc32(data[:8]) & 0xFFFF) << 48 | whole
    return value - (1 << 64) if value >= 1 << 63 else value


_NAIVE_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)


@lru_cache(maxsize=4096)
def millis(ts: str) -> tuple[int, bool]:
    """An event's time as milliseconds since 1970, as the `ts` column keeps it (6 bytes where
    the text was 24), and whether `iso_ms` gives the text back as it was (else the record
    keeps it: `pack_event`'s `with_time`). Ingest's own form (`models.iso`) is read by its
    shape, the C parser given the rest: a tenth of the time of building the datetime by parts,
    which every stored event pays. Remembered: an event's time is its task's start or end,
    read again for the task's row; and the second of each, which a batch's times share."""
    if (len(ts) == 24 and ts[23] == "Z" and ts[19] == "." and ts[10] == "T" and ts[4] == "-"
            and ts[7] == "-" and ts[13] == ":" and ts[16] == ":" and ts.isascii()
            and ts[20:23].isdigit() and (second := _second_at(ts[:19])) is not None):
        return second * 1000 + int(ts[20:23]), True
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return 0, False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    ms = epoch_ms(when)
    return ms, iso_ms(ms) == ts


@lru_cache(maxsize=4096)
def _second_at(text: str) -> int | None:
    """Seconds since 1970 of a `YYYY-MM-DDTHH:MM:SS` text, None if it is no such time."""
    try:
        return (datetime.fromisoformat(text) - _NAIVE_EPOCH) // _SECOND
    except ValueError:
        return None


def _row(agent_id: int, id_key: int, task_key: int | None, body_json: str, event_id: str,
         kind: str, ts: str, task_id: str | None) -> tuple[Any, ...]:
    """An event's row after its `seq`."""
    ms, exact = millis(ts)
    return (agent_id, id_key, task_key, ms,
            pack_event(body_json, event_id, kind, ts, task_id, with_time=not exact))


def _rows(agent_id: int, events: Iterable[CleanEvent],
          tasks: Mapping[str, TaskState] | None = None) -> list[tuple[Any, ...]]:
    """The rows after their `seq` of `events`, in the order their first event came: a task's
    events one row (an event its task in `tasks`, as the batch leaves it, gives back fields
    of stored without them: `derived_events`), an event of no task one row of its own."""
    groups: list[tuple[str | None, list[CleanEvent]]] = []
    of_tasks: dict[str, int] = {}
    for event in events:
        if event.task_id is None:
            groups.append((None, [event]))
            continue
        at = of_tasks.setdefault(event.task_id, len(groups))
        if at == len(groups):
            groups.append((event.task_id, []))
        groups[at][1].append(event)
    rows = []
    for task_id, members in groups:
        timed = [millis(e.ts) for e in members]
        newest = max(ms for ms, _ in timed)
        state = None if tasks is None or task_id is None else tasks.get(task_id)
        entries = ",".join(_entry(e, state, newest - ms, exact)
                           for e, (ms, exact) in zip(members, timed, strict=True))
        rows.append((agent_id, key(members[0].id) if task_id is None else None,
                     None if task_id is None else key(task_id), newest, len(members),
                     pack_record(f"[{dumps(task_id)},[{entries}]]")))
    return rows


def _entry(event: CleanEvent, state: TaskState | None, back: int, exact: bool) -> str:
    """An event's entry in its row's record: without the fields its task gives back, when
    its time does too."""
    found = derived_entry(event, state, back) if exact else None
    return found or event_entry(event.body_json or dumps(event.body), event.id, event.kind,
                                event.ts, event.task_id, back, exact)


Found = tuple[int, int, int, str | None, list[Any]]
"""An event as a row gives it: its time in ms, the row's seq, its place in the row, its task
id and its entry."""
TaskLoader = Callable[[sqlite3.Connection, int, set[str]], Mapping[str, TaskState]]
"""Reads an agent's tasks by id, as stored (`SqliteIngest._load_tasks`)."""


def _back(entry: list[Any]) -> int:
    """How many ms before its row's newest event an entry's event came."""
    return int(entry[0] if len(entry) == 2 else entry[2])


def _unpacked(ts: int, seq: int, record: bytes) -> Iterator[Found]:
    """A row's events."""
    task_id, entries = unpack_record(record)
    for place, entry in enumerate(entries):
        yield ts - _back(entry), seq, place, task_id, entry


@contextmanager
def _snapshot(reader: sqlite3.Connection) -> Iterator[None]:
    """One read transaction for a read of rows and the tasks that give back their events'
    fields: a batch committed between the two could change a task and write out its events
    (`save_events`), which the rows read before it would not show."""
    if reader.in_transaction:
        yield
        return
    reader.execute("BEGIN")
    try:
        yield
    finally:
        reader.execute("COMMIT")


def _bodies(reader: sqlite3.Connection, agent_id: int, found: list[Found],
            tasks: TaskLoader) -> list[dict[str, Any]]:
    """The events `found` as they were sent, the tasks that give back their fields read once
    (in `found`'s snapshot)."""
    needed = {task_id for *_, task_id, entry in found
              if task_id is not None and is_derived(entry)}
    states = tasks(reader, agent_id, needed) if needed else {}
    return [rebuilt(entry, task_id, iso_ms(ms), states.get(task_id))
            if task_id is not None and is_derived(entry)
            else entry_body(entry, task_id, iso_ms(ms))
            for ms, _, _, task_id, entry in found]


def _id(entry: list[Any]) -> str:
    """An entry's event id (without building its body)."""
    return str(entry[1]["id"] if len(entry) == 2 else entry[1])


@dataclass
class NewEvents:
    """A batch's events not stored yet (`fresh`, in batch order), how many events each of
    their tasks holds with them (`held`, for `field_limits.within_task_limit`), and the
    stored rows of the batch's tasks that hold events their task gives back fields of
    (`derived`: seq, task id, entries), which `save_events` checks against the batch's fold."""

    agent_id: int
    fresh: list[CleanEvent]
    held: dict[str, int]
    derived: list[tuple[int, str, list[Any]]] = field(default_factory=list)


def new_events(conn: sqlite3.Connection, agent_id: int, events: list[CleanEvent]) -> NewEvents:
    """The events not stored yet (a repeated id within the batch counts once), from one read
    of the rows of the batch's tasks and events of no task. An event is known by its id among
    its task's events (as on DynamoDB), an event of no task among those of none; a task's
    count is of its own events, by its id (its rows are read anyway: no second statement)."""
    stored: set[tuple[str | None, str]] = set()
    counts: dict[str, int] = {}
    found = NewEvents(agent_id, [], {})
    loose = list({key(event_id) for event_id in {e.id for e in events if e.task_id is None}})
    tasks = list({key(task_id) for task_id in {e.task_id for e in events} if task_id is not None})
    for column, keys in (("id_key", loose), ("task_key", tasks)):
        for seq, record in rows_in(conn, f"SELECT seq, record FROM events WHERE agent_id = ? "
                                   f"AND {column} IN ({{marks}})", (agent_id,), keys):
            task_id, entries = unpack_record(record)
            stored.update((task_id, _id(entry)) for entry in entries)
            if task_id is not None:
                counts[task_id] = counts.get(task_id, 0) + len(entries)
                if any(is_derived(entry) for entry in entries):
                    found.derived.append((seq, task_id, entries))
    for event in events:
        if (event.task_id, event.id) not in stored:
            stored.add((event.task_id, event.id))
            found.fresh.append(event)
            if event.task_id is not None:
                counts[event.task_id] = found.held[event.task_id] = (
                    counts.get(event.task_id, 0) + 1)
    return found


def save_events(conn: sqlite3.Connection, new: NewEvents, before: Mapping[str, TaskState],
                after: Mapping[str, TaskState]) -> None:
    """Insert the batch's fresh events, taking from each task what `after` (the batch's fold,
    as its rows are saved) gives back; and write out whole each stored event whose task the
    fold changed a field it took (`derived_events.written_out`, from `before`, the tasks as
    they were stored)."""
    for seq, task_id, entries in new.derived:
        if task_id in after and task_id in before:
            out = written_out(entries, task_id, before[task_id], after[task_id])
            if out is not None:
                conn.execute("UPDATE events SET record = ? WHERE seq = ?",
                             (pack_record(dumps([task_id, out])), seq))
    conn.executemany(
        "INSERT INTO events (agent_id, id_key, task_key, ts, n, record) VALUES (?, ?, ?, ?, ?, ?)",
        _rows(new.agent_id, new.fresh, after))


def _newest(reader: sqlite3.Connection, agent_id: int, limit: int) -> list[Found]:
    """The agent's newest `limit` events as `_unpacked` gives them, newest first: rows read
    newest first by their newest event (`events_recent`) until the events already read newer
    than the next row's newest are enough."""
    found: list[Found] = []
    pending: list[int] = []  # the times of the events read, negated: newest first
    newer = 0
    for ts, seq, record in reader.execute(
            "SELECT ts, seq, record FROM events WHERE agent_id = ? ORDER BY ts DESC, seq DESC",
            (agent_id,)):
        while pending and -pending[0] > ts:
            heappop(pending)
            newer += 1
        if newer >= limit:
            break
        for event in _unpacked(ts, seq, record):
            found.append(event)
            heappush(pending, -event[0])
    found.sort(key=lambda event: event[:3], reverse=True)
    return found[:limit]


def recent(reader: sqlite3.Connection, agent_id: int, limit: int,
           tasks: TaskLoader) -> list[dict[str, Any]]:
    """The agent's newest events, newest first."""
    with _snapshot(reader):
        return _bodies(reader, agent_id, _newest(reader, agent_id, limit), tasks)


def purge(conn: sqlite3.Connection, agent_id: int, before: int, spared: int) -> int:
    """Delete the agent's events older than `before` (ms) but its newest `spared`, a row
    when its newest event goes (a task's events of one batch stay with their newest); the
    rows whose newest is spared lose their other events that go. How many went."""
    newest = _newest(conn, agent_id, spared)
    if len(newest) < spared or not spared:
        return 0
    last = newest[-1][:3]
    (gone,) = conn.execute(
        "SELECT coalesce(sum(n), 0) FROM events WHERE agent_id = ? AND ts < ? "
        "AND (ts, seq) < (?, ?)", (agent_id, before, *last[:2])).fetchone()
    conn.execute("DELETE FROM events WHERE agent_id = ? AND ts < ? AND (ts, seq) < (?, ?)",
                 (agent_id, before, *last[:2]))
    for seq, ts, record in conn.execute(
            "SELECT seq, ts, record FROM events WHERE agent_id = ? AND ts < ? "
            "AND (ts, seq) >= (?, ?)", (agent_id, before, *last[:2])).fetchall():
        task_id, entries = unpack_record(record)
        kept = [entry for place, entry in enumerate(entries)
                if (ts - _back(entry), seq, place) >= last]
        if len(kept) < len(entries):
            gone += len(entries) - len(kept)
            conn.execute("UPDATE events SET n = ?, record = ? WHERE seq = ?",
                         (len(kept), pack_record(dumps([task_id, kept])), seq))
    return int(gone)


def of_task(reader: sqlite3.Connection, agent_id: int, task_id: str,
            tasks: TaskLoader) -> list[dict[str, Any]]:
    """A task's events, oldest first (those of a task sharing its hash left out): its stretch
    of `events_by_task`, named, as a planner without statistics would rather walk the agent's
    every event in `events_recent`'s order."""
    with _snapshot(reader):
        found = [event for ts, seq, record in reader.execute(
            "SELECT ts, seq, record FROM events INDEXED BY events_by_task WHERE agent_id = ? "
            "AND task_key = ?", (agent_id, key(task_id))) for event in _unpacked(ts, seq, record)
            if event[3] == task_id]
        found.sort(key=lambda event: event[:3])
        return _bodies(reader, agent_id, found, tasks)


def rekey_events(db: Database, number: int) -> bool:
    """The migration: copy the events, in order of `seq`, into `events_keyed`, then swap the
    tables (`connection.copy_and_swap`); whether it moved any (then `Database.migrate` vacuums
    the file)."""
    return _move(db, number, EVENTS_SCHEMA, copy_events, "events_keyed", EVENT_INDEXES)


def _move(db: Database, number: int, schema: str, copy: Callable[[sqlite3.Connection], int],
          staged: str, indexes: str) -> bool:
    """Make the `staged` table (`schema`) unless the step is done, then copy the events into
    it and swap (`connection.copy_and_swap`)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(schema)
    return copy_and_swap(db, number, copy, "events", staged, indexes)


def copy_events(conn: sqlite3.Connection) -> int:
    """Copy up to `CHUNK` events past the last one copied into `events_keyed`; how many."""
    (last,) = conn.execute("SELECT max(seq) FROM events_keyed").fetchone()
    rows = conn.execute(
        "SELECT seq, agent_id, event_id, kind, ts, task_id, body FROM events WHERE seq > ? "
        "ORDER BY seq LIMIT ?", (last if last is not None else -1, CHUNK)).fetchall()
    conn.executemany(
        "INSERT INTO events_keyed (seq, agent_id, id_key, task_key, ts, record) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(seq, *_row(agent_id, key(event_id), None if task_id is None else key(task_id),
                     dumps(event_body(body, event_id, kind, ts, task_id)), event_id, kind, ts,
                     task_id))
         for seq, agent_id, event_id, kind, ts, task_id, body in rows])
    return len(rows)


GROUPED_SCHEMA = """
    CREATE TABLE IF NOT EXISTS events_grouped (
        seq INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, id_key INTEGER, task_key INTEGER,
        ts INTEGER NOT NULL, n INTEGER NOT NULL, record BLOB NOT NULL)
"""
"""The table `group_events` fills, renamed `events` when it is done: a row per task and
batch (`id_key` NULL, `n` its events, `ts` the newest one's) or per event of no task
(`task_key` NULL)."""
GROUPED_INDEXES = """
    CREATE INDEX events_by_id ON events (agent_id, id_key) WHERE id_key IS NOT NULL;
    CREATE INDEX events_recent ON events (agent_id, ts);
    CREATE INDEX events_by_task ON events (agent_id, task_key) WHERE task_key IS NOT NULL
"""
"""The dedupe's of events of no task, the recent feed's (by each row's newest event) and a
task's events' (which its dedupe reads too)."""


def group_events(db: Database, number: int) -> bool:
    """The migration to a row per task and batch: copy the events, in order of `seq`, into
    `events_grouped` (a chunk's events of one task in one row), then swap the tables
    (`connection.copy_and_swap`); whether it moved any (then `Database.migrate` vacuums the
    file)."""
    return _move(db, number, GROUPED_SCHEMA, copy_groups, "events_grouped", GROUPED_INDEXES)


def copy_groups(conn: sqlite3.Connection) -> int:
    """Copy up to `CHUNK` events past the last one copied into `events_grouped`, a row per
    agent and task (its `seq` that of its last event, where the next chunk starts); how
    many."""
    (last,) = conn.execute("SELECT max(seq) FROM events_grouped").fetchone()
    rows = conn.execute(
        "SELECT seq, agent_id, ts, record FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        (last if last is not None else -1, CHUNK)).fetchall()
    agents: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for seq, agent_id, ms, record in rows:
        agents.setdefault(agent_id, []).append((seq, unpack_event(record, iso_ms(ms))))
    grouped: list[tuple[int, tuple[Any, ...]]] = []
    for agent_id, bodies in agents.items():
        lasts: dict[tuple[str | None, int], int] = {}  # in the order `_rows` makes rows
        for seq, body in bodies:
            task_id = body.get("task_id")
            lasts[(task_id, 0 if task_id is not None else seq)] = seq
        grouped += zip(lasts.values(), _rows(agent_id, (
            CleanEvent(body["id"], body["kind"], body["ts"], body.get("task_id"), body,
                       dumps(body)) for _, body in bodies)), strict=True)
    conn.executemany("INSERT INTO events_grouped (seq, agent_id, id_key, task_key, ts, n, record) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(seq, *row) for seq, row in grouped])
    return len(rows)
