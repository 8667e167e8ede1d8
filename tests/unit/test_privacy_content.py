"""Content that is neither an input nor an output, through the privacy gate (`privacy.Sight`):
either switch hides it from everyone but the owner, and only what is known to be safe of it
(a span's ids and listed attributes with public values, a cost's numbers) stays shown. Cost
fields are typed at ingest (`pricing.typed_cost_log`)."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import Agent, TaskState, WireEvent
from bench_core.domain.privacy import (
    HIDDEN,
    PUBLIC_ATTRIBUTES,
    Sight,
    Viewer,
    event_view,
    new_agent,
    task_view,
)

OWNER, VISITOR = Viewer("alice"), Viewer()


def agent(**switches: bool) -> Agent:
    return Agent(login="alice", slug="helper", created_at="2026-12-01T00:00:00.000Z",
                 **switches)


def test_content_shows_only_to_the_owner_while_either_switch_is_on() -> None:
    for switches, shown in (({}, True), ({"hide_inputs": True}, False),
                            ({"hide_outputs": True}, False),
                            ({"hide_inputs": True, "hide_outputs": True}, False)):
        assert Sight.of(agent(**switches), VISITOR).content is shown, switches
        assert Sight.of(agent(**switches), OWNER).content is True


def span_metadata(**attributes: Any) -> dict[str, Any]:
    return {"trace_id": "ab" * 16, "span_id": "cd" * 8, "service": "weather bot",
            "attributes": attributes, PUBLIC_ATTRIBUTES: list(attributes)}


def test_a_listed_attribute_is_shown_only_while_it_holds_a_name_or_a_number() -> None:
    """The list is ingest's; a value that is not a public value stays hidden whatever lists it
    (metadata the SDK sent with a list of its own, a row from an older rule)."""
    metadata = span_metadata(**{"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 7,
                                "gen_ai.response.finish_reasons": ["stop", "length"],
                                "flag": True, "prompt": "what the user asked",
                                "messages": [{"role": "user"}], "nan": float("nan")})
    metadata["attributes"]["unlisted"] = "name-like"
    view = task_view(TaskState("t", metadata=metadata), agent(hide_inputs=True), VISITOR)
    assert view["metadata"] == {
        "trace_id": "ab" * 16, "span_id": "cd" * 8, "service": None,
        "attributes": {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 7,
                       "gen_ai.response.finish_reasons": ["stop", "length"], "flag": True},
        "other_attributes": HIDDEN}
    assert view["content_hidden"] is True
    assert task_view(TaskState("t", metadata=metadata), agent(), VISITOR)["metadata"] == metadata
    for unmarked in ({"attributes": {"gen_ai.request.model": "gpt-4o"}}, "text", None):
        shown = task_view(TaskState("t", metadata=unmarked), agent(hide_outputs=True), VISITOR)
        assert shown["metadata"] == HIDDEN, unmarked


def test_a_cost_breakdown_shows_its_numbers_under_names_only() -> None:
    breakdown = [{"source": "manual", "amount_usd": 0.004, "tokens": 10, "negative": -1,
                  "flag": True, "text": "0.5", "the client's name": 3}, "free text", {}]
    view = task_view(TaskState("t", cost_breakdown=breakdown), agent(hide_inputs=True), VISITOR)
    assert view["cost_breakdown"] == [{"amount_usd": 0.004, "tokens": 10}, {}, {}]
    assert task_view(TaskState("t", cost_breakdown=breakdown), agent(hide_inputs=True),
                     OWNER)["cost_breakdown"] == breakdown


def test_a_stored_cost_log_shows_its_amount_only_if_it_is_one() -> None:
    hidden = agent(hide_inputs=True)
    for sent, shown in ((0.25, 0.25), (3, 3.0), ("0.25 dollars", None), ({"usd": 1}, None),
                        (True, None), (-1, None), (None, None)):
        event = {"kind": "task.log", "data": {"label": "cost", "cost_usd": sent,
                                              "cost_details": {"why": "secret"}}}
        assert event_view(event, hidden, VISITOR)["data"] == {"label": "cost", "cost_usd": shown}
    end = {"kind": "task.end", "data": {"note": "x"}, "cost_breakdown": [{"amount_usd": 1, "n": "x"}]}
    assert event_view(end, hidden, VISITOR) == {"kind": "task.end", "data": HIDDEN,
                                                "cost_breakdown": [{"amount_usd": 1}]}


def cost_log(**data: Any) -> dict[str, Any]:
    event = WireEvent.model_validate({"id": "e", "kind": "task.log", "task_id": "t",
                                      "ts": "2026-12-02T16:00:00Z",
                                      "data": {"label": "cost", **data}})
    return dict(event.data)


def test_ingest_keeps_a_cost_that_is_not_a_number_as_content() -> None:
    assert cost_log(cost_usd=0.5, cost_details={"source": "manual"}) == {
        "label": "cost", "cost_usd": 0.5, "cost_details": {"source": "manual"}}
    assert cost_log(cost_usd="about a cent", cost_details={"source": "manual"}) == {
        "label": "cost", "cost_usd": None,
        "cost_details": {"source": "manual", "cost_usd": "about a cent"}}
    assert cost_log(cost_usd={"usd": 1}) == {"label": "cost", "cost_usd": None,
                                             "cost_details": {"cost_usd": {"usd": 1}}}
    assert cost_log(cost_usd=True, cost_details="free") == {
        "label": "cost", "cost_usd": None,
        "cost_details": {"cost_details": "free", "cost_usd": True}}


def test_every_agent_starts_public_with_its_content_hidden_unless_its_creator_chose() -> None:
    fresh = new_agent("alice", "helper", "2026-12-01T00:00:00.000Z", display_name="Helper")
    assert (fresh.visibility, fresh.hide_inputs, fresh.hide_outputs) == ("public", True, True)
    chosen = new_agent("alice", "helper", "2026-12-01T00:00:00.000Z", visibility="private",
                       hide_outputs=False)
    assert (chosen.visibility, chosen.hide_inputs, chosen.hide_outputs) == (
        "private", True, False)
