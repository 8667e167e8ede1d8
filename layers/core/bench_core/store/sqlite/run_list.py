"""The runs list on SQLite (`domain/run_list.py` `RunFilter`): one query, its root filters on
the root's columns, its span filters over the run's spans, its search in an FTS5 index of every
span's name, input, output and model (`tasks_text`) where it finds few, in the filter's order
with a keyset cursor.

`tasks_text` is an external-content FTS5 table over `tasks` (it stores only its index, keyed by
the task's rowid, which VACUUM keeps) with the trigram tokenizer, so a search matches anywhere
inside a word as the other stores' does (`Portugal` in `"Portugal's capital"`). New spans join
it a thousand at a time, and a search reads those not in it yet beside what it finds
(`run_text.py`), and ingest keeps it as the spans in it change. The index keeps which spans
hold each trigram, not where (`NARROW_RUN_TEXT`): a search asks it for the spans holding every
trigram of the text and checks those; a search shorter than a trigram reads the run's spans
instead.

What SQL cannot say is asked of the domain's own functions: a model's provider
(`provider_of`, registered on the reader), and a root's packed metadata
(`run_list.metadata_holds`, read here over a bounded number of runs a page: `METADATA_SCAN`).
Each sort has an index of the roots in its order (`SORT_INDEXES`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ...domain.run_list import MISSING, RunFilter, metadata_holds, provider_of
from ...ports.store import RunsPage, decode_cursor, encode_cursor
from .connection import Database, migrated
from .ingest import TASK_COLS, task_from_row
from .packing import load_metadata
from .run_text import PENDING_TEXT, pending_spans
from .task_ids import read_id, stored_id
from .task_times import time_bound, time_text

TRIGRAM = 3
"""The shortest text the trigram index finds."""
PROBE = 2000
"""Spans the index may find for a span filter to be answered from it (`_span_clauses`)."""

COST = ("COALESCE(NULLIF(cost_usd, 0), NULLIF(json_extract(evidence, '$.cost_usd'), 0), 0.0)")
"""`run_list.headline_cost` in SQL (`pricing.cost_rule`)."""
TOKENS = ("CASE WHEN json_extract(evidence, '$.input_tokens') IS NULL "
          "AND json_extract(evidence, '$.output_tokens') IS NULL THEN NULL "
          "ELSE COALESCE(json_extract(evidence, '$.input_tokens'), 0) "
          "+ COALESCE(json_extract(evidence, '$.output_tokens'), 0) END")
"""`run_list.tokens` in SQL."""
SORTED = {column: f"COALESCE({expression}, {MISSING!r})" for column, expression in
          {"duration": "duration_ms", "cost": COST, "tokens": TOKENS,
           "score": "eval_score"}.items()}
"""Each sort's value as its index (`SORT_INDEXES`) holds it: the query names it alike."""
SORT_INDEXES = tuple(
    f"CREATE INDEX tasks_roots_by_{column} ON tasks (agent_id, {expression}, sort_ts, task_id) "
    "WHERE parent_task_id IS NULL" for column, expression in SORTED.items())
"""The roots in each sort's order: a sorted page reads its runs in order and stops, however
many runs the agent has (one entry per run in each, rewritten when its value changes)."""

_DELETE_OLD = """
    INSERT INTO tasks_text (tasks_text, rowid, name, input, output, called_model)
    VALUES ('delete', old.rowid, old.name, old.input, old.output, old.called_model);"""
_INSERT_NEW = """
    INSERT INTO tasks_text (rowid, name, input, output, called_model)
    VALUES (new.rowid, new.name, new.input, new.output, new.called_model);"""
RUN_TEXT_SCHEMA = (
    "CREATE VIRTUAL TABLE tasks_text USING fts5(name, input, output, called_model, "
    "content='tasks', content_rowid='rowid', tokenize='trigram')",
    f"CREATE TRIGGER tasks_text_insert AFTER INSERT ON tasks BEGIN {_INSERT_NEW} END",
    f"CREATE TRIGGER tasks_text_delete AFTER DELETE ON tasks BEGIN {_DELETE_OLD} END",
    "CREATE TRIGGER tasks_text_update AFTER UPDATE OF name, input, output, called_model "
    "ON tasks WHEN old.name IS NOT new.name OR old.input IS NOT new.input "
    "OR old.output IS NOT new.output OR old.called_model IS NOT new.called_model "
    f"BEGIN {_DELETE_OLD} {_INSERT_NEW} END",
    "INSERT INTO tasks_text (tasks_text) VALUES ('rebuild')",
    *SORT_INDEXES,
)
"""The search index and the triggers that keep it, built from the stored tasks, and the
sorts' indexes."""


NARROW_RUN_TEXT = (
    "DROP TABLE tasks_text",
    "CREATE VIRTUAL TABLE tasks_text USING fts5(name, input, output, called_model, "
    "content='tasks', content_rowid='rowid', tokenize='trigram', detail=none, columnsize=0)",
    "INSERT INTO tasks_text (tasks_text) VALUES ('rebuild')",
)
"""The search index without where each trigram is (`detail=none`) or each span's lengths
(`columnsize=0`): which spans hold a trigram, no more, a third of the bytes; the triggers of
`RUN_TEXT_SCHEMA` keep it as they kept the first."""


