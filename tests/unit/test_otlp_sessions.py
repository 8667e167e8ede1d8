"""Where OTLP spans name their run's session and user, in every convention Bench reads
(`ingest.otlp.conventions.SESSION`, `USER`), made to fit the rule, and handed within one
request to the trace's root."""

from __future__ import annotations

from typing import Any

import pytest
from bench_core.domain.models import AgentRef, TaskState
from bench_core.domain.privacy import ANONYMOUS, Sight, pseudonym, task_view
from bench_core.ingest.otlp.decode import Span
from bench_core.ingest.otlp.mapping import metadata, share_sessions, span_events
from bench_core.settings import Limits

from tests.factories import day_old

TRACE = "5b8efff798038103d269b633813fc60c"
T0 = 1_764_691_200_000_000_000


def span(span_id: str = "eee19b7ec3c1b174", parent: str = "", **attributes: Any) -> Span:
    return Span(trace_id=TRACE, span_id=span_id, parent_span_id=parent, name="chat", start_ns=T0,
                end_ns=T0 + 2_000_000, attributes=attributes, resource={"service.name": "svc"})


def start_of(s: Span) -> dict[str, Any]:
    return next(e.body for e in span_events(s, Limits()) if e.kind == "task.start")


@pytest.mark.parametrize("attributes, session, user", [
    ({"session.id": "s-1", "user.id": "u-1"}, "s-1", "u-1"),  # OpenTelemetry, OpenInference
    ({"gen_ai.conversation.id": "conv_5"}, "conv_5", None),  # GenAI
    ({"enduser.id": "person"}, None, "person"),
    ({"langfuse.session.id": "lf", "langfuse.user.id": "lf-user"}, "lf", "lf-user"),
    ({"ai.telemetry.metadata.sessionId": "vercel", "ai.telemetry.metadata.userId": 7},
     "vercel", "7"),  # the Vercel AI SDK's experimental_telemetry metadata
    ({"session.id": "a/b#c", "user.id": ""}, "a-b-c", None),  # made to fit, blank is none
    ({"session.id": ["not", "an", "id"]}, None, None),
])
def test_each_convention_names_the_session_and_user(attributes: dict[str, Any],
                                                    session: str | None, user: str | None) -> None:
    body = start_of(span(**attributes))
    assert (body.get("session_id"), body.get("user_id")) == (session, user)


def test_a_childs_session_goes_to_the_root_sent_with_it() -> None:
    root = span("00000000000000a1")
    child = span("00000000000000b2", "00000000000000a1", **{
        "gen_ai.conversation.id": "conv", "user.id": "who"})
    events = span_events(child, Limits()) + span_events(root, Limits())
    share_sessions(events)
    starts = {e.task_id: e.body for e in events if e.kind == "task.start"}
    assert starts[f"{TRACE}-00000000000000a1"]["session_id"] == "conv"
    assert starts[f"{TRACE}-00000000000000a1"]["user_id"] == "who"


def test_a_visitor_sees_the_user_attributes_of_no_span() -> None:
    agent = day_old("alice", "bot", hide_inputs=False, hide_outputs=False)
    kept = metadata(span(**{"user.id": "u-1", "enduser.id": "u-1", "gen_ai.request.model": "m"}))
    task = TaskState(task_id="t", metadata=kept, user_id="u-1")
    seen = task_view(task, agent, ANONYMOUS)
    assert seen["metadata"]["attributes"] == {"gen_ai.request.model": "m"}
    assert seen["user"] == pseudonym(AgentRef("alice", "bot"), "u-1")
    assert Sight.of(agent, ANONYMOUS).event({"kind": "task.start", "user_id": "u-1"})[
        "user_id"] == seen["user"]
    assert pseudonym(AgentRef("alice", "other"), "u-1") != seen["user"], "unlinkable across agents"
