"""The keys of an agent's items, and the expiry every item of a temporary agent carries.

An agent's own items (`META`, its counter and day shards, its insights, ...) are under
`AGENT#{login}#{slug}`; its tasks, their chunks, its event pages and event claims, which a busy
agent writes by the thousand a second, are spread over `PARTITIONS` partition keys
`PART#{login}#{slug}#{n}`, `n` a hash of what names the item (the task's id, the page's key,
the event's id: `spread_id`). One partition key takes at most 1,000 write units a second: a
hot agent (2,000 events/s) writes some 3,300 (`tests/perf/load_model.py`), so one partition
key would throttle it; eight take some 400 each. The partition of an item follows from its sort
key alone, so every key a task item records (its pages) and every key an index entry gives
still names one item.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Any

from .values import Update, to_item

META = "META"
ROOT = "ROOT"
PARENT = "P#"
"""Task listings: roots are under `ROOT`, subtasks under `PARENT` + their parent's id, so no
client-chosen id (not even "ROOT") can name the root listing."""
TASK = "TASK#"
TASK_OVERFLOW = "TASKX#"
"""What a task item moved out of itself: `TASKX#{task_id}#S{n}` and `#P{n}`, sealed chunks of its
event digests and page keys (`codec.tasks.TaskLedger`). Not under `TASK`: no task read meets them."""
EVENT = "EV#"
PACK = "PACK#"
"""A pack of a trace's spans: `PACK#{trace_id}#{n}` (`codec.packs`), in its trace's partition."""
PAGE = "B#"
DAY = "DAY#"
AGENT = "AGENT#"
PART = "PART#"
PARTITIONS = 8
"""How many partition keys an agent's tasks and events are spread over. Never changed for a
table with data in it: the hash of an item's id picks one of them."""
CHUNK_SUFFIX = 8
"""`#S000001`: what follows the task id in a chunk's sort key (`codec.tasks`)."""


@dataclass(frozen=True)
class AgentKeys:
    """Every key that belongs to one agent (`AGENT` in the key design is `{login}#{slug}`).
    `expires_at` (epoch seconds) is set for a temporary agent: every item written for it
    carries it as its TTL (`expiring`), so DynamoDB deletes the agent whole."""

    login: str
    slug: str
    expires_at: int | None = None

    @property
    def name(self) -> str:
        return f"{self.login}#{self.slug}"

    @property
    def pk(self) -> str:
        return f"AGENT#{self.name}"

    def key(self, sk: str) -> dict[str, Any]:
        return to_item({"pk": self.pk_of(sk), "sk": sk})

    def pk_of(self, sk: str) -> str:
        """The partition key of the item with sort key `sk`: one of `partitions()` for a task,
        a chunk, a page or a claim, else the agent's own."""
        spread = spread_id(sk)
        if spread is None:
            return self.pk
        return self.partition(zlib.crc32(spread.encode()) % PARTITIONS)

    def partition(self, n: int) -> str:
        return f"{PART}{self.name}#{n}"

    def partitions(self) -> list[str]:
        return [self.partition(n) for n in range(PARTITIONS)]

    def tasks_pk(self, parent: str | None) -> str:
        return f"TASKS#{self.name}#{_listing(parent)}"

    def status_pk(self, parent: str | None, status: str) -> str:
        return f"TSTATUS#{self.name}#{_listing(parent)}#{status}"

    def run_pk(self, run_id: str) -> str:
        """The `runs` index partition of every task recorded under run `run_id` (`domain.runs`)."""
        return f"RUN#{self.name}#{run_id}"


def spread_id(sk: str) -> str | None:
    """What picks the partition of the item with sort key `sk`: a task's id (its chunks go with
    it), a page's key, a claimed event's id, a pack's trace; None for the agent's own items."""
    if sk.startswith(TASK):
        return sk[len(TASK):]
    if sk.startswith(TASK_OVERFLOW):
        return sk[len(TASK_OVERFLOW):-CHUNK_SUFFIX]
    if sk.startswith(PACK):  # every pack of a trace in one partition: one Query reads them
        return PACK + sk[len(PACK):].split("#", 1)[0]
    if sk.startswith((PAGE, EVENT)):
        return sk
    return None


def legacy_key(key: dict[str, Any]) -> dict[str, Any] | None:
    """Where an item of a spread partition (`key`, as sent to DynamoDB) was before the
    partitions existed: under its agent's own partition key (the table's migration moves it,
    `migration.py`); None for any other item."""
    pk = key["pk"]["S"]
    if not pk.startswith(PART):
        return None
    return to_item({"pk": AGENT + pk[len(PART):].rsplit("#", 1)[0], "sk": key["sk"]["S"]})


def _listing(parent: str | None) -> str:
    """Which listing a task is in: the roots, or its parent's subtasks (`PARENT`)."""
    return ROOT if parent is None else PARENT + parent


def task_sort_key(sort_ts: str, task_id: str) -> str:
    """Sorts like SQLite's `(sort_ts, task_id)`: every sort_ts has the same length. A task seen
    only through logs has no sort_ts, so its key starts with `#`, before every real one."""
    return f"{sort_ts}#{task_id}"


def temporary(agent: AgentKeys, item: dict[str, Any] | None) -> AgentKeys:
    """`agent` with the expiry its stored agent `item` holds, if it is a temporary agent."""
    if item is None or item.get("expires_at") is None:
        return agent
    return replace(agent, expires_at=int(item["expires_at"]))


def expiry(agent: AgentKeys) -> dict[str, Any]:
    """The TTL attribute of an item of `agent`: none unless it is temporary."""
    return {} if agent.expires_at is None else {"expires_at": agent.expires_at}


def expiring(update: Update, agent: AgentKeys) -> Update:
    update.set |= expiry(agent)
    return update
