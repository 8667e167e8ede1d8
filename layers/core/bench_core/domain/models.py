"""Pydantic models of the wire format (the edge) and plain records of the domain (the inside).

The wire models are exactly what the original client sends (SPEC section 2); the records are
dataclasses because ingest builds thousands of them per second and needs no re-validation.
The wire models build their validators on first use (`defer_build`), so a Lambda that never
validates one (badge, eval, live) does not pay for them at import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from dataclasses import fields as fields_of
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .field_limits import (
    ID_RULE,
    SESSION_RULE,
    TIME_RULE,
    VERSION_RULE,
    id_allowed,
    limit_agent_names,
    session_from_label,
    time_in_range,
    version_allowed,
)
from .pricing import (
    DROPPED,
    evidence_problems,
    headline_fields,
    is_cost_log,
    is_evidence,
    price_evidence,
    typed_cost_log,
)

SLUG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
LOGIN_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, to_lower=True)]
MAX_COST_USD = 1_000_000.0
"""The most one task (or one cost log) may cost: far above any real run, far below where sums
of many tasks would lose precision (DynamoDB clamps numbers at 1e15)."""
MAX_DURATION_MS = 30 * 24 * 3600 * 1000.0
"""The longest a task may take: 30 days."""
Cost = Annotated[float, Field(ge=0, le=MAX_COST_USD, allow_inf_nan=False)]
Label = Annotated[str, StringConstraints(max_length=200)]
TASK_KINDS = frozenset({"task.start", "task.log", "task.end"})


class WireEvent(BaseModel):
    """One event of a batch. Unknown keys are ignored so newer clients keep working."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: str
    kind: Annotated[str, StringConstraints(min_length=1)]
    ts: datetime
    task_id: str | None = None
    parent_task_id: str | None = None
    name: str | None = None
    input: Any = None
    output: Any = None
    data: Any = None
    status: Literal["success", "failed", "error"] | None = None
    duration_ms: Annotated[float, Field(ge=0, le=MAX_DURATION_MS, allow_inf_nan=False)] | None = None
    cost_usd: Cost | None = None
    cost_breakdown: Annotated[list[dict[str, Any]], Field(min_length=1)] | None = None
    session_id: str | None = None
    """The conversation the task's run is part of (`domain.sessions`): a root's counts."""
    user_id: str | None = None
    """Who the run was for (`domain.sessions`): shown to others than the owner as a pseudonym."""

    @field_validator("session_id", "user_id", mode="before")
    @classmethod
    def _session_fits(cls, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(SESSION_RULE)
        return session_from_label(value)

    @field_validator("ts")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        try:
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
            raise ValueError(TIME_RULE) from None
        if not time_in_range(value):
            raise ValueError(TIME_RULE)
        return value

    @field_validator("parent_task_id")
    @classmethod
    def _blank_parent_is_none(cls, value: str | None) -> str | None:
        return cls._ids_name_pages(value or None)

    @field_validator("id", "task_id")
    @classmethod
    def _ids_name_pages(cls, value: str | None) -> str | None:
        if value is not None and not id_allowed(value):
            raise ValueError(ID_RULE)
        return value

    @field_validator("data")
    @classmethod
    def _cost_logs_are_costs(cls, value: Any, info: ValidationInfo) -> Any:
        """A `cost` log's amount adds to its task's cost, so it is held to `cost_usd`'s range;
        an amount that is not a number is content, stored as such (`pricing.typed_cost_log`)."""
        if info.data.get("kind") == "task.log" and is_cost_log(value):
            amount = value.get("cost_usd")
            if isinstance(amount, int | float) and not isinstance(amount, bool) \
                    and not 0 <= amount <= MAX_COST_USD:
                raise ValueError(f"a cost log's cost_usd must be from 0 to {MAX_COST_USD:.0f} USD")
            return typed_cost_log(value)
        return value

    @model_validator(mode="after")
    def _task_rules(self) -> WireEvent:
        """Task events name their task, an end its status. Evidence cost comes from Bench's
        price table, never from the sender, and evidence holds names and numbers only
        (`pricing`); what was dropped is noted in the record (`DROPPED`: field and reason,
        never the value) for the answer to say. One validator: one call per event of a batch
        less (each is a Python call from pydantic-core's loop)."""
        if self.kind in TASK_KINDS and not self.task_id:
            raise ValueError(f"{self.kind} events need a task_id")
        if self.kind == "task.end" and self.status is None:
            raise ValueError("task.end events need a status (success or failed)")
        if self.status == "error":
            self.status = "failed"
        if self.kind == "task.log" and is_evidence(self.data):
            problems = evidence_problems(self.data)
            self.data = price_evidence(self.data)
            if problems:
                self.data[DROPPED] = [list(problem) for problem in problems]
        return self


class IngestBatch(BaseModel):
    """The body of `POST /ingest`. Names too long for the field limits are cut, not refused
    (`AgentMeta`, and each event as it is cleaned)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    agent_slug: Slug
    display_name: str | None = None
    model: str | None = None
    framework: str | None = None
    architecture: str | None = None
    tools: list[str] | None = None
    version: str | None = None
    """The sending agent's version (`domain.versions`), from `observe(version=...)`."""
    events: list[WireEvent]
    dropped: Annotated[int, Field(ge=0)] | None = None

    @field_validator("version")
    @classmethod
    def _version_fits(cls, value: str | None) -> str | None:
        if value is not None and not version_allowed(value):
            raise ValueError(VERSION_RULE)
        return value


class AgentSettingsPatch(BaseModel):
    """The body of `PATCH /api/agents/{login}/{slug}`: the owner's privacy switches and judge
    budget (`bench_core.domain.judge_budget`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    visibility: Literal["public", "private"] | None = None
    hide_inputs: bool | None = None
    hide_outputs: bool | None = None
    display_name: Label | None = None
    judge_daily_budget_usd: Annotated[float, Field(ge=0, le=1000, allow_inf_nan=False)] | None = None
    judge_sample_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None


# ---- domain records -------------------------------------------------------------------------


def iso(value: datetime) -> str:
    """ISO-8601 with milliseconds and a Z, sortable as text (SQLite and DynamoDB sort keys).
    Already-UTC values (validated wire times, a clock's `now`) skip the conversion: ingest formats
    every event's time."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return iso_ms(epoch_ms(value))


def epoch_ms(value: datetime) -> int:
    """Milliseconds since 1970 of an aware time (the millisecond it falls in)."""
    return (value - _EPOCH) // _MS


def iso_ms(ms: int) -> str:
    """`iso` of a time as milliseconds since 1970: its second's text remembered (a batch's
    events, a run's spans, share theirs), its milliseconds' from a table: half the time of
    formatting every field."""
    seconds, rest = divmod(ms, 1000)
    return _second_text(seconds) + _MILLIS[rest]


@lru_cache(maxsize=4096)
def _second_text(seconds: int) -> str:
    t = _EPOCH + timedelta(seconds=seconds)
    return "%04d-%02d-%02dT%02d:%02d:%02d" % (t.year, t.month, t.day, t.hour, t.minute, t.second)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))


