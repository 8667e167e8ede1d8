"""A task's start and the moment it was first recorded as the tasks table keeps them: the
start as milliseconds since 1970 (6 bytes where its text was 24), the record's moment
(`folding.recorded_at`: its batch's first and last times and its place in the batch, 56
characters) as 15 bytes that sort as the text did (`runs.py` orders a session's runs by it);
and the migration that compacts an older file's (`store.MIGRATIONS`), a chunk per transaction,
resuming where it stopped. A value in another form than ingest's stays text, read as it is.
Its `sort_ts`, compared and ordered in SQL, is kept as its start is since `task_row.py`'s
migration: the bytes sort as the times do.

Some 60 bytes a span. Neither is compared in SQL but `recorded`'s order, which the bytes keep:
6 bytes of each time big-endian (a BLOB: after every text in SQLite's order, so a time before
1970, kept as text, sorts first as it should) (times are at most 9999-12-31: under 2^48 ms), 3 of the place
(at most 999,999: under 2^24)."""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from ...domain.models import iso_ms
from .connection import Database, in_place
from .events import millis

CHUNK = 2000
"""Tasks per transaction of the migration."""
_TIME = 6
_PLACE = 3


def pack_time(text: str | None) -> bytes | str | None:
    """A time as its column keeps it (`packed_time`); None stays NULL."""
    return None if text is None else packed_time(text)


def packed_time(text: str) -> bytes | str:
    """A time as its milliseconds, as bytes (the column's text affinity would make an integer
    text), when they give its text back; else the text."""
    ms, exact = millis(text)
    return ms.to_bytes(_TIME) if exact and 0 <= ms < 1 << 48 else text


_LAST_MS = millis("9999-12-31T23:59:59.999Z")[0]
_PAST_ALL = b"\xff" * (_TIME + 1)
"""Above every packed time (bytes compare as memcmp, the longer after an equal start)."""


def time_bound(text: str) -> bytes:
    """What a packed time is compared to in SQL where its text was compared to `text` (a
    filter's, a cursor's, the judge's sweep's: `>=`, `<` and the rest hold alike): the
    smallest time whose text is at least `text`, packed. A time's own text gives its own
    bytes; any other (a date, a year, '') the first time at or after it in text order, found
    by halving (`iso_ms`'s text sorts as its milliseconds from 1970 to 9999)."""
    packed = packed_time(text)
    if isinstance(packed, bytes):
        return packed
    low, high = 0, _LAST_MS + 1
    while low < high:
        middle = (low + high) // 2
        if iso_ms(middle) >= text:
            high = middle
        else:
            low = middle + 1
    return _PAST_ALL if low > _LAST_MS else low.to_bytes(_TIME)


def unpack_time(stored: bytes | str | None) -> str | None:
    return None if stored is None else time_text(stored)


def time_text(stored: bytes | str) -> str:
    """The text of a time `packed_time` stored."""
    return iso_ms(int.from_bytes(stored)) if isinstance(stored, bytes) else stored


def pack_recorded(text: str | None) -> bytes | str | None:
    """`TaskState.recorded` as its column keeps it: bytes that sort as the text does, when
    they give it back."""
    if text is None:
        return None
    batch, _, place = text.rpartition("#")
    packed = _packed_batch(batch)
    if packed is None or len(place) != 6 or not place.isdigit():
        return text
    return packed + int(place).to_bytes(_PLACE)


def unpack_recorded(stored: bytes | str | None) -> str | None:
    if not isinstance(stored, bytes):
        return stored
    return f"{_batch_text(stored[:2 * _TIME])}#{str(int.from_bytes(stored[2 * _TIME:])).zfill(6)}"


@lru_cache(maxsize=1024)
def _packed_batch(batch: str) -> bytes | None:
    """A batch's first and last times (`folding.recorded_at`) as 12 bytes, None unless they
    give them back; remembered, as a batch's tasks share them."""
    first, _, last = batch.partition("#")
    low, high = pack_time(first), pack_time(last)
    return low + high if isinstance(low, bytes) and isinstance(high, bytes) else None


@lru_cache(maxsize=1024)
def _batch_text(packed: bytes) -> str:
    return f"{iso_ms(int.from_bytes(packed[:_TIME]))}#{iso_ms(int.from_bytes(packed[_TIME:]))}"


def compact_task_times(db: Database, number: int) -> bool:
    """The migration: every task's start and record moment compacted in place, in order of
    rowid from the first still text, a chunk per transaction, then the version set; whether it
    changed any (then `Database.migrate` vacuums the file)."""
    return in_place(db, number, "SELECT min(rowid) FROM tasks WHERE typeof(started_at) = 'text' "
                    "OR typeof(recorded) = 'text'", (), _compact)


def _compact(conn: sqlite3.Connection, start: int) -> int | None:
    """Compact up to `CHUNK` tasks from rowid `start` on; the rowid to go on from, None when
    none is left."""
    rows = conn.execute("SELECT rowid, started_at, recorded FROM tasks WHERE rowid >= ? "
                        "ORDER BY rowid LIMIT ?", (start, CHUNK)).fetchall()
    conn.executemany("UPDATE tasks SET started_at = ?, recorded = ? WHERE rowid = ?",
                     [(pack_time(started) if isinstance(started, str) else started,
                       pack_recorded(recorded) if isinstance(recorded, str) else recorded, rowid)
                      for rowid, started, recorded in rows
                      if isinstance(started, str) or isinstance(recorded, str)])
    return rows[-1][0] + 1 if len(rows) == CHUNK else None
