"""One call to a published agent through Bench, end to end:

1. the agent must be visible to the caller (a private agent is not found) and take calls;
2. the caller needs a live grant (`grants`), and the call must fit its quota, counted
   atomically before anything goes out;
3. the input goes to the endpoint (`outbound`) with the signature headers (`signing`);
4. whatever happens there, the call is recorded twice: as a task of the agent (through the
   ingest fold, so its stats count it; named `invoked`, the caller in its metadata) and as
   usage of the caller (kept as long as raw events, `usage_expiry`); then the caller gets the
   answer, or 502/504 saying what went wrong. The task goes through `ingest.pipeline.accept`
   like any batch: its evals are queued, and its events reach the agent's live feed after the
   answer (`later`).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from ..domain.errors import BenchError, Forbidden, PayloadTooLarge
from ..domain.field_limits import dumps
from ..domain.models import (
    Agent,
    AgentMeta,
    AgentRef,
    KeyRecord,
    WireEvent,
    iso,
)
from ..domain.privacy import Viewer, visible_agent
from ..domain.reuse_records import UsageRecord
from ..ingest.pipeline import IngestConcerns, IngestPorts, Later, accept
from ..log import logger
from ..ports.services import WithClock, WithReuse
from . import call_signature as signing
from . import grants, outbound
from .models import InvokeRequest

TASK_NAME = "invoked"
ERROR_PREVIEW = 500
"""Characters of a failing endpoint's answer quoted back to the caller."""


class InvokeConcerns(IngestConcerns, WithReuse, Protocol):
    """The agent called, its card, its grants and quota, and where the call is recorded."""


class InvokePorts(IngestPorts, WithClock, Protocol):
    """What a call uses: ingest's ports (the call is recorded as a task), its store also the
    agent called and its card, grants, quota and usage."""

    @property
    def store(self) -> InvokeConcerns: ...


class BadGateway(BenchError):
    status = 502


class GatewayTimeout(BenchError):
    status = 504


@dataclass
class Call:
    """What happened to one forwarded call."""

    call_id: str
    started: datetime
    duration_ms: float
    output: Any = None
    error: BenchError | None = None


@dataclass
class Invocation:
    """What a call came to: the caller's answer, or the error to answer with."""

    answer: dict[str, Any] | None
    error: BenchError | None


def invoke(services: InvokePorts, key: KeyRecord, ref: AgentRef, request: InvokeRequest, *,
           later: Later) -> Invocation:
    """Check, count, forward and record one call; refusals before anything goes out
    (not found, no grant, over quota, too large) raise."""
    store, settings = services.store, services.settings.reuse
    now = services.clock.now()
    agent = visible_agent(store.agents.get_agent(ref), Viewer.of_key(key))
    record = store.reuse.get_capability(ref)
    endpoint = record.endpoint if record is not None else None
    if record is None or endpoint is None:
        raise Forbidden(f"{ref.path} takes no calls through Bench: its owner has published no "
                        "invocation endpoint", [{"loc": ["invocation"], "msg": "not published"}])
    payload = dumps({"input": request.input, "skill": request.skill}).encode()
    if len(payload) > settings.max_input_bytes:
        raise PayloadTooLarge(f"input over {settings.max_input_bytes} bytes",
                              [{"loc": ["body", "input"], "msg": "too large"}])
    grant = grants.grant_for(store, agent, key, now)
    if grant is not None:
        grants.take_quota(store, agent, key.login, grant, now)
    call = _forward(services, endpoint, record.secret, key.login, ref, payload)
    events = _events(key.login, request, call)
    _record(services, agent, key, events, call, later)
    answer = None if call.error is not None else {
        "agent": ref.path, "call_id": call.call_id, "output": call.output,
        "duration_ms": call.duration_ms}
    return Invocation(answer, call.error)