@dataclass(frozen=True)
class AgentRef:
    login: str
    slug: str

    @property
    def path(self) -> str:
        return f"{self.login}/{self.slug}"


@dataclass
class AgentMeta:
    """What a batch says about its agent; kept and updated on every batch that sends it. Its
    names are cut to the field limits as it is made, whatever the source."""

    slug: str
    display_name: str | None = None
    model: str | None = None
    framework: str | None = None
    architecture: str | None = None
    tools: list[str] | None = None
    version: str | None = None
    """The agent's version the batch was sent by: the runs it first records carry it; not a
    detail of the agent (`updates` leaves it out)."""

    def __post_init__(self) -> None:
        limit_agent_names(self)

    def updates(self) -> dict[str, Any]:
        """The fields the batch actually sent, so a batch without them erases nothing."""
        return {k: v for k, v in (("display_name", self.display_name), ("model", self.model),
                                  ("framework", self.framework),
                                  ("architecture", self.architecture), ("tools", self.tools))
                if v is not None}


@dataclass(frozen=True)
class RunRef:
    """A run its agent keeps a link to (its newest, its newest failure), so listings can link
    to it without reading it. `at` orders runs as the runs list does: by their start (by their
    end when the start never came)."""

    run_id: str
    name: str | None
    status: str
    at: str

    def replaces(self, recorded: RunRef | None) -> bool:
        """Newest wins; of two as new, the one recorded last (both stores apply this rule)."""
        return recorded is None or recorded.at <= self.at

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "name": self.name, "status": self.status, "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunRef | None:
        if not data:
            return None
        return cls(str(data["run_id"]), data.get("name"), str(data["status"]), str(data["at"]))


