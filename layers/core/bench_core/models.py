"""Pydantic models of the wire format (the edge) and plain records of the domain (the inside).

The wire models are exactly what the original client sends (SPEC section 2); the records are
dataclasses because ingest builds thousands of them per second and needs no re-validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

SLUG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
LOGIN_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, to_lower=True)]
Label = Annotated[str, StringConstraints(max_length=200)]
TASK_KINDS = frozenset({"task.start", "task.log", "task.end"})


class WireEvent(BaseModel):
    """One event of a batch. Unknown keys are ignored so newer clients keep working."""

    model_config = ConfigDict(extra="ignore")

    id: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    kind: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    ts: datetime
    task_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None
    parent_task_id: Annotated[str, StringConstraints(max_length=128)] | None = None
    name: Annotated[str, StringConstraints(max_length=256)] | None = None
    input: Any = None
    output: Any = None
    data: Any = None
    status: Literal["success", "failed", "error"] | None = None
    duration_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    cost_breakdown: Annotated[list[dict[str, Any]], Field(min_length=1)] | None = None

    @field_validator("ts")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("parent_task_id")
    @classmethod
    def _blank_parent_is_none(cls, value: str | None) -> str | None:
        return value or None

    @model_validator(mode="after")
    def _task_events_name_their_task(self) -> WireEvent:
        if self.kind in TASK_KINDS and not self.task_id:
            raise ValueError(f"{self.kind} events need a task_id")
        if self.kind == "task.end" and self.status is None:
            raise ValueError("task.end events need a status (success or failed)")
        if self.status == "error":
            self.status = "failed"
        return self


class IngestBatch(BaseModel):
    """The body of `POST /ingest`."""

    model_config = ConfigDict(extra="ignore")

    agent_slug: Slug
    display_name: Label | None = None
    model: Label | None = None
    framework: Label | None = None
    architecture: Label | None = None
    tools: Annotated[list[Label], Field(max_length=100)] | None = None
    events: list[WireEvent]
    dropped: Annotated[int, Field(ge=0)] | None = None


class AgentSettingsPatch(BaseModel):
    """The body of `PATCH /api/agents/{login}/{slug}`: only the owner's privacy switches."""

    model_config = ConfigDict(extra="forbid")

    visibility: Literal["public", "private"] | None = None
    hide_inputs: bool | None = None
    hide_outputs: bool | None = None
    display_name: Label | None = None


# ---- domain records -------------------------------------------------------------------------


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime) -> str:
    """ISO-8601 with milliseconds and a Z, sortable as text (SQLite and DynamoDB sort keys)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


@dataclass(frozen=True)
class AgentRef:
    login: str
    slug: str

    @property
    def path(self) -> str:
        return f"{self.login}/{self.slug}"


@dataclass
class AgentMeta:
    """What a batch says about its agent; kept and updated on every batch that sends it."""

    slug: str
    display_name: str | None = None
    model: str | None = None
    framework: str | None = None
    architecture: str | None = None
    tools: list[str] | None = None

    def updates(self) -> dict[str, Any]:
        """The fields the batch actually sent, so a batch without them erases nothing."""
        return {k: v for k, v in (("display_name", self.display_name), ("model", self.model),
                                  ("framework", self.framework),
                                  ("architecture", self.architecture), ("tools", self.tools))
                if v is not None}


@dataclass
class AgentStats:
    runs: int = 0
    successes: int = 0
    failures: int = 0
    cost_usd_total: float = 0.0
    latency_hist: list[int] = field(default_factory=list)
    first_event_at: str | None = None
    last_event_at: str | None = None
    eval_count: int = 0
    eval_score_sum: float = 0.0
    dropped_events: int = 0


@dataclass
class Agent:
    login: str
    slug: str
    display_name: str | None = None
    model: str | None = None
    framework: str | None = None
    architecture: str | None = None
    tools: list[str] | None = None
    visibility: str = "public"
    hide_inputs: bool = False
    hide_outputs: bool = False
    created_at: str = ""
    stats: AgentStats = field(default_factory=AgentStats)

    @property
    def ref(self) -> AgentRef:
        return AgentRef(self.login, self.slug)

    @property
    def is_public(self) -> bool:
        return self.visibility == "public"


@dataclass
class CleanEvent:
    """A validated event with oversized values already truncated, ready to store and fold."""

    id: str
    kind: str
    ts: str
    task_id: str | None
    body: dict[str, Any]

    def get(self, name: str) -> Any:
        return self.body.get(name)


@dataclass
class TaskState:
    """A task as folded from its events so far; `version` guards optimistic concurrency."""

    task_id: str
    parent_task_id: str | None = None
    name: str | None = None
    status: str = "running"
    input: Any = None
    output: Any = None
    metadata: Any = None
    duration_ms: float | None = None
    cost_usd: float | None = None
    reported_cost_usd: float | None = None
    cost_logged_usd: float = 0.0
    child_cost_usd: float = 0.0
    cost_breakdown: list[dict[str, Any]] | None = None
    started_at: str | None = None
    ended_at: str | None = None
    version: int = 0

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    @property
    def sort_ts(self) -> str:
        return self.started_at or self.ended_at or ""


@dataclass(frozen=True)
class RunDelta:
    """What one finished root task adds to its agent's counters."""

    day: str
    success: bool
    duration_ms: float | None
    cost_usd: float


@dataclass
class IngestOutcome:
    accepted: int
    duplicates: int
    finished: list[tuple[str, bool]] = field(default_factory=list)
    """(task_id, is_root) of each task this batch finished, for evals and live pushes."""


@dataclass
class KeyRecord:
    key_hash: str
    prefix: str
    login: str
    agent_slug: str | None = None
    name: str | None = None
    created_at: str = ""
    last_used_at: str | None = None
    revoked_at: str | None = None

    @property
    def kind(self) -> str:
        return "agent" if self.agent_slug else "owner"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
