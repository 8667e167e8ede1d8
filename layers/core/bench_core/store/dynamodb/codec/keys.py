"""The keys of the items in an agent's partition (`AGENT#{login}#{slug}`), and the expiry every
item of a temporary agent carries."""

from __future__ import annotations

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
PAGE = "B#"
DAY = "DAY#"


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
        return to_item({"pk": self.pk, "sk": sk})

    def tasks_pk(self, parent: str | None) -> str:
        return f"TASKS#{self.name}#{_listing(parent)}"

    def status_pk(self, parent: str | None, status: str) -> str:
        return f"TSTATUS#{self.name}#{_listing(parent)}#{status}"

    def run_pk(self, run_id: str) -> str:
        """The `runs` index partition of every task recorded under run `run_id` (`domain.runs`)."""
        return f"RUN#{self.name}#{run_id}"


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