LATEST_RUNS = ("latest_run", "latest_failure")
"""The `AgentStats` fields holding `RunRef`s, named as the stores name them."""


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
    eval_unscored: int = 0
    eval_skipped: int = 0
    eval_judge: str | None = None
    """The judge of the scores in `eval_score_sum`, or "mixed" once two judges contributed."""
    judge_tokens: int = 0
    judge_cost_usd: float = 0.0
    evidence_cost_usd_total: float = 0.0
    """Cost proven by provider usage (adapters, OTLP spans) priced by Bench; apart from the
    owner-reported `cost_usd_total`. Counted per evidence record as it arrives, so a subtask
    reported after its run still counts."""
    evidence_input_tokens: int = 0
    evidence_output_tokens: int = 0
    evidence_calls: int = 0
    evidence_unpriced_calls: int = 0
    latest_run: RunRef | None = None
    """The newest finished run (`RunRef.replaces`), recorded by the write of its batch."""
    latest_failure: RunRef | None = None
    """The newest failed run, likewise."""


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
    judge_daily_budget_usd: float | None = None
    judge_sample_rate: float | None = None
    """Owner's judge budget; None means the deployment's default (`Settings.judge`)."""
    expires_at: str | None = None
    """Set on temporary agents (the /try sandbox's): the agent and all it holds go then."""

    def __post_init__(self) -> None:
        """Names within the field limits however the agent is made (a first batch, the
        dashboard, a benchmark run, /try), and as they are read."""
        limit_agent_names(self)

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
    body_json: str | None = field(default=None, compare=False, repr=False)
    """`body` as compact JSON when ingest already encoded it (to measure it), so the store need
    not encode it again; None means encode `body`."""

    def get(self, name: str) -> Any:
        return self.body.get(name)


TASK_CONTENT = frozenset({"input", "output", "metadata", "cost_breakdown", "logs"})
"""A task's content fields: what a run's tree, drawn from names, times and statuses, leaves
unread."""


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
    eval: EvalResult | None = None
    eval_version: int = 0
    """How many results its `eval` has replaced, where the store counts them (DynamoDB): a
    result decided on the task as read is written only if it is still the one read."""
    evidence: Usage | None = None
    """Evidence of this task and its finished subtasks; None when there is none."""
    run_id: str | None = None
    """The root task of this task's run as far as known (`domain.runs.assign_runs`): itself for
    a root, else its topmost known ancestor, or its parent's id while that is unknown."""
    logs: list[dict[str, Any]] = field(default_factory=list)
    """Its `task.log` entries in order (`{"ts", "data"}`), capped by `runs.MAX_LOG_BYTES`, so a
    run can be read without its events (which expire sooner)."""
    recorded: str | None = None
    """When it was first recorded, as sortable text (`folding.recorded_at`): siblings that
    start in the same millisecond are drawn in this order (`runs.build_tree`)."""
    model: str | None = None
    """The model its own first evidence record names (public, as evidence is): a run's tree
    shows it beside the span."""
    agent_version: str | None = None
    """The agent's version a run (a root task) was first recorded with (`domain.versions`)."""
    session_id: str | None = None
    """The conversation its run is part of, as first recorded (`domain.sessions`)."""
    user_id: str | None = None
    """Who its run was for, as first recorded: raw only for the owner (`privacy.user_view`)."""

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    @property
    def sort_ts(self) -> str:
        return self.started_at or self.ended_at or ""

    def cost_headline(self) -> dict[str, Any]:
        """Its headline cost and where it comes from (`pricing.cost_rule`): the owner's
        report, else its evidence's (its own and its finished subtasks')."""
        return headline_fields(self.cost_usd, self.evidence.cost_usd if self.evidence else None)


@dataclass
class Usage:
    """Token usage and evidence cost, summed over evidence records (`pricing`). A count is None
    when no record counted it, so a total is 0 only when a producer reported 0."""

    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_output_tokens: int | None = None
    calls: int = 0
    unpriced_calls: int = 0
    """Records without a cost: models the price table does not know."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: _plus(getattr(self, name), getattr(other, name))
                        for name in USAGE_FIELDS})

    def to_dict(self) -> dict[str, Any]:
        """Plain fields, in order: a copy of the instance's own (a dataclass sets nothing
        else); `asdict` deep-copies and is ten times slower, which a run's spans notice."""
        return self.__dict__.copy()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """The usage `to_dict` wrote (read for every task of a run), dropping unknown fields."""
        return from_fields(cls, data)


USAGE_FIELDS = tuple(Usage.__dataclass_fields__)


_T = TypeVar("_T")


