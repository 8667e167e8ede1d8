"""The Store port: everything Bench keeps, behind one interface with two adapters.

- `sqlite.SqliteStore`: the embedded default, one file in WAL mode.
- `dynamodb.DynamoStore`: one DynamoDB table for AWS.

Both pass the same contract suite (tests/contract). Ingest is the only complex write; both
adapters delegate its meaning to `bench_core.folding` and differ only in how they make it atomic.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Protocol

from ..config import Settings
from ..models import Agent, AgentMeta, AgentRef, CleanEvent, IngestOutcome, KeyRecord, TaskState


class Store(Protocol):
    # keys and users
    def create_key(self, record: KeyRecord) -> None: ...
    def key_by_hash(self, key_hash: str) -> KeyRecord | None: ...
    def list_keys(self, login: str | None = None) -> list[KeyRecord]: ...
    def revoke_key(self, key_hash: str, when: str) -> bool: ...
    def touch_key(self, key_hash: str, when: str) -> None: ...

    # agents
    def get_agent(self, ref: AgentRef) -> Agent | None: ...
    def list_agents(self, login: str) -> list[Agent]: ...
    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None: ...

    # ingest: dedupe by event id, fold, update counters -- atomically
    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome: ...

    # reads
    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]: ...
    def get_task(self, ref: AgentRef, task_id: str) -> TaskState | None: ...
    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]: ...
    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]: ...
    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]: ...
    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def encode_cursor(*parts: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[str]:
    """The parts of a cursor made by `encode_cursor`; ValueError for anything else."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError) as exc:
        raise ValueError("malformed cursor") from exc
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise ValueError("malformed cursor")
    return parts


def open_store(settings: Settings) -> Store:
    """The adapter the settings name; imports only that adapter (boto3 is slow to import)."""
    if settings.store == "dynamodb":
        from .dynamodb import DynamoStore

        return DynamoStore(settings.table_name)
    if settings.store == "sqlite":
        from .sqlite import SqliteStore

        return SqliteStore(settings.sqlite_path)
    raise ValueError(f"unknown BENCH_STORE {settings.store!r}: use sqlite or dynamodb")
