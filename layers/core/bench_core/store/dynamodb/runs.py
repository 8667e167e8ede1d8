"""Runs on DynamoDB (`bench_core.domain.runs`; SQLite's side is `sqlite_runs`).

- Every task item carries `run_id`, and every span below a root its entry in the `spans`
  index (`codec.spans`): `spk` = `RUN#{A}#{run_id}`, `ssk` = `{sort_ts}#{task_id}`, and the
  row the run page draws. A run is its root (read by key, its id is the run's) and its spans
  in start order in `spans`, read a page at a time: one Query from a key on (`#sk > :after`),
  `Limit` the page, never a Scan; the spans' content is read by key, only for what is shown
  (the page's selected span; the JSON's page, `run_spans` with `content`). What the header
  counts is one Query of the partition that returns only the failed spans' keys
  (`run_counts`). Tasks written before `spans` are in `runs` (ALL) until the table's
  migration rewrites them: every read of a run queries it too, which costs half a read unit
  once it is empty, until the deployment that drops it.
- A parent not stored yet that subtasks record as their run is a placeholder whose `run_id` is
  its own id (`codec.tasks.child_cost_update`); when it arrives with a parent of its own, the tasks
  under it move to its run (`ingest.move_runs`: one Query of its old run (per index), one conditional update per
  task moved, each bumping `version` so a concurrent fold of that task is redone). A task
  written meanwhile under the old run may be missed (the index lags the table): the moved
  task keeps `moved_at`, and a read of its new run within `SETTLED` of the move reads such
  stragglers from the old run too (`_stragglers`); the table's migration moves them for good
  (`migration.py`).
- Tasks written before runs existed have no `run_id`: a read of their run walks its tree
  through the subtask listings and takes the log entries from the stored events
  (`unmigrated_run`), until the table's migration stores the tree so; from then on it is one
  Query.
- Reads never write: whatever an old layout or a race left behind is read as it is, and put
  right by the migration (`migration.py`), which the deployment runs.
- The runs list reads the roots newest first (`tasks`, or `tstatus` for one status; KEYS_ONLY
  indexes, so the roots are then read by key) and filters them here, reading by key only as
  many roots as the page still lacks (a page of N unfiltered runs reads N items; a filter
  reads on, what it skips included) and one index key more to know whether the list goes on;
  it looks at no more than `SCAN_LIMIT` roots per page: a page may hold fewer runs than asked,
  with a cursor to read on. A span filter (model, provider, the text search) reads each root's
  spans, no more than `SEARCH_SPANS` a page, and a sort by another column than the start sorts
  the newest `SCAN_LIMIT` roots: such a page says how far it looked (`RunsPage`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from ...domain.models import AgentRef, TaskState, iso
from ...domain.run_list import RunFilter
from ...domain.runs import append_log, span_key
from ...domain.sessions import SessionFilter, SessionRun, SessionStats, list_key
from ...ports.store import (
    FAILURES_KEPT,
    RunCounts,
    RunHead,
    RunsPage,
    SessionsPage,
    decode_cursor,
    encode_cursor,
    sorted_page,
)
from .agents import live_agent
from .client import Table
from .codec.keys import META, TASK, AgentKeys, task_sort_key
from .codec.packs import PACK_ROW, pack_trace, spans_of, unique_spans
from .codec.sessions import (
    session_from_item,
    session_prefix,
    session_runs_from_item,
    sessions_pk,
)
from .codec.spans import FAILED_ROW, SPAN_ATTRIBUTES
from .codec.tasks import task_attributes, task_from_item
from .codec.values import to_item
from .content import LEDGER, ContentReader
from .evals import INSIGHTS, insights_from_item
from .ingest import read_task_events, started_task
from .packs import packed, read_tasks

SCAN_LIMIT = 1000
"""Roots the runs list examines per page at most."""
SEARCH_SPANS = 5000
"""Spans a page of the runs list reads at most to search runs by their spans."""
SETTLED = timedelta(minutes=15)
"""How long after a move its index entries may still show tasks under the old run: far beyond
DynamoDB's index lag, which is normally under a second. Reads look for stragglers that long."""
_LOWEST = "0"
"""Every real sort key starts with a digit (placeholders start with `#`)."""


