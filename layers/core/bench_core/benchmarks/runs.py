"""A submitted run in, a pending run out: checked against the published suite, every output's
hash verified, stored `pending` and handed to the workflows, which grade every attempt and
recompute the summary (`workflow.py`). What the client says about scores or its summary is
accepted on the wire and ignored.

Suites are immutable once published: the first valid run of a suite version registers its
content hash (`BenchmarkStore.register_suite`); a run of any other content under that version is
refused with 409, and so is every run once the server's own copy changed under the same version.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..domain.benchmark_records import Attempt, AttemptStatus, RunRecord
from ..domain.errors import BenchError, Conflict, Invalid
from ..domain.field_limits import cap, cut
from ..domain.keys import may_write
from ..domain.models import AgentRef, KeyRecord, Slug, iso
from ..domain.privacy import new_agent
from ..log import logger
from ..ports.services import WithAgents, WithBenchmarks, WithClock, WithSettings, WithWorkflows
from . import workflow
from .grading import JUDGE_RETRY_AFTER_S
from .suites import Suite, load_suite, value_hash


class SubmitConcerns(WithAgents, WithBenchmarks, Protocol):
    """The agent a run is of (created with its first run) and the suites and runs stored."""


class RunPorts(WithWorkflows, WithSettings, WithClock, Protocol):
    """What submitting a run uses: the store, the workflows that grade it and the settings
    (the field cap). Grading is `workflow.py`'s."""

    @property
    def store(self) -> SubmitConcerns: ...


class GradingNotStarted(BenchError):
    """The run is stored but its grading could not be started: 503, submit it again."""

    status = 503


HASH_PATTERN = r"^sha256:[0-9a-f]{64}$"
MAX_ERROR_CHARS = 2000
MAX_ATTEMPTS = 1000
DAY_MS = 86_400_000


class AttemptIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    repeat: Annotated[int, Field(ge=0, lt=10)]
    status: AttemptStatus
    output: Any = None
    output_hash: Annotated[str, StringConstraints(pattern=HASH_PATTERN)]
    error: str | None = None
    """Cut to `MAX_ERROR_CHARS` as it is stored."""
    duration_ms: Annotated[float, Field(ge=0, le=DAY_MS, allow_inf_nan=False)]
    cost_usd: Annotated[float, Field(ge=0, le=1000, allow_inf_nan=False)] | None = None
    started_at: Annotated[str, StringConstraints(max_length=40)] | None = None
    input: Any = None
    """Optional: when sent it must be the case's input."""
    score: Any = None
    judge: Any = None
    reasoning: Any = None
    """A client's own grade, if it sends one: ignored, the server grades."""


class RunIn(BaseModel):
    """The body of `POST /api/benchmarks/{suite}/runs`."""

    model_config = ConfigDict(extra="forbid")

    agent_slug: Slug
    display_name: str | None = None
    """Cut to the field limits, as every source's agent names are (`models.Agent`)."""
    suite_hash: Annotated[str, StringConstraints(pattern=HASH_PATTERN)]
    repeats: Annotated[int, Field(ge=1, le=10)]
    attempts: Annotated[list[AttemptIn], Field(min_length=1, max_length=MAX_ATTEMPTS)]
    nonce: Annotated[str, StringConstraints(min_length=8, max_length=64)] | None = None
    """Makes a resubmitted run (a retry after a lost answer) the same run."""
    summary: Any = None
    """Ignored: the server recomputes every aggregate from the attempts."""
    sdk: dict[str, Any] | None = None


def _invalid(message: str, loc: list[Any]) -> Invalid:
    return Invalid(message, [{"loc": loc, "msg": message}])


def next_version(suite: Suite) -> str:
    return f"{suite.manifest.name}-v{suite.manifest.version + 1}"


def check_same_suite(suite: Suite, local_hash: str, submitted: str) -> None:
    """409 unless the run used this server's suite (the one it grades against)."""
    if submitted != local_hash:
        raise Conflict(f"suite {suite.suite_id} is published with content hash {local_hash}, but "
                       f"this run used {submitted}; a published suite never changes: run the "
                       f"published suite (bench benchmark run fetches it) or publish the change "
                       f"as {next_version(suite)}",
                       [{"loc": ["suite_hash"], "msg": "differs from the published suite"}])


def check_published(services: RunPorts, suite: Suite, local_hash: str) -> None:
    """Register the suite on its first valid run; 409 if this server's copy differs from the
    version published before (edited in place instead of becoming a new version)."""
    registered = services.store.benchmarks.register_suite(suite.suite_id, local_hash, iso(services.clock.now()))
    if registered != local_hash:
        raise Conflict(f"this server's copy of {suite.suite_id} differs from the published one "
                       f"({registered}); a published suite never changes: publish the change as "
                       f"{next_version(suite)}")