def from_fields(cls: type[_T], fields: dict[str, Any]) -> _T:
    """An instance of dataclass `cls` from `fields` as a store decoded them (unknown names
    dropped, absent ones at their defaults): what a run's thousand spans are built with. Set
    at once rather than through the generated `__init__`, which matches every keyword against
    its parameters and compares names a JSON parser hands back (never interned) character by
    character: two thirds of the constructor's time, a microsecond a span."""
    names, required, defaults, factories = _SHAPES.get(cls) or _SHAPES.setdefault(cls, _shape(cls))
    if not names.issuperset(fields):
        fields = {k: v for k, v in fields.items() if k in names}
    if required and not required.issubset(fields):
        raise TypeError(f"{cls.__name__} needs {sorted(required - fields.keys())}")
    values = {**defaults, **fields}
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    instance = cls.__new__(cls)
    instance.__dict__ = values
    return instance


_Shape = tuple[frozenset[str], frozenset[str], dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]
_SHAPES: dict[type, _Shape] = {}


def _shape(cls: type) -> _Shape:
    """A dataclass's field names, the required ones, every field's default in field order
    (None where it has none or a factory), and its default factories."""
    declared = [f for f in fields_of(cls) if f.init]
    return (frozenset(f.name for f in declared),
            frozenset(f.name for f in declared
                      if f.default is MISSING and f.default_factory is MISSING),
            {f.name: None if f.default is MISSING else f.default for f in declared},
            tuple((f.name, f.default_factory) for f in declared
                  if f.default_factory is not MISSING))


def _plus(a: Any, b: Any) -> Any:
    return a if b is None else b if a is None else a + b


def add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    """The sum of two evidence totals where either may be absent."""
    if a is None:
        return b
    return a if b is None else a + b


EvalStatus = Literal["scored", "unscored", "skipped"]
NO_CONTENT = "no content captured"
"""Why a finished run no span of which recorded content is unscored; such a run is judged
again when content arrives (`evals.workflow`, `ingest.otlp.logs`)."""


@dataclass
class EvalResult:
    """What the judge made of one task. A score exists only when status is "scored": an answer
    that could not be parsed is "unscored" with the reason, a task the budget left out "skipped".
    `private` marks reasoning written while the agent hid inputs or outputs (it may quote them)."""

    status: EvalStatus
    judge: str
    at: str
    score: float | None = None
    reasoning: str | None = None
    reason: str | None = None
    prompt_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 0
    private: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain fields, all scalars (`asdict` deep-copies: a run with judged spans shows)."""
        return {name: getattr(self, name) for name in _EVAL_ORDER}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        return cls(**{k: v for k, v in data.items() if k in _EVAL_FIELDS})


_EVAL_ORDER = tuple(EvalResult.__dataclass_fields__)
_EVAL_FIELDS = frozenset(_EVAL_ORDER)


@dataclass(frozen=True)
class RunDelta:
    """What one finished root task adds to its agent's counters."""

    day: str
    success: bool
    duration_ms: float | None
    cost_usd: float
    version: str | None = None
    """The agent's version the run was recorded with (`domain.versions`)."""
    evidence_cost_usd: float = 0.0
    ended_at: str = ""
    session_id: str | None = None
    """The conversation the run is part of (`domain.sessions`), with what it adds to it."""
    user_id: str | None = None
    run_id: str = ""
    name: str | None = None
    started_at: str = ""
    recorded: str = ""
    """When the run was first recorded (`TaskState.recorded`): the order of a session's runs
    that start in the same millisecond."""
    tokens: int = 0


@dataclass(frozen=True)
class IngestWrite:
    """One batch's write, as `IngestStore.ingest` takes it: several are written together by
    `IngestStore.ingest_many` (the local server's group commit, `ingest/group_commit.py`)."""

    login: str
    meta: AgentMeta
    events: list[CleanEvent]
    dropped: int = 0


@dataclass
class IngestOutcome:
    accepted: int
    duplicates: int
    finished: list[tuple[str, bool]] = field(default_factory=list)
    """(task_id, is_root) of each task this batch finished, for evals and live pushes."""
    agent: Agent | None = None
    """The agent as the batch found it, where the store read it anyway (DynamoDB; SQLite as it
    ranks it): its settings decide which finished runs are judged (None: ask the store)."""


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
    expires_at: str | None = None
    """Set on temporary keys (the /try sandbox's); None for keys that live until revoked."""

    @property
    def kind(self) -> str:
        return "agent" if self.agent_slug else "owner"

    def active_at(self, now: datetime) -> bool:
        """Neither revoked nor, if temporary, expired by `now`."""
        return self.revoked_at is None and (self.expires_at is None
                                            or self.expires_at > iso(now))
