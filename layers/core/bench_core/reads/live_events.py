"""What a live-feed message holds: event summaries (not payloads) through the privacy gate, and
the agent's headline numbers, in JSON text under API Gateway's 128 KB message limit.

One batch makes at most two versions of its messages, built on first use: the owner's (all
fields) and everyone else's (hidden inputs and outputs left out by `privacy.event_view`). A
private agent has no public version at all. The live feed's use case (`live_feed.py`) asks for
them per watcher.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from ..domain import stats
from ..domain.errors import NotFound
from ..domain.field_limits import dumps
from ..domain.models import Agent, WireEvent, iso
from ..domain.pricing import cost_rule
from ..domain.privacy import ANONYMOUS, Viewer, event_view, visible_agent
from ..render import formatting as fmt

MAX_MESSAGE_BYTES = 96 * 1024
"""Below API Gateway's 128 KB per message, leaving room for framing."""
PREVIEW_CHARS = 240
"""How much of an input, output or log value a summary carries: enough to recognise a task."""
SUMMARY_FIELDS = ("id", "kind", "ts", "task_id", "parent_task_id", "name", "status",
                  "duration_ms", "cost_usd", "session_id")
"""`session_id`: a run's start names its session (public like the run's name), which a
session's page watches for (`domain.sessions`)."""
VALUE_FIELDS = ("input", "output", "data")


def event_body(event: WireEvent | dict[str, Any]) -> dict[str, Any]:
    """A wire event as the stored event body `privacy.event_view` reads."""
    if isinstance(event, dict):
        return event
    body = {name: getattr(event, name) for name in (*SUMMARY_FIELDS, *VALUE_FIELDS)
            if getattr(event, name) is not None}
    body["ts"] = iso(event.ts)
    return body


def compact(body: dict[str, Any]) -> dict[str, Any]:
    """What a summary reads of an event body, and no more: the summary's fields, `data` whole
    (the privacy gate looks inside it) and inputs and outputs already cut to their previews
    (the gate shows or hides them whole, and a preview of a preview is itself). A batch handed
    to another process to push (`ports.live.PushDispatch`) travels this way."""
    out = {name: body[name] for name in (*SUMMARY_FIELDS, *VALUE_FIELDS) if name in body}
    out.update({name: preview(out[name]) for name in ("input", "output")
                if out.get(name) is not None})
    return out


def preview(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def summary(body: dict[str, Any], agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """One event as a viewer may see it, each value cut to a preview."""
    shown = event_view(body, agent, viewer)
    out = {name: shown[name] for name in SUMMARY_FIELDS if shown.get(name) is not None}
    out.update({name: preview(shown[name]) for name in VALUE_FIELDS
                if shown.get(name) is not None})
    if "duration_ms" in out:
        out["duration_text"] = fmt.ms(out["duration_ms"])
    if out.get("cost_usd"):
        out["cost_text"] = fmt.usd(out["cost_usd"])
    return out


def headline(agent: Agent) -> dict[str, Any]:
    """The numbers a dashboard row shows, from the agent's counters, and the same numbers as
    the pages print them (`shown`), so the browser formats nothing itself."""
    s = agent.stats
    latency = stats.latency_summary(s.latency_hist)
    success_rate = stats.rate(s.successes, s.runs)
    cost, source = cost_rule(s.cost_usd_total, s.evidence_cost_usd_total)
    numbers = {"runs": s.runs, "successes": s.successes, "failures": s.failures,
               "success_rate": success_rate,
               "cost_usd_total": s.cost_usd_total, "cost": cost, "cost_source": source,
               "p50_ms": latency["p50"],
               "p95_ms": latency["p95"], "last_event_at": s.last_event_at}
    shown = {"runs": fmt.count(s.runs), "failures": fmt.count(s.failures),
             "success_rate": fmt.pct(success_rate),
             "cost_usd_total": fmt.usd(s.cost_usd_total), "cost": fmt.usd(cost),
             "cost_source": source or "no cost reported", "p50_ms": fmt.ms(latency["p50"]),
             "p95_ms": fmt.ms(latency["p95"]), "last_event_at": fmt.day(s.last_event_at)}
    return {**numbers, "shown": shown}


def pack(agent: Agent, summaries: list[dict[str, Any]]) -> list[str]:
    """`summaries` as few messages as fit MAX_MESSAGE_BYTES each, in order; the numbers ride
    on the last one, so a dashboard updates them once the whole batch is shown."""
    head = {"type": "events", "agent": f"{agent.login}/{agent.slug}"}
    budget = MAX_MESSAGE_BYTES - _bytes(dumps({**head, "events": [], "stats": headline(agent)}))
    chunks: list[list[str]] = [[]]
    size = 0
    for item in map(dumps, summaries):
        item_size = _bytes(item) + 1
        if chunks[-1] and size + item_size > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += item_size
    prefix = dumps(head)[:-1]
    messages = [f'{prefix},"events":[{",".join(chunk)}]}}' for chunk in chunks[:-1]]
    last = f'{prefix},"events":[{",".join(chunks[-1])}],"stats":{dumps(headline(agent))}}}'
    return [*messages, last]


def _bytes(text: str) -> int:
    """Size on the wire: API Gateway counts UTF-8 bytes, not characters."""
    return len(text.encode())


class Delivery:
    """The messages of one batch for each audience, built when first asked for."""

    def __init__(self, agent: Agent, events: Sequence[WireEvent | dict[str, Any]]) -> None:
        self.agent = agent
        self.bodies = [event_body(e) for e in events]

    def _messages(self, viewer: Viewer) -> list[str]:
        return pack(self.agent, [summary(b, self.agent, viewer) for b in self.bodies])

    @cached_property
    def owner(self) -> list[str]:
        return self._messages(Viewer(self.agent.login))

    @cached_property
    def public(self) -> list[str] | None:
        """Everyone else's version; None when the privacy gate shows the agent to no one else."""
        try:
            visible_agent(self.agent, ANONYMOUS)
        except NotFound:
            return None
        return self._messages(ANONYMOUS)

    def for_viewer(self, viewer: Viewer | str | None) -> list[str] | None:
        """The messages `viewer` (or the login of one) may receive; None if the agent is now
        hidden from them (made private since they connected): the connection should close."""
        if not isinstance(viewer, Viewer):
            viewer = Viewer(viewer)
        return self.owner if viewer.owns(self.agent) else self.public


def hello(channel_name: str, agents: list[Agent]) -> str:
    """The first message on a connection: what it watches and the numbers so far."""
    return dumps({"type": "hello", "channel": channel_name,
                  "agents": {f"{a.login}/{a.slug}": headline(a) for a in agents}})