class DynamoRuns:
    """Reading runs on `table`: one Query of `runs` per run, the roots newest first for the
    list; the content of what is shown from its events (`content`)."""

    def __init__(self, table: Table, content: ContentReader) -> None:
        self.table = table
        self.content = content

    def run_head(self, ref: AgentRef, task_id: str) -> RunHead:
        """One BatchGetItem (strongly consistent, as each GetItem would be) of the agent, the
        task and the insights items; then the task's content from its pages."""
        agent = AgentKeys(ref.login, ref.slug)
        found = {item["sk"]: item for item in self.table.batch_get(
            [agent.key(META), agent.key(TASK + task_id), agent.key(INSIGHTS)])}
        if TASK + task_id not in found and pack_trace(task_id):
            found |= {item["sk"]: item for item in packed(self.table, agent, [task_id]).values()}
        task = started_task(found.get(TASK + task_id))
        return RunHead(live_agent(found.get(META), iso(self.table.clock.now())),
                       task and self.content.with_content(agent, [found[TASK + task_id]])[0],
                       insights_from_item(found.get(INSIGHTS)))

    def run_spans(self, ref: AgentRef, run: TaskState, *, limit: int,
                  after: tuple[str, str] | None = None, content: bool = True,
                  inputs: bool = True, outputs: bool = True) -> list[TaskState]:
        """One Query of `spans` from `after` on, `Limit` the page, which reads each span's row
        (`codec.spans`: some 300 bytes whatever the span holds); with `content`, the page's
        spans are then read by key (eventually consistent, as the index is; 100 a request,
        only what a task read uses). Tasks the table's migration has not rewritten yet come
        from `runs` (one more Query, which finds none once it has run)."""
        agent = AgentKeys(ref.login, ref.slug)
        if run.run_id is None:
            spans = self._unmigrated(agent, run)
            return [s for s in spans if after is None or span_key(s) > after][:limit]
        wanted = limit
        while True:
            items, bound = self._members(agent, run.task_id, after=after, limit=wanted)
            items += self._stragglers(agent, run.task_id, items)
            found = sorted(unique_spans(found for item in items
                                        for found in _entries(item, run.task_id)),
                           key=lambda found: span_key(found[1]))
            page = _page([f for f in found if after is None or span_key(f[1]) > after], limit)
            if bound is None or not page or task_sort_key(*span_key(page[-1][1])) <= bound:
                break
            wanted *= 2  # a pack ran on past the spans read: read on to its end
        spans = [span for _, span in page]
        if not content:
            return spans
        return self._whole(agent, spans, {span.task_id: entry["pack"] for entry, span in page
                                          if "pack" in entry})

    def _members(self, agent: AgentKeys, run_id: str, *, after: tuple[str, str] | None = None,
                 limit: int | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """The entries of the spans recorded under `run_id` from `after` on, the first `limit`
        of each index (of `spans`, and of `runs` for tasks not migrated yet, one Query each),
        without a root indexed before roots were left out; and the place up to which every
        span is read (None: all are), as a pack's spans may go on past the entries read."""
        root = TASK + run_id
        items: list[dict[str, Any]] = []
        bound: str | None = None
        for index, projection in _ENTRIES:
            page = None if limit is None else limit + 1
            if after is None:
                found = self.table.query(agent.run_pk(run_id), "#sk >= :low", index=index,
                                         page=page, projection=projection, low=_LOWEST)
            else:
                found = self.table.query(agent.run_pk(run_id), "#sk > :after", index=index,
                                         page=page, projection=projection,
                                         after=task_sort_key(*after))
            read = list(itertools.islice((i for i in found if i["sk"] != root), limit))
            if read and len(read) == limit:
                last = task_sort_key(*span_key(_entries(read[-1], run_id)[0][1]))
                bound = last if bound is None else min(bound, last)
            items += read
        return items, bound

    def _whole(self, agent: AgentKeys, page: list[TaskState], packs: dict[str, str]
               ) -> list[TaskState]:
        """The tasks of `page` read whole by key, in its order (one gone meanwhile as it
        was; a packed one from its pack, `packs`)."""
        items = read_tasks(self.table, agent, [t.task_id for t in page], consistent=False,
                           projection=(*task_attributes(), *LEDGER), packs=packs)
        found = {task.task_id: task for task in self.content.with_content(agent, items)}
        whole = []
        for light in page:
            task = found.get(light.task_id, light)
            task.run_id = light.run_id
            whole.append(task)
        return whole

    def run_counts(self, ref: AgentRef, run: TaskState) -> RunCounts:
        """One Query of the run's `spans` partition that counts every span (`ScannedCount`)
        and returns only the keys of the failed ones (their rows say so first); one more of
        `runs` for tasks not migrated yet (where a root indexed before roots were left out is
        not counted). Memory stays at a page whatever the run's size, though DynamoDB reads
        (and bills) the partitions' entries whole: some 300 bytes a span."""
        agent = AgentKeys(ref.login, ref.slug)
        if run.run_id is None:
            tree = self._unmigrated(agent, run)
            failures = [span_key(s) for s in tree if s.status == "failed"]
            return RunCounts(len(tree), len(failures), failures[0][1] if failures else None,
                             tuple(failures[:FAILURES_KEPT]))
        root = TASK + run.task_id
        spans = 0
        failed: list[tuple[str, str]] = []
        for index, sort, where, names, values in _FAILED:
            params = self.table.query_params(agent.run_pk(run.task_id), "#sk >= :low",
                                             index=index, projection=("sk", sort, "row"),
                                             low=_LOWEST)
            params["FilterExpression"] = "#key = :root OR " + where
            params["ExpressionAttributeNames"] |= {"#key": "sk", **names}
            params["ExpressionAttributeValues"] |= to_item({":root": root, **values})
            for answer in self.table.answers(params):
                spans += answer["ScannedCount"]
                for item in answer["Items"]:
                    if item["sk"] == root:
                        spans -= 1
                    elif item.get("row", "").startswith(PACK_ROW):  # a pack: its spans
                        inside = spans_of(item, run.task_id)
                        spans += len(inside) - 1
                        failed += [(entry["ssk"], span.task_id) for entry, span in inside
                                   if span.status == "failed"]
                    else:
                        failed.append((item[sort], item["sk"][len(TASK):]))
        kept = tuple((key.split("#", 1)[0], task_id)
                     for key, task_id in sorted(failed)[:FAILURES_KEPT])
        return RunCounts(spans, len(failed), kept[0][1] if kept else None, kept)

    def _stragglers(self, agent: AgentKeys, run_id: str, items: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
        """Tasks still recorded under a run that moved into this one within `SETTLED`
        (`ingest.move_runs` missed them: a concurrent batch wrote them while the index lagged),
        read from the old run as this run's (the table's migration moves them for good)."""
        found: list[dict[str, Any]] = []
        known = {item["sk"] for item in items}
        now = self.table.clock.now()
        moved = [item for item in items if _recently_moved(item, now)]
        while moved:
            old = moved.pop()["sk"][len(TASK):]
            for item in self._members(agent, old)[0]:
                if item["sk"] in known:  # moved meanwhile, and read from this run already
                    continue
                known.add(item["sk"])
                found.append(item)
                if _recently_moved(item, now):
                    moved.append(item)
        return found

    def _unmigrated(self, agent: AgentKeys, root: TaskState) -> list[TaskState]:
        """The spans of a run stored before runs existed, in start order; `root` comes out with
        its log entries, as the migration stores them (`unmigrated_run`)."""
        root.logs = stored_logs(self.table, agent, root.task_id)
        return sorted(unmigrated_run(self.table, agent, root), key=span_key)

    def session_runs(self, ref: AgentRef, session_id: str, *, limit: int
                     ) -> tuple[SessionStats | None, list[SessionRun]]:
        """One Query of the agent's key: the session's counters, then the items listing its
        runs (`codec.sessions`), eventually consistent (half the units). An item's runs come
        at or after its key, so the read stops at an item once `limit` runs come before it;
        a run on two items (a batch sent again, cut otherwise) is taken once."""
        agent = AgentKeys(ref.login, ref.slug)
        head = session_prefix(session_id)
        params = self.table.query_params(agent.pk, "begins_with(#sk, :head)", head=head)
        params["ConsistentRead"] = False
        params["Limit"] = limit + 1
        stats: SessionStats | None = None
        found: dict[str, tuple[str, SessionRun]] = {}
        for item in self.table.pages(params):
            if item["sk"] == head:
                stats = session_from_item(item)
                continue
            start = item["sk"][len(head):]
            if sum(1 for key, _ in found.values() if key < start) >= limit:
                break
            for key, run in session_runs_from_item(item, head):
                found.setdefault(run.run_id, (key, run))
        return stats, [run for _, run in sorted(found.values(), key=lambda kept: kept[0])[:limit]]

    def list_sessions(self, ref: AgentRef, where: SessionFilter, *, limit: int,
                      cursor: str | None = None) -> SessionsPage:
        """The agent's sessions on `gsi1`, newest first, bounded by when they began (the
        cursor's too) in the key condition; a user or status is kept as read."""
        agent = AgentKeys(ref.login, ref.slug)
        upper = min((b for b in (where.until, decode_cursor(cursor)[0] if cursor else None)
                     if b is not None), default="\uffff")
        lower = where.since or "0"  # every key begins with a year
        params = self.table.query_params(sessions_pk(agent), "#sk BETWEEN :low AND :high",
                                         index="gsi1", forward=False, low=lower, high=upper)
        params["Limit"] = limit + 1
        kept: list[SessionStats] = []
        for item in self.table.pages(params):
            if item["gsi1sk"] >= upper:  # BETWEEN holds its bound: a cursor's is the last shown
                continue
            session = session_from_item(item)
            if where.holds(session):
                kept.append(session)
                if len(kept) > limit:
                    break
        more = len(kept) > limit
        return SessionsPage(kept[:limit], encode_cursor(list_key(kept[limit - 1]))
                            if more else None)

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> RunsPage:
        """The roots by start, read by key `limit` at a time and kept by `where`; a span
        filter reads each kept root's spans (rows; with content only for the owner's search)
        up to `SEARCH_SPANS` a page. Another order than newest first sorts the newest
        `SCAN_LIMIT` roots (a page of them at a time). Where a page searched spans or sorted,
        it says how many roots it looked at and back to when."""
        agent = AgentKeys(ref.login, ref.slug)
        if where.sort != "started":
            return self._sorted(agent, where, limit, cursor)
        keys = self._root_keys(agent, where, cursor, min(SCAN_LIMIT, limit) + 1)
        search = _Search(SEARCH_SPANS)
        while len(search.kept) < limit and search.examined < SCAN_LIMIT and not search.stopped:
            wanted = list(itertools.islice(
                keys, min(limit - len(search.kept), SCAN_LIMIT - search.examined)))
            if not wanted:
                return search.page(where, search.kept, None)
            self._examine(agent, wanted, where, search)
        last = search.last
        if last is None or (not search.stopped and next(keys, None) is None):
            return search.page(where, search.kept, None)
        return search.page(where, search.kept, encode_cursor(last.sort_ts, last.task_id))

    def _root_keys(self, agent: AgentKeys, where: RunFilter, cursor: str | None,
                   page: int) -> Iterator[dict[str, Any]]:
        """The roots' index keys by start (`tasks`, or `tstatus` for one status), newest first
        unless `where` sorts up, after `cursor`."""
        index, pk, sort = (("tasks", agent.tasks_pk(None), "tlsk") if where.status is None
                           else ("tstatus", agent.status_pk(None, where.status), "tssk"))
        down = where.descending
        if not cursor:
            return iter(self.table.query(pk, "#sk >= :low", index=index, forward=not down,
                                         page=page, low=_LOWEST))
        after = task_sort_key(*where.position(decode_cursor(cursor)))
        if not down:
            return iter(self.table.query(pk, "#sk > :after", index=index, page=page,
                                         after=after))
        keys = self.table.query(pk, "#sk BETWEEN :low AND :after", index=index,
                                forward=False, page=page, low=_LOWEST, after=after)
        return (item for item in keys if item[sort] != after)

    def _roots(self, agent: AgentKeys, keys: list[dict[str, Any]], where: RunFilter
               ) -> Iterable[TaskState]:
        """The roots of `keys` read by key; with content where a filter reads it (the owner's
        search, a metadata filter)."""
        items = self.table.get_all([agent.key(k["sk"]) for k in keys], consistent=False)
        if (where.content and where.text) or where.by_metadata:
            return self.content.with_content(agent, items)
        return map(task_from_item, items)

    def _keeps(self, agent: AgentKeys, root: TaskState, where: RunFilter,
               search: _Search) -> bool | None:
        """Whether `where` keeps the run of `root`, reading its spans a page at a time while
        `search` has spans left; None (and `search` stopped) where it ran out first, unless
        this is the page's first root (judged on the spans it read: the page moves on)."""
        if not where.keeps_root(root):
            return False
        pending = [test for test in where.span_tests() if not test(root)]
        ref = AgentRef(agent.login, agent.slug)
        after: tuple[str, str] | None = None
        while pending and (asked := min(100, search.spans_left)) > 0:
            spans = self.run_spans(ref, root, limit=asked, after=after,
                                   content=where.content and bool(where.text))
            search.spans_left -= len(spans)
            pending = [test for test in pending if not any(test(s) for s in spans)]
            if pending and len(spans) < asked:
                return False
            after = span_key(spans[-1])
        if not pending:
            return True
        if not search.examined:  # a run bigger than the search: judged on what it read
            return False
        search.stopped = True
        return None

    def _sorted(self, agent: AgentKeys, where: RunFilter, limit: int, cursor: str | None
                ) -> RunsPage:
        """A page of the newest `SCAN_LIMIT` roots that `where` keeps, in its order."""
        newest = replace(where, sort="started", descending=True)
        keys = list(itertools.islice(self._root_keys(agent, newest, None, SCAN_LIMIT + 1),
                                     SCAN_LIMIT + 1))
        search = _Search(SEARCH_SPANS)
        self._examine(agent, keys[:SCAN_LIMIT], where, search)
        found = sorted_page(where, search.kept, cursor, limit)
        search.stopped = search.stopped or len(keys) > SCAN_LIMIT
        return search.page(where, found.runs, found.next_cursor)

    def _examine(self, agent: AgentKeys, keys: list[dict[str, Any]], where: RunFilter,
                 search: _Search) -> None:
        """The roots of `keys` in order, those `where` keeps added to `search`'s, until its
        spans run out."""
        for root in self._roots(agent, keys, where):
            held = self._keeps(agent, root, where, search)
            if held is None:
                return
            search.examined += 1
            search.last = root
            if held:
                search.kept.append(root)


@dataclass
class _Search:
    """How far a page of the runs list looked: roots examined, spans it may still read, and
    whether it stopped before the list's end."""

    spans_left: int
    examined: int = 0
    stopped: bool = False
    kept: list[TaskState] = field(default_factory=list)
    last: TaskState | None = None
    """The last root examined."""

    def page(self, where: RunFilter, runs: list[TaskState], cursor: str | None) -> RunsPage:
        """The page, saying how far it looked where it searched spans or sorted: how many
        roots, and the start of the last one where older ones are left (by the start, for
        the next page; else for good)."""
        if not where.by_spans and where.sort == "started":
            return RunsPage(runs, cursor)
        left = self.stopped or (where.sort == "started" and cursor is not None)
        return RunsPage(runs, cursor, self.examined,
                        self.last.sort_ts if left and self.last is not None else None)


_ENTRIES = (("spans", SPAN_ATTRIBUTES),
            ("runs", (*task_attributes(content=False), "moved_at")))
"""What a read of a run's spans fetches of each index's entries (`runs`: tasks written before
`spans`, whole)."""
_FAILED = (("spans", "ssk", "begins_with(#row, :failed) OR begins_with(#row, :pack)",
            {"#row": "row"}, {":failed": FAILED_ROW, ":pack": PACK_ROW}),
           ("runs", "gsi3sk", "contains(#task, :failed) OR #status = :status",
            {"#task": "task", "#status": "status"},
            {":failed": '"status":"failed"', ":status": "failed"}))
"""Each index's sort key and the filter that keeps its failed spans (and the packs, whose rows
say which of theirs failed; besides a root indexed before roots were left out; `status`: an
item's layout before `task`)."""


def _entries(item: dict[str, Any], run_id: str) -> list[tuple[dict[str, Any], TaskState]]:
    """The spans of an entry of `spans` (its row, or a pack's rows: `codec.packs.spans_of`) or
    of `runs` (its task), as of run `run_id`, each with its entry."""
    if "row" in item:
        return spans_of(item, run_id)
    task = task_from_item(item)
    task.run_id = run_id
    return [(item, task)]


def _page(found: list[tuple[dict[str, Any], TaskState]], limit: int
          ) -> list[tuple[dict[str, Any], TaskState]]:
    """The first `limit` spans of `found` (in order, each with its entry), and the rest of
    every pack they hold with the spans between: a pack's entry is at its first span's place,
    so the next page, read from this page's last span on, would not read it again. So a page
    holds a pack whole, and may hold a few more spans than `limit`."""
    n = min(limit, len(found))
    while True:
        packs = {entry["pack"] for entry, _ in found[:n] if "pack" in entry}
        end = max((i + 1 for i, (entry, _) in enumerate(found) if entry.get("pack") in packs),
                  default=0)
        if end <= n:
            return found[:n]
        n = end


def _recently_moved(item: dict[str, Any], now: datetime) -> bool:
    """A task moved into another run (`ingest.move_runs`) less than `SETTLED` before `now`."""
    moved = item.get("moved_at")
    return moved is not None and now - datetime.fromisoformat(moved) <= SETTLED


def unmigrated_run(table: Table, agent: AgentKeys, root: TaskState) -> list[TaskState]:
    """Every task below `root`, a run stored before runs existed (its root has no `run_id`),
    found through the subtask listings level by level, each with the run's id; one stored before
    runs existed too (no `run_id`) kept no log entries, which are then taken from its stored
    events. The read of such a run takes it from here, and so does the table's migration,
    which stores it (`migration.py`)."""
    run_id = root.task_id
    level = [run_id]
    tree: list[TaskState] = []
    seen = {run_id}
    while level:
        found = []
        for parent in level:
            keys = [agent.key(item["sk"])
                    for item in table.query(agent.tasks_pk(parent), index="tasks")]
            for item in table.get_all(keys):
                task = task_from_item(item)
                if task.task_id not in seen:
                    seen.add(task.task_id)
                    found.append(task.task_id)
                    tree.append(task)
        level = found
    for task in tree:
        if task.run_id is None:
            task.logs = stored_logs(table, agent, task.task_id)
        task.run_id = run_id
    return tree


def stored_logs(table: Table, agent: AgentKeys, task_id: str) -> list[dict[str, Any]]:
    """A task's log entries from its stored events, as folding keeps them (`append_log`)."""
    logs: list[dict[str, Any]] = []
    for body in read_task_events(ContentReader(table), agent, task_id):
        if body.get("kind") == "task.log":
            append_log(logs, body.get("ts", ""), body.get("data"))
    return logs
