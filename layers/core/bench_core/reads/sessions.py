"""Sessions as their pages show them: an agent's sessions, newest first (from their counters,
kept on write), and one session's runs in order as one conversation.

Whoever may see the agent sees its sessions (`privacy.visible_agent`: a private agent's are not
found); a user is shown raw to the owner only, else as its pseudonym (`Sight.user`), and only
the owner may look sessions up by user, so a visitor can learn nothing by guessing ids. The
conversation is content: where either of the agent's switches hides content from the viewer,
a session shows its runs' names, statuses and numbers without it, and its verdict
(`session_eval`: the judge's on the whole conversation, `evals/session_judge.py`) without its
reasoning, as a run's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from ..domain import stats
from ..domain.errors import Forbidden, NotFound
from ..domain.messages import Message, Part, conversation
from ..domain.models import Agent, AgentRef, TaskState
from ..domain.pricing import cost_rule, headline_fields
from ..domain.privacy import Sight, Viewer
from ..domain.sessions import (
    SESSION_PAGE,
    SESSION_RUNS,
    STATUSES,
    SessionFilter,
    SessionRun,
    SessionStats,
)
from ..domain.task_text import is_empty
from ..ports.services import WithAgents, WithIngest, WithRuns
from .agents import visible
from .run_filters import bad_parameter, moment

SPAN_READS = 20
"""Spans of a run read whole for its turn where its root recorded no content."""
PREVIEW_CHARS = 4000
"""A turn's input or output that is not a conversation is shown as text up to this long."""


class SessionReads(WithAgents, WithRuns, WithIngest, Protocol):
    """The agent, its sessions and their runs, and each run's root read whole."""


def session_summary(s: SessionStats, sight: Sight) -> dict[str, Any]:
    """A session's numbers, as its list row and its page's header show them."""
    interval = stats.wilson_interval(s.successes, s.runs)
    cost, source = cost_rule(s.cost_usd_total, s.evidence_cost_usd_total)
    return {"session_id": s.session_id, "user": sight.user(s.user_id),
            "runs": s.runs, "successes": s.successes, "failures": s.failures,
            "success_rate": stats.rate(s.successes, s.runs),
            "success_rate_ci95": list(interval) if interval else None,
            "headline_cost_usd": round(cost, 10), "headline_cost_source": source,
            "tokens": s.tokens, "duration_ms_total": s.duration_ms_total,
            "first_at": s.first_at, "last_at": s.last_at,
            "session_eval": sight.eval(s.eval)}


def session_filter(params: Callable[[str], str | None], viewer: Viewer, agent: Agent
                   ) -> SessionFilter:
    """The list's filters from its query string: `user` (the owner's only: 403 for anyone
    else, so no visitor can look a person up), `status` (`success`: every run succeeded;
    `failed`: one failed), `since` and `until` (when the session began)."""
    user, status = params("user"), params("status")
    if user and not viewer.owns(agent):
        raise Forbidden("only the agent's owner looks sessions up by user",
                        [{"loc": ["query", "user"], "msg": "the owner's filter"}])
    if status and status not in STATUSES:
        raise bad_parameter("status", f"one of {', '.join(STATUSES)}")
    found = {name: params(name) for name in ("since", "until")}
    since = moment(found, "since")
    until = moment(found, "until")
    if since is not None and until is not None and since >= until:
        raise bad_parameter("until", "must be after since")
    return SessionFilter(user_id=user or None, status=status or None, since=since, until=until)


def sessions_json(store: SessionReads, ref: AgentRef, viewer: Viewer,
                  params: Callable[[str], str | None], cursor: str | None = None,
                  limit: int = SESSION_PAGE) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/sessions` and the sessions list page's model."""
    agent = visible(store, ref, viewer)
    where = session_filter(params, viewer, agent)
    try:
        page = store.runs.list_sessions(ref, where, limit=limit, cursor=cursor)
    except ValueError:
        raise bad_parameter("cursor", "not a cursor this list gave") from None
    sight = Sight.of(agent, viewer)
    return {**_agent(agent, viewer),
            "sessions": [session_summary(s, sight) for s in page.sessions],
            "next_cursor": page.next_cursor,
            "filters": {"user": where.user_id, "status": where.status,
                        "since": params("since"), "until": params("until")}}


def session_json(store: SessionReads, ref: AgentRef, viewer: Viewer, session_id: str
                 ) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/sessions/{session_id}` and the session page's model:
    its numbers and its first `SESSION_RUNS` finished runs in the order they started, each
    with its conversation where the viewer may see content."""
    agent = visible(store, ref, viewer)
    kept, runs = store.runs.session_runs(ref, session_id, limit=SESSION_RUNS)
    if kept is None and not runs:
        raise NotFound("session not found")
    sight = Sight.of(agent, viewer)
    summary = session_summary(kept or SessionStats(session_id), sight)
    return {**_agent(agent, viewer), **summary, "run_count": summary.pop("runs"),
            "content_hidden": not sight.content, "shown_runs": len(runs),
            "runs": [_turn(store, ref, run, sight) for run in runs]}


def _agent(agent: Agent, viewer: Viewer) -> dict[str, Any]:
    return {"agent": agent.ref.path, "display_name": agent.display_name or agent.slug,
            "public": agent.is_public, "owner": viewer.owns(agent)}


def _turn(store: SessionReads, ref: AgentRef, run: SessionRun, sight: Sight) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "run_id": run.run_id, "name": run.name, "status": run.status,
        "started_at": run.started_at, "ended_at": run.ended_at, "duration_ms": run.duration_ms,
        **headline_fields(run.cost_usd, run.evidence_cost_usd), "tokens": run.tokens,
        "messages": None}
    if sight.content:
        root = store.ingest.get_task(ref, run.run_id)
        if root is not None:
            turn["messages"] = [asdict(m) for m in turn_messages(store, ref, root)]
    return turn


def turn_messages(store: SessionReads, ref: AgentRef, root: TaskState) -> list[Message]:
    """A run as a turn of its conversation (`latest_exchange`): its root's input and output as
    messages (`domain.messages`), else those of the last model call among its first
    `SPAN_READS` spans (an OTLP root often records nothing); what reads as no conversation is
    shown as text."""
    messages = _messages(root)
    if messages is None and is_empty(root.input) and is_empty(root.output):
        calls = [m for m in map(_messages, store.runs.run_spans(ref, root, limit=SPAN_READS))
                 if m]
        answered = [m for m in calls if any(msg.side == "output" for msg in m)]
        messages = (answered or calls)[-1] if calls else None
    if messages is not None:
        failed = root.status == "failed" and not is_empty(root.output)
        return latest_exchange(messages) + ([Message(
            role="assistant", side="output", label="error",
            parts=(Part("text", _text(root.output)),))] if failed else [])
    shown = []
    if not is_empty(root.input):
        shown.append(Message(role="user", side="input", label="input",
                             parts=(Part("text", _text(root.input)),)))
    if not is_empty(root.output):
        shown.append(Message(role="assistant", side="output", label="agent",
                             parts=(Part("text", _text(root.output)),)))
    return shown


def _messages(task: TaskState) -> list[Message] | None:
    return conversation(task.input, task.output if task.status == "success" else None)


def latest_exchange(messages: list[Message]) -> list[Message]:
    """What a turn adds to the conversation: its input from the last user message on (a model
    call is sent the history, which the session's earlier turns show already) and its answer."""
    asked = [m for m in messages if m.side == "input"]
    last_user = max((i for i, m in enumerate(asked) if m.role == "user"), default=0)
    return [*asked[last_user:], *(m for m in messages if m.side == "output")]


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          default=str, indent=1)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"
