"""The one place that decides what a viewer may see of an agent. Every read path asks here.

- A private agent does not exist for anyone but its owner: not found, never "forbidden", so its
  existence does not leak.
- What only an owner may do (`owner_only`) is not found alike for every agent the viewer does
  not own: an agent key owns its one agent, so the rest of its account, public, private or
  never made, all answer the same.
- `hide_inputs` removes task inputs; `hide_outputs` removes outputs and error text.
- Content is whatever is not known to be safe: log values, task metadata, span attributes,
  custom event data, cost details and cost fields that are not numbers can carry either side,
  so either switch hides them (`Sight.content`). What is known to be safe stays: a cost log's
  amount, a cost breakdown's numbers, a span's ids and its allow-listed attributes (names and
  numbers, listed at ingest by `ingest.otlp.conventions` under `PUBLIC_ATTRIBUTES`).
- Either switch also hides what was derived from inputs and outputs: the judge's reasoning and
  the labels of failure clusters (stored as private when written under a switch, so turning it
  off later does not reveal them).
- Feedback from people on a run: its score, kind and label are shown like the judge's score;
  its comment is content (`feedback_view`).
- Cost evidence (provider, model, token counts, Bench's price) is usage, not content: it stays
  visible under either switch, cut down to `EVIDENCE_FIELDS` so nothing else rides along.
- An agent's version (`domain.versions`: a run's, and each version's counters) is public like
  its model: it names the code, not what the code was given, so whoever may see the agent sees
  it under either switch.
- A run's session id is public like its name (it is the address of the session's page); the
  user a run was for is a person: others than the owner see only a pseudonym of it
  (`user_view`: a keyed hash per agent, so one person's runs in two agents do not link up), and
  never the raw id anywhere content would show it (the events' `user_id`, the metadata fields
  and span attributes that name the user: `Sight.metadata`, `Sight.event`).
- Every agent starts with the same settings however it comes to exist (`new_agent`).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass, field
from typing import Any

from .alerts import Alert
from .errors import Forbidden, NotFound
from .feedback import Feedback
from .models import Agent, AgentRef, EvalResult, KeyRecord, TaskState
from .pricing import (
    EVIDENCE_LABEL,
    NAME_FIELDS,
    TOKEN_FIELDS,
    cost_amount,
    evidence_name,
    is_cost_log,
    is_evidence,
    token_count,
)
from .sessions import USER_ATTRIBUTES, USER_FIELDS

HIDDEN = "[hidden by owner]"
IMPLICIT_AGENT = {"visibility": "public", "hide_inputs": True, "hide_outputs": True}
"""How every agent starts (`new_agent`): public numbers, badge, profile and leaderboard place,
with its content hidden until the owner shows it."""
PUBLIC_ATTRIBUTES = "_bench_public"
"""In a span's metadata (`ingest.otlp.mapping`), the names of the attributes ingest found safe
(allow-listed names and numbers): everyone sees those. The rest of any metadata is content, and
metadata without this list (the SDK's `t.metadata()`, spans stored before the split) is content
whole."""
SPAN_FIELDS = ("trace_id", "span_id", "service")
"""The known-safe fields of a span's metadata: its ids and its service's name."""
_MAX_LISTED = 32
"""The longest list a public value may be (`gen_ai.response.finish_reasons`)."""
_PRICED = ("cost_usd", "price_source")
"""Bench's own price of a record, shown as stored."""
EVIDENCE_FIELDS = (*NAME_FIELDS, *TOKEN_FIELDS, *_PRICED)


@dataclass(frozen=True)
class Viewer:
    """Who is asking: a signed-in login, or nobody (`login=None`). `agent_slug` is set for an
    agent key (`bka_`): it owns that one agent and sees the rest as an anonymous visitor."""

    login: str | None = None
    agent_slug: str | None = None

    @classmethod
    def of_key(cls, key: KeyRecord) -> Viewer:
        """The viewer a key acts as: its owner for an owner key, one agent for an agent key."""
        return cls(key.login, key.agent_slug)

    def owns(self, agent: Agent) -> bool:
        return (self.login is not None and self.login == agent.login
                and self.agent_slug in (None, agent.slug))

    def owns_account(self, login: str) -> bool:
        """Whether the viewer acts for the whole account `login` (its dashboard, its feed of
        every agent): a session or an owner key, never an agent key."""
        return self.login is not None and self.login == login and self.agent_slug is None


ANONYMOUS = Viewer()


def new_agent(login: str, slug: str, created_at: str, **chosen: Any) -> Agent:
    """An agent as it comes to exist, however that is (its first batch or span, a benchmark
    submission, the dashboard's form, the /try sandbox): `IMPLICIT_AGENT`'s settings, save
    those its creator chose in so many words (`chosen`, with any other `Agent` field)."""
    return Agent(login=login, slug=slug, created_at=created_at, **{**IMPLICIT_AGENT, **chosen})


def settings_of(agent: Agent) -> dict[str, Any]:
    """An agent's privacy settings by their stored names (`IMPLICIT_AGENT`'s)."""
    return {name: getattr(agent, name) for name in IMPLICIT_AGENT}


def visible_agent(agent: Agent | None, viewer: Viewer) -> Agent:
    """The agent if the viewer may see it at all; 404 otherwise."""
    if agent is None or not (agent.is_public or viewer.owns(agent)):
        raise NotFound("agent not found")
    return agent


def owner_only(agent: Agent | None, viewer: Viewer, refusal: str) -> Agent:
    """The agent for what only its owner may do with a key (settings, its card, grants,
    insights): 404, alike, for any agent the viewer does not own; 403 `refusal` for an agent
    key's own agent, which needs the owner's key for this."""
    if agent is None or not viewer.owns(agent):
        raise NotFound("agent not found")
    if viewer.agent_slug is not None:
        raise Forbidden(refusal)
    return agent


def listed(agent: Agent) -> bool:
    """Whether the agent may appear in public listings (leaderboard, search): public ones only,
    even for their owner, because a listing is one shared, cacheable page for everyone."""
    return agent.is_public


def filters_by_tag(agent: Agent, viewer: Viewer) -> bool:
    """Whether the viewer may ask for an agent's numbers by tag (its analytics over time): a
    run's tags are its metadata, which is content, so its owner alone; a visitor's answer
    would say which tags exist and how their runs went."""
    return viewer.owns(agent)


def shows_inputs(agent: Agent, viewer: Viewer) -> bool:
    return viewer.owns(agent) or not agent.hide_inputs


def shows_outputs(agent: Agent, viewer: Viewer) -> bool:
    return viewer.owns(agent) or not agent.hide_outputs


@dataclass(frozen=True)
class Sight:
    """What one viewer may see of one agent's content, decided once for a read that shows
    many of its tasks (a run's thousand spans ask the same questions of the same pair)."""

    owner: bool
    inputs: bool
    outputs: bool
    agent: AgentRef | None = None
    """Whose pseudonyms a non-owner sees (`pseudonym`)."""
    content: bool = field(init=False)
    """Whether what is neither an input nor an output but may carry either (log values,
    metadata, span attributes, event data, cost details) is shown: unless a switch is on.
    Decided once: a run's spans ask it four times each."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", self.owner or (self.inputs and self.outputs))

    @classmethod
    def of(cls, agent: Agent, viewer: Viewer) -> Sight:
        return cls(viewer.owns(agent), shows_inputs(agent, viewer), shows_outputs(agent, viewer),
                   agent.ref)

    def user(self, user_id: str | None) -> str | None:
        """A run's user as the viewer may see it: raw for the owner, else its pseudonym."""
        if user_id is None or self.owner:
            return user_id
        return pseudonym(self.agent or AgentRef("", ""), user_id)

    def shows_derived(self, private: bool) -> bool:
        """See `shows_derived`: for others than the owner, `inputs` and `outputs` are the
        agent's switches."""
        return self.content and (self.owner or not private)

    def metadata(self, metadata: Any) -> Any:
        """A task's metadata as stored (for others than the owner without what names its
        user), or its public part (`metadata_view`)."""
        if not self.content:
            return metadata_view(metadata)
        return metadata if self.owner else without_user(metadata)

    def cost_breakdown(self, breakdown: Any) -> Any:
        """A task's cost breakdown as stored, or its numbers (`cost_breakdown_view`)."""
        return breakdown if self.content else cost_breakdown_view(breakdown)

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """See `event_view`."""
        out = dict(event)
        if "user_id" in out:
            out["user_id"] = self.user(out["user_id"])
        if not self.inputs and "input" in out:
            out["input"] = HIDDEN
        if not self.outputs and "output" in out:
            out["output"] = HIDDEN
        if not self.content:
            if "data" in out:
                out["data"] = _redacted_data(out["data"])
            if "cost_breakdown" in out:
                out["cost_breakdown"] = cost_breakdown_view(out["cost_breakdown"])
        return out

    def eval(self, result: EvalResult | None) -> dict[str, Any] | None:
        """See `eval_view`."""
        if result is None:
            return None
        view = result.to_dict()
        if not self.shows_derived(result.private):
            view["reasoning"] = HIDDEN if result.reasoning else None
            if result.status == "unscored":
                view["reason"] = HIDDEN
        return view

    def span_logs(self, task: TaskState) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """A run span's evidence (`evidence_view`, its own records read from its log entries:
        a span carries no events) and its log entries in order, their values hidden as content
        as `event_view` hides a `task.log`'s data (the closing count stays). One pass over the
        entries: where content is hidden an evidence entry shows as its record."""
        content = self.content
        if task.evidence is None and content:
            return None, task.logs
        records: list[dict[str, Any]] = []
        shown: list[dict[str, Any]] = []
        for entry in task.logs:
            data = entry.get("data")
            record = evidence_record(data) if is_evidence(data) else None
            if record is not None:
                records.append(record)
            if content:
                continue
            shown.append({"omitted": entry["omitted"]} if "omitted" in entry else
                         {"ts": entry.get("ts"),
                          "data": _redacted_data(data) if record is None else record})
        evidence = None
        if task.evidence is not None:
            evidence = task.evidence.to_dict()
            evidence["records"] = records
        return evidence, task.logs if content else shown


def feedback_view(feedback: Feedback, sight: Sight) -> dict[str, Any]:
    """One feedback on a run as `sight` lets its viewer see it: who gave it, when, its score
    (thumbs as 1 and 0) and label for everyone who sees the run; its comment, which people
    write about what the run said, only where content is shown."""
    return {"feedback_id": feedback.feedback_id, "kind": feedback.kind,
            "score": feedback.score, "thumbs": feedback.thumbs, "label": feedback.label,
            "comment": feedback.comment if sight.content or feedback.comment is None
            else HIDDEN,
            "comment_hidden": not sight.content and feedback.comment is not None,
            "source": feedback.source, "created_at": feedback.created_at}


def shows_invocation_url(agent: Agent, viewer: Viewer) -> bool:
    """A published agent's endpoint URL is its owner's business: others call through Bench."""
    return viewer.owns(agent)


def task_view(task: TaskState, agent: Agent, viewer: Viewer,
              events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A task as `viewer` may see it; with its stored `events`, its evidence records too."""
    sight = Sight.of(agent, viewer)
    inputs, outputs = sight.inputs, sight.outputs
    return {
        "task_id": task.task_id,
        "parent_task_id": task.parent_task_id,
        "name": task.name,
        "status": task.status,
        "input": task.input if inputs else HIDDEN,
        "output": task.output if outputs else HIDDEN,
        "metadata": sight.metadata(task.metadata),
        "duration_ms": task.duration_ms,
        "cost_usd": task.cost_usd,
        **task.cost_headline(),
        "cost_breakdown": sight.cost_breakdown(task.cost_breakdown),
        "started_at": task.started_at,
        "ended_at": task.ended_at,
        "inputs_hidden": not inputs,
        "outputs_hidden": not outputs,
        "content_hidden": not sight.content,
        "eval": sight.eval(task.eval),
        "evidence": evidence_view(task, events),
        "version": task.agent_version,
        "session_id": task.session_id,
        "user": sight.user(task.user_id),
    }


def pseudonym(agent: AgentRef, user_id: str) -> str:
    """What others than the owner see of a user: a keyed hash of the id under the agent's name
    (`u-` and 12 hex digits), the same for every run of that user in that agent, and different
    in another agent. It hides the id from a reader, not from someone who guesses it and knows
    the agent: it is no secret."""
    digest = hmac.new(f"bench-user:{agent.path}".encode(), user_id.encode(), hashlib.sha256)
    return f"u-{digest.hexdigest()[:12]}"


def user_view(user_id: str | None, agent: Agent, viewer: Viewer) -> str | None:
    """A user as `viewer` may see it (`Sight.user`)."""
    return Sight.of(agent, viewer).user(user_id)


def without_user(metadata: Any) -> Any:
    """Metadata without the fields and span attributes that name the run's user."""
    if not isinstance(metadata, dict):
        return metadata
    out = {k: v for k, v in metadata.items() if k not in USER_FIELDS}
    attributes = out.get("attributes")
    if isinstance(attributes, dict):
        out["attributes"] = {k: v for k, v in attributes.items() if k not in USER_ATTRIBUTES}
    return out


def evidence_view(task: TaskState, events: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """A task's provider-proven usage, for every viewer: the totals of its own and its finished
    subtasks' records and, given its events, its own records (provider, model, tokens, cost).
    None when it has none."""
    if task.evidence is None:
        return None
    view = task.evidence.to_dict()
    if events is not None:
        view["records"] = [evidence_record(e["data"]) for e in events
                           if e.get("kind") == "task.log" and is_evidence(e.get("data"))]
    return view


def evidence_record(data: dict[str, Any]) -> dict[str, Any]:
    """Usage only (`EVIDENCE_FIELDS`, in order): names that look like names (a record stored
    before ingest checked them may hold anything), counts and Bench's price. A run shows one
    per model call, so a count that is plainly one (or plainly absent) skips the full
    check."""
    record: dict[str, Any] = {"label": EVIDENCE_LABEL}
    for name in NAME_FIELDS:
        value = data.get(name)
        record[name] = None if value is None else evidence_name(value)
    for name in TOKEN_FIELDS:
        value = data.get(name)
        record[name] = (value if type(value) is int and value >= 0 else
                        None if value is None else token_count(value))
    for name in _PRICED:
        record[name] = data.get(name)
    return record


def shows_derived(agent: Agent, viewer: Viewer, private: bool) -> bool:
    """Whether text derived from inputs and outputs (judge reasoning, cluster labels) may be
    shown: to the owner always; to others only if it was written while nothing was hidden and
    nothing is hidden now."""
    return Sight.of(agent, viewer).shows_derived(private)


def eval_view(result: EvalResult | None, agent: Agent, viewer: Viewer) -> dict[str, Any] | None:
    """A task's judgement. The score, judge and costs are always shown; the reasoning (and an
    unscored answer's reason, which may quote the judge) only through `shows_derived`."""
    return Sight.of(agent, viewer).eval(result)


def insights_view(insights: dict[str, Any] | None, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """Failure clusters; counts, shares and example task ids always, labels and terms only
    through `shows_derived` (the examples themselves go through `task_view`)."""
    if insights is None:
        return {"clusters": [], "computed_at": None}
    if shows_derived(agent, viewer, bool(insights.get("private"))):
        return insights
    return {**insights, "clusters": [{**c, "label": HIDDEN, "terms": []}
                                     for c in insights.get("clusters", [])]}


def event_view(event: dict[str, Any], agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """A stored event as `viewer` may see it: its input with inputs, its output with outputs,
    its data and cost breakdown with content (else only what is known to be safe of them)."""
    return Sight.of(agent, viewer).event(event)


def public_value(value: Any) -> bool:
    """Whether `value` is a number, a flag, a name (`pricing.evidence_name`) or a short list of
    those: what a known-safe field must hold to be shown (its name alone does not make free
    text safe)."""
    if isinstance(value, list):
        return len(value) <= _MAX_LISTED and all(_public_scalar(v) for v in value)
    return _public_scalar(value)


def _public_scalar(value: Any) -> bool:
    if isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return evidence_name(value) is not None


def metadata_view(metadata: Any) -> Any:
    """What everyone may see of a task's metadata: of a span's, its ids and service
    (`SPAN_FIELDS`) and the attributes ingest listed as safe (`PUBLIC_ATTRIBUTES`), each only
    if it is still a public value, with `other_attributes` marking the rest as hidden; of any
    other metadata, nothing."""
    listed = metadata.get(PUBLIC_ATTRIBUTES) if isinstance(metadata, dict) else None
    if not isinstance(listed, list):
        return HIDDEN
    attributes = metadata.get("attributes")
    if not isinstance(attributes, dict):
        attributes = {}
    view: dict[str, Any] = {name: value if public_value(value := metadata.get(name)) else None
                            for name in SPAN_FIELDS}
    view["attributes"] = {name: attributes[name] for name in listed
                          if isinstance(name, str) and name in attributes
                          and public_value(attributes[name])}
    if len(view["attributes"]) < len(attributes):
        view["other_attributes"] = HIDDEN
    return view


def cost_breakdown_view(breakdown: Any) -> Any:
    """What everyone may see of a cost breakdown: names → numbers. Each entry keeps the amounts
    it holds under names (`amount_usd`, counts: `pricing.cost_amount`); its other fields (the
    owner's cost details) are content."""
    if breakdown is None:
        return None
    if not isinstance(breakdown, list):
        return HIDDEN
    return [{name: value for name, value in entry.items()
             if cost_amount(value) is not None and evidence_name(name) is not None}
            if isinstance(entry, dict) else {} for entry in breakdown]


def _redacted_data(data: Any) -> Any:
    """An event's data where content is hidden: a cost log's amount (a number, else None; its
    details are content), an evidence record's usage, a span's public metadata; else HIDDEN."""
    if is_evidence(data):
        return evidence_record(data)
    if is_cost_log(data):
        return {"label": "cost", "cost_usd": cost_amount(data.get("cost_usd"))}
    return metadata_view(data)


PUBLIC_ALERT_FIELDS = ("metric", "version", "against", "cluster", "state", "mode", "baseline",
                       "current",
                       "p_value", "level", "runs", "baseline_runs", "since", "opened_at",
                       "updated_at")
"""What everyone who may see an agent may see of its open alerts: the numbers its profile
shows anyway, compared; never where its owner has them delivered, nor a failure cluster's
label (content, as `insights_view` says: its id only)."""


def alert_view(alert: Alert) -> dict[str, Any]:
    fields = alert.model_dump(mode="json", include=set(PUBLIC_ALERT_FIELDS))
    return fields | {"title": alert.title, "change": alert.change}