def _statements(db: Database, number: int, statements: tuple[str, ...]) -> bool:
    """Run `statements` and set the version to `number`, in one transaction (a stopped one
    leaves the file as it was, and runs again at the next open); whether the file held tasks
    (whose search index the statements may have built again, freeing the old one's pages)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
        return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM tasks)").fetchone()[0])


def add_run_text(db: Database, number: int) -> bool:
    """The migration adding the search index (`store.MIGRATIONS`): a step, as its triggers
    hold semicolons that a migration script would split on. It frees no pages."""
    _statements(db, number, RUN_TEXT_SCHEMA)
    return False


def pend_run_text(db: Database, number: int) -> bool:
    """The migration leaving new spans out of the search index until there are a chunk of
    them (`run_text.py`); it frees no pages."""
    _statements(db, number, PENDING_TEXT)
    return False


def narrow_run_text(db: Database, number: int) -> bool:
    """The migration rebuilding the search index as `NARROW_RUN_TEXT`; whether the old
    index's pages are free (then `Database.migrate` vacuums the file)."""
    return _statements(db, number, NARROW_RUN_TEXT)


_COLUMNS = ", ".join(f"r.{c}" for c in TASK_COLS.split(", "))


def _phrase(text: str) -> str:
    """`text` as one FTS5 string, whatever its characters."""
    return '"' + text.replace('"', '""') + '"'


def _trigrams(text: str) -> str:
    """The spans whose text holds every trigram of `text` (at least one `TRIGRAM` long): those
    that may hold `text`, which the query then checks (the index knows no positions)."""
    found = dict.fromkeys(text[i:i + TRIGRAM] for i in range(len(text) - TRIGRAM + 1))
    return " AND ".join(_phrase(trigram) for trigram in found)


def _register(reader: sqlite3.Connection) -> None:
    """The domain's function the query calls (cheap to register again on each read)."""
    reader.create_function("bench_provider", 1, provider_of, deterministic=True)


class _Query:
    """A WHERE clause and its arguments, built a filter at a time, and the table it reads:
    `tasks` by the list's order, or by key (`tasks_key`) for the few runs the index found."""

    def __init__(self) -> None:
        self.where: list[str] = []
        self.args: list[Any] = []
        self.table = "tasks r"

    def add(self, clause: str, *args: Any) -> None:
        self.where.append(clause)
        self.args.extend(args)

    def range(self, expression: str, low: float | None, high: float | None) -> None:
        if low is not None:
            self.add(f"{expression} >= ?", low)
        if high is not None:
            self.add(f"{expression} <= ?", high)


def _span_clauses(reader: sqlite3.Connection, where: RunFilter, agent_id: int, query: _Query
                  ) -> None:
    """For each span filter, the runs some span of which holds it. Where the search index
    finds few spans (`PROBE`: a rare word or model), the runs of those spans, read by key;
    else the runs in the list's order whose spans hold it, read run by run (`tasks_by_run`),
    which stops at the page's end: a common word fills a page from the newest runs."""
    columns = ("{t}.name", "{t}.input", "{t}.output") if where.content else ("{t}.name",)
    text = (where.text or "").lower()
    # In the order SQLite checks them run by run: the rarest first (a model, a text), the
    # provider (half of an agent's runs may match) last, so most runs fail early. `{t}` is the
    # table: the span's (`s`), or the root's (`r`), which the run's index leaves out.
    filters: list[tuple[str | None, str, list[Any], str | None]] = [
        (where.model, "{t}.called_model = ?", [where.model], _trigrams(where.model or "")),
        (where.text, "(" + " OR ".join(f"instr(lower({c}), ?) > 0" for c in columns) + ")",
         [text] * len(columns), _trigrams(where.text or "")),
        (where.provider, "bench_provider({t}.called_model) = ?", [where.provider], None),
    ]
    for value, exact, args, match in filters:
        if value is None:
            continue
        if match is not None and len(value) >= TRIGRAM and _rare(reader, match):
            query.add("r.task_id IN (SELECT s.run_id FROM tasks_text CROSS JOIN tasks s "
                      "ON s.rowid = tasks_text.rowid WHERE tasks_text MATCH ? "
                      f"AND s.agent_id = ? AND {exact.format(t='s')} "
                      f"UNION {pending_spans(exact.format(t='s'))})",
                      match, agent_id, *args, agent_id, *args)
            query.table = "tasks r INDEXED BY tasks_key"  # a few runs, read by key, sorted
        else:
            query.add(f"({exact.format(t='r')} OR EXISTS (SELECT 1 FROM tasks s WHERE "
                      "s.agent_id = r.agent_id AND s.run_id = r.task_id "
                      f"AND s.run_id != s.task_id AND {exact.format(t='s')}))", *args, *args)