def _forward(services: InvokePorts, endpoint: str, secret: str, caller: str, ref: AgentRef,
             payload: bytes) -> Call:
    call = Call(call_id=uuid.uuid4().hex, started=services.clock.now(), duration_ms=0.0)
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "Bench (authorized reuse)"}

    def sign(path: str, body: bytes) -> dict[str, str]:
        # the machine's time, not Bench's clock: the agent checks it against its own
        return signing.signed_headers(secret, int(time.time()), call.call_id, caller, ref.path,
                                      path, body)

    began = time.monotonic()
    try:
        answer = outbound.post(endpoint, payload, headers, services.settings.reuse, sign)
        call.output = _output(answer)
    except outbound.RefusedEndpoint as exc:
        call.error = BadGateway(f"the agent's endpoint is refused: {exc}")
    except outbound.OutboundTimeout as exc:
        call.error = GatewayTimeout(f"the agent did not answer: {exc}")
    except outbound.OutboundFailed as exc:
        call.error = BadGateway(f"the agent's endpoint failed: {exc}")
    except BadGateway as exc:
        call.error = exc
    call.duration_ms = round((time.monotonic() - began) * 1000, 3)
    return call


def _output(answer: outbound.Answer) -> Any:
    """The agent's answer: JSON if it says so, else text; 502 for an error status."""
    text = answer.body.decode("utf-8", errors="replace")
    if not 200 <= answer.status < 300:
        raise BadGateway(f"the agent answered HTTP {answer.status}",
                         [{"loc": ["agent"], "status": answer.status,
                           "body": text[:ERROR_PREVIEW]}])
    if "json" not in answer.content_type.lower():
        return text
    try:
        return json.loads(text) if text else None
    except ValueError as exc:
        raise BadGateway("the agent's answer is not valid JSON",
                         [{"loc": ["agent"], "body": text[:ERROR_PREVIEW]}]) from exc


def _events(caller: str, request: InvokeRequest, call: Call) -> list[WireEvent]:
    """The call as a task of the agent: its start and its end."""
    status: Literal["failed", "success"] = "failed" if call.error is not None else "success"
    ended = call.started + timedelta(milliseconds=call.duration_ms)
    common: dict[str, Any] = {"task_id": call.call_id, "name": TASK_NAME}
    return [
        WireEvent(id=uuid.uuid4().hex, kind="task.start", ts=call.started,
                  input=request.input, **common),
        WireEvent(id=uuid.uuid4().hex, kind="task.end", ts=ended, status=status,
                  output=call.error.message if call.error else call.output,
                  duration_ms=call.duration_ms,
                  data={"invoked_by": caller, "via": "bench", "skill": request.skill},
                  **common)]


def usage_expiry(started: datetime, key: KeyRecord, retention_days: int) -> str | None:
    """When a usage record goes: as raw events do, `retention_days` after the call (0: never),
    or with the caller's key if that is temporary (a /try sandbox's) and sooner."""
    times = [key.expires_at] if key.expires_at else []
    if retention_days > 0:
        times.append(iso(started + timedelta(days=retention_days)))
    return min(times, default=None)


def _record(services: InvokePorts, agent: Agent, key: KeyRecord, events: list[WireEvent],
            call: Call, later: Later) -> None:
    """The call as a task of the agent and as usage of the caller. A failure here is logged:
    the call has happened and counted, so its answer still goes back."""
    try:
        limits = services.settings.limits
        accept(services, agent.login, AgentMeta(slug=agent.slug), events, later=later)
        services.store.reuse.record_usage(UsageRecord(
            login=key.login, at=iso(call.started), call_id=call.call_id,
            agent=f"{agent.login}/{agent.slug}",
            status="failed" if call.error is not None else "success",
            http_status=call.error.status if call.error else 200,
            duration_ms=call.duration_ms, error=call.error.message if call.error else None,
            expires_at=usage_expiry(call.started, key, limits.event_retention_days),
            caller_agent=key.agent_slug))
    except Exception:
        logger.exception("could not record a call", extra={"agent": agent.ref.path,
                                                            "call_id": call.call_id})