def check_attempts(suite: Suite, run: RunIn) -> None:
    """Every case exactly `repeats` times, outputs matching their hashes, inputs (when sent)
    the case's own: 422 naming the first attempt that is not."""
    seen: set[tuple[str, int]] = set()
    for i, attempt in enumerate(run.attempts):
        case = suite.case(attempt.case_id)
        if case is None:
            raise _invalid(f"unknown case {attempt.case_id!r} in {suite.suite_id}", ["attempts", i, "case_id"])
        if attempt.repeat >= run.repeats:
            raise _invalid(f"repeat {attempt.repeat} is not below repeats={run.repeats}", ["attempts", i, "repeat"])
        if (attempt.case_id, attempt.repeat) in seen:
            raise _invalid(f"case {attempt.case_id!r} repeat {attempt.repeat} is submitted twice",
                           ["attempts", i])
        seen.add((attempt.case_id, attempt.repeat))
        if value_hash(attempt.output) != attempt.output_hash:
            raise _invalid("output_hash is not the SHA-256 of the output's canonical JSON",
                           ["attempts", i, "output_hash"])
        if attempt.input is not None and attempt.input != suite.agent_input(case):
            raise _invalid(f"input is not the input of case {attempt.case_id!r}", ["attempts", i, "input"])
    missing = [f"{c.id}#{r}" for c in suite.cases for r in range(run.repeats) if (c.id, r) not in seen]
    if missing:
        raise _invalid(f"a run covers every case {run.repeats} time(s); missing {', '.join(missing[:10])}"
                       f"{' …' if len(missing) > 10 else ''}", ["attempts"])


def ungraded_attempts(services: RunPorts, suite: Suite, run: RunIn) -> list[Attempt]:
    """The submitted attempts as evidence, in the suite's order, not graded yet."""
    field_bytes = services.settings.limits.max_field_bytes
    attempts = []
    for a in run.attempts:
        case = suite.case(a.case_id)
        assert case is not None  # check_attempts saw to it
        attempts.append(Attempt(
            case_id=a.case_id, repeat=a.repeat, status=a.status, input=suite.agent_input(case),
            output=cap(a.output, field_bytes), output_hash=a.output_hash,
            error=None if a.error is None else cut(a.error, MAX_ERROR_CHARS),
            duration_ms=a.duration_ms, cost_usd=a.cost_usd, started_at=a.started_at))
    order = [c.id for c in suite.cases]
    return sorted(attempts, key=lambda a: (order.index(a.case_id), a.repeat))


def run_id_for(ref: AgentRef, nonce: str | None) -> str:
    if nonce is None:
        return secrets.token_hex(8)
    return hashlib.sha256(f"{ref.path}#{nonce}".encode()).hexdigest()[:16]


def submit_run(services: RunPorts, key: KeyRecord, suite_id: str, run: RunIn) -> RunRecord:
    """Store `run` of `suite_id` for the key's agent as `pending` and start its grading in
    the background (`Workflows.start_benchmark`); return it as stored. The same nonce again
    is the same run: returned as it is, or, if its grading failed, graded again from where
    it stopped."""
    packaged = load_suite(suite_id)
    suite, local_hash = packaged.suite, packaged.content_hash
    may_write(key, key.login, run.agent_slug)
    check_same_suite(suite, local_hash, run.suite_hash)
    check_attempts(suite, run)
    check_published(services, suite, local_hash)
    ref = AgentRef(key.login, run.agent_slug)
    run_id = run_id_for(ref, run.nonce)
    earlier = services.store.benchmarks.get_benchmark_run(run_id)
    if earlier is not None and earlier.status != "failed":
        return earlier
    if earlier is not None:
        record = earlier.model_copy(update={"status": "pending", "error": None})
        services.store.benchmarks.update_benchmark_run(record)
    else:
        now = iso(services.clock.now())
        if services.store.agents.get_agent(ref) is None:
            services.store.agents.create_agent(new_agent(ref.login, ref.slug, now,
                                                         display_name=run.display_name))
        attempts = ungraded_attempts(services, suite, run)
        record = RunRecord(run_id=run_id, login=ref.login, slug=ref.slug, suite=suite_id,
                           suite_hash=local_hash, submitted_at=now, repeats=run.repeats,
                           judge="", summary={}, attempts=attempts, status="pending",
                           total=len(workflow.to_grade(attempts)))
        services.store.benchmarks.save_benchmark_run(record)
    start_grading(services, record)
    return record


def start_grading(services: RunPorts, record: RunRecord) -> None:
    """Hand the run to the workflows; a start that fails marks it failed (submitting the same
    run again retries) and answers 503."""
    try:
        services.workflows.start_benchmark(record.run_id)
    except Exception as exc:
        logger.exception("could not start benchmark grading", extra={"run_id": record.run_id})
        services.store.benchmarks.update_benchmark_run(record.model_copy(update={
            "status": "failed", "error": "grading could not be started; submit the run again"}))
        raise GradingNotStarted("grading could not be started; submit the run again",
                                headers={"Retry-After": str(JUDGE_RETRY_AFTER_S)}) from exc