def _rare(reader: sqlite3.Connection, expression: str) -> bool:
    """Whether the index finds at most `PROBE` spans for `expression` (of every agent)."""
    (found,) = reader.execute(
        "SELECT COUNT(*) FROM (SELECT 1 FROM tasks_text WHERE tasks_text MATCH ? LIMIT ?)",
        (expression, PROBE + 1)).fetchone()
    return bool(found <= PROBE)


def _bound(time: str | None) -> bytes | None:
    return None if time is None else time_bound(time)


def _filtered(reader: sqlite3.Connection, where: RunFilter, agent_id: int) -> _Query:
    query = _Query()
    query.add("r.agent_id = ?", agent_id)
    query.add("r.parent_task_id IS NULL")
    query.add("r.sort_ts != ''")
    for clause, value in (("r.status = ?", where.status), ("r.name = ?", where.name),
                          ("r.sort_ts >= ?", _bound(where.since)),
                          ("r.sort_ts < ?", _bound(where.until))):
        if value is not None:
            query.add(clause, value)
    query.range("r.duration_ms", where.duration.low, where.duration.high)
    query.range(COST, where.cost.low, where.cost.high)
    query.range(TOKENS, where.tokens.low, where.tokens.high)
    query.range("r.eval_score", where.score.low, where.score.high)
    _span_clauses(reader, where, agent_id, query)
    return query


def list_runs(reader: sqlite3.Connection, agent_id: int, where: RunFilter, limit: int,
              cursor: str | None) -> RunsPage:
    """One page of the agent's runs that `where` keeps, in its order, and the next cursor; a
    metadata filter looks at `METADATA_SCAN` runs a page at most (`_by_metadata`)."""
    _register(reader)
    query = _filtered(reader, where, agent_id)
    way = "DESC" if where.descending else "ASC"
    key = [*([SORTED[where.sort]] if where.sort != "started" else []), "r.sort_ts", "r.task_id"]
    if cursor:
        *value, sort_ts, task_id = where.position(decode_cursor(cursor))
        position = (*value, time_bound(sort_ts), stored_id(task_id))
        query.add(f"({', '.join(key)}) {'<' if where.descending else '>'} "
                  f"({', '.join('?' * len(key))})", *position)
    order = f"ORDER BY {', '.join(f'{k} {way}' for k in key)}"
    selected = f"FROM {query.table} WHERE {' AND '.join(query.where)} {order}"
    if where.by_metadata:
        return _by_metadata(reader, where, selected, query.args, key, limit)
    rows = reader.execute(f"SELECT {_COLUMNS} {selected} LIMIT ?",
                          (*query.args, limit + 1)).fetchall()
    return _page(where, rows, limit)


def _page(where: RunFilter, rows: list[Any], limit: int) -> RunsPage:
    runs = [task_from_row(r) for r in rows[:limit]]
    more = len(rows) > limit
    return RunsPage(runs, encode_cursor(*where.cursor_parts(runs[-1])) if more else None)


METADATA_SCAN = 5000
"""Runs a page of the list looks at for a metadata filter at most: the metadata is packed
(`packing.py`), read run by run (`run_list.metadata_holds`, some 5 µs each), so a filter that
keeps few runs looks this far, then says how far it looked and where the next page goes on."""


def _by_metadata(reader: sqlite3.Connection, where: RunFilter, selected: str,
                 args: list[Any], key: list[str], limit: int) -> RunsPage:
    """The runs the other filters keep, read in order (their metadata and place, no more) and
    kept here while their metadata holds the filter, up to a page or `METADATA_SCAN` runs;
    then the page's runs read whole by rowid. Where it looked at them all and the page is not
    full, it says how far it looked and the cursor goes on after the last."""
    cursor = reader.cursor()
    cursor.row_factory = None
    rows = cursor.execute(
        f"SELECT r.rowid, r.metadata, r.task_id, {', '.join(key)} {selected} LIMIT ?",
        (*args, METADATA_SCAN))
    kept: list[int] = []
    examined = 0
    last: tuple[Any, ...] = ()
    for rowid, metadata, task_id, *place in rows:
        examined += 1
        last = tuple(place)
        if metadata_holds(load_metadata(metadata, read_id(task_id)), where.meta, where.tag,
                          content=where.content):
            kept.append(rowid)
            if len(kept) > limit:
                break
    cursor.close()
    found = {row[0]: row[1:] for row in reader.execute(
        f"SELECT r.rowid, {_COLUMNS} FROM tasks r WHERE r.rowid IN "
        f"({', '.join('?' * len(kept))})", kept)} if kept else {}
    whole = [found[rowid] for rowid in kept if rowid in found]
    if len(kept) > limit or examined < METADATA_SCAN:
        return _page(where, whole, limit)
    *value, sort_ts, task_id = last
    parts = (*(repr(float(v)) if isinstance(v, int | float) else v for v in value),
             time_text(sort_ts), read_id(task_id))
    return RunsPage([task_from_row(r) for r in whole], encode_cursor(*parts), examined,
                    time_text(sort_ts))
