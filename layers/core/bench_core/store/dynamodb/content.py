"""A task's content (`models.TASK_CONTENT`: input, output, metadata, cost breakdown, logs) on
DynamoDB is kept once: in its events, on the pages its item lists (`codec.tasks.TaskLedger`),
not copied onto the item as well. A read that shows content folds it from them here.

Why: a task item is written whole on every fold, eval and subtask's cost, and DynamoDB bills a
write by the item's whole size, twice inside a transaction. With its content on it, a span
carrying 2 KB of messages cost some 12 write units a write, its item grew with every log up
to ~200 KB (past the 64 KB a task item may take), and the content was stored twice. Without
it, the item holds what the run's tree draws and what ingest folds (a few hundred bytes and
the bounded ledger), whatever the task says.

What it costs instead is on the read, and only where content is shown: the pages of the tasks
read (eventually consistent: a page is written once, before any task lists it, and never
changed; one missing from an eventually consistent answer is read again strongly), each
page once however many of the tasks it holds, 4 KB a read unit. Pages stay small
(`ingest.MAX_PAGE_BYTES`) so a span's content is a few read units, and as they never change a
process keeps the pages it read last (`PageCache`): the eval of a batch's runs, one after the
other, reads their page once, as does a run's JSON read page by page.

A task item written by older code holds its content itself (`content`, or one attribute per
field); it is read from there and kept up to date there by its next folds (`ingest`), so
nothing changes for it until it is finished.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from ...domain.folding import fold_task
from ...domain.models import TASK_CONTENT, CleanEvent, TaskState
from .client import Table
from .codec.keys import TASK, AgentKeys
from .codec.pages import StoredEvent, page_events, page_size
from .codec.tasks import chunk_task_id, page_chunk_keys, task_from_item, task_ledger, task_pages

LEDGER = ("pages", "page_chunks", "content")
"""What a read of task items fetches besides `codec.tasks.task_attributes` to fold content:
the item's page keys and chunk count (and content an older layout keeps on it)."""
CACHE_BYTES = 8_000_000
"""Pages a process keeps (some 250 of 32 KB): a Lambda has 1 GB or more."""


class PageCache:
    """The pages read last, by key, least recently used out first past `CACHE_BYTES`. Sound
    because a page never changes once written (`ingest.write_pages`); one that expired is
    only read here a little longer, where its task's reads would still list it."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self.limit = limit
        self._pages: OrderedDict[tuple[str, str], tuple[dict[str, Any], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        with self._lock:
            found = {}
            for key in keys:
                if key in self._pages:
                    self._pages.move_to_end(key)
                    found[key] = self._pages[key][0]
            return found

    def keep(self, pages: list[dict[str, Any]]) -> None:
        with self._lock:
            for page in pages:
                key, size = (page["pk"], page["sk"]), page_size(page)
                if key not in self._pages and size <= self.limit:
                    self._pages[key] = (page, size)
                    self._bytes += size
            while self._bytes > self.limit:
                _, (_, size) = self._pages.popitem(last=False)
                self._bytes -= size


class ContentReader:
    """Folds the content of tasks read from `table` from their pages (`with_content`)."""

    def __init__(self, table: Table, cache: PageCache | None = None) -> None:
        self.table = table
        self.cache = cache or PageCache()

    def with_content(self, agent: AgentKeys, items: list[dict[str, Any]]) -> list[TaskState]:
        """The tasks of `items` (task items as read, with `LEDGER`), each with its content:
        from the item where it keeps it, else folded from its events on its pages."""
        tasks = [task_from_item(item) for item in items]
        wanted = {item["sk"][len(TASK):]: item for item in items if not holds_content(item)}
        if not wanted:
            return tasks
        events = self.task_events(agent, wanted)
        return [_filled(task, events[task.task_id]) if task.task_id in wanted else task
                for task in tasks]

    def task_events(self, agent: AgentKeys, items: dict[str, dict[str, Any]]
                    ) -> dict[str, list[StoredEvent]]:
        """The stored events of each task (by id: its item as read), each event once (the copy
        that arrived first), in the order they arrived: the pages its item and its chunks
        list, read in one BatchGetItem (and one of the chunks, for a long history)."""
        where: dict[str, set[str]] = {}
        chunks = []
        for task_id, item in items.items():
            ledger = task_ledger(item)
            where[task_id] = set(ledger.pages)
            chunks += page_chunk_keys(agent, task_id, ledger)
        for chunk in self.table.batch_get(chunks, consistent=False) if chunks else ():
            where[chunk_task_id(chunk["sk"])] |= task_pages(chunk)
        kept: dict[str, dict[str, StoredEvent]] = {task_id: {} for task_id in items}
        for page in self._pages(agent, sorted(set().union(*where.values()))):
            for event in page_events(page):
                mine = kept.get(event.task_id or "")
                if mine is not None and (event.id not in mine or event.seq < mine[event.id].seq):
                    mine[event.id] = event
        return {task_id: sorted(found.values(), key=lambda e: e.seq)
                for task_id, found in kept.items()}

    def _pages(self, agent: AgentKeys, sks: list[str]) -> list[dict[str, Any]]:
        """Pages by key: those kept, the rest eventually consistent, and any a lagging answer
        missed strongly (one an older layout kept under the agent's key is found by its sort
        key, as `client.Table` reads it from there)."""
        kept = self.cache.take([(agent.pk_of(sk), sk) for sk in sks])
        found = {sk: page for (_, sk), page in kept.items()}
        for consistent in (False, True):
            missing = [sk for sk in sks if sk not in found]
            if not missing:
                break
            read = self.table.batch_get([agent.key(sk) for sk in missing], consistent=consistent)
            self.cache.keep(read)
            found |= {page["sk"]: page for page in read}
        return list(found.values())


def holds_content(item: dict[str, Any]) -> bool:
    """Whether a task item keeps its content itself (written by older code)."""
    return "content" in item or ("task" not in item and any(f in item for f in TASK_CONTENT))


def _filled(task: TaskState, events: list[StoredEvent]) -> TaskState:
    """`task` with the content its `events` fold to, folded as ingest folded them (in the
    order they arrived)."""
    folded = fold_task(None, task.task_id, [
        CleanEvent(id=e.id, kind=str(e.body.get("kind", "")), ts=e.ts, task_id=e.task_id,
                   body=e.body) for e in events])
    return replace(task, **{name: getattr(folded, name) for name in TASK_CONTENT})
