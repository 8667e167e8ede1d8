"""A run span's log entries and evidence through the privacy gate (`privacy.Sight`), decided
once per run: what a visitor sees where the owner hides outputs, and what the owner sees."""

from __future__ import annotations

from bench_core.domain.models import Agent, TaskState, Usage
from bench_core.domain.privacy import HIDDEN, Sight, Viewer, task_view

SECRET = "the patient's name is Ada"
OWNER = Viewer("alice")
VISITOR = Viewer()


def agent(**switches: bool) -> Agent:
    return Agent(login="alice", slug="helper", created_at="2026-12-01T00:00:00.000Z",
                 **switches)


def span() -> TaskState:
    """Logs as a task keeps them: a note, a cost, an evidence record stored before ingest
    checked its names (one carries content), and the closing count of entries left out."""
    return TaskState("t", logs=[
        {"ts": "2026-12-02T16:00:00.001Z", "data": {"label": "note", "value": SECRET}},
        {"ts": "2026-12-02T16:00:00.002Z",
         "data": {"label": "cost", "cost_usd": 0.01, "cost_details": {"why": SECRET}}},
        {"ts": "2026-12-02T16:00:00.003Z",
         "data": {"label": "evidence", "provider": SECRET, "model": "gpt-4o-mini",
                  "input_tokens": 300, "output_tokens": -1, "prompt": SECRET}},
        {"omitted": 4}], evidence=Usage(cost_usd=0.001, input_tokens=300, calls=1))


def test_hidden_outputs_leave_a_visitor_usage_and_counts_but_no_log_values() -> None:
    evidence, logs = Sight.of(agent(hide_outputs=True), VISITOR).span_logs(span())
    assert SECRET not in str((evidence, logs))
    record = {"label": "evidence", "provider": None, "model": "gpt-4o-mini", "operation": None,
              "input_tokens": 300, "output_tokens": None, "cache_read_input_tokens": None,
              "cache_creation_input_tokens": None, "reasoning_output_tokens": None,
              "cost_usd": None, "price_source": None}
    assert logs == [{"ts": "2026-12-02T16:00:00.001Z", "data": HIDDEN},
                    {"ts": "2026-12-02T16:00:00.002Z",
                     "data": {"label": "cost", "cost_usd": 0.01}},
                    {"ts": "2026-12-02T16:00:00.003Z", "data": record},
                    {"omitted": 4}]
    assert evidence is not None and evidence["records"] == [record]
    assert evidence["input_tokens"] == 300 and evidence["calls"] == 1


def test_shown_outputs_give_the_logs_as_kept_and_evidence_still_only_usage() -> None:
    task = span()
    for sight in (Sight.of(agent(hide_outputs=True), OWNER), Sight.of(agent(), VISITOR)):
        evidence, logs = sight.span_logs(task)
        assert logs == task.logs
        assert evidence is not None and SECRET not in str(evidence)
        assert evidence["records"][0]["provider"] is None


def test_a_span_without_evidence_has_none_and_its_hidden_logs_still_show_usage() -> None:
    task = span()
    task.evidence = None
    evidence, logs = Sight.of(agent(hide_outputs=True), VISITOR).span_logs(task)
    assert evidence is None
    assert logs[2]["data"]["model"] == "gpt-4o-mini" and SECRET not in str(logs)


def test_the_switches_decided_once_are_the_ones_every_task_view_uses() -> None:
    for switches in ({}, {"hide_inputs": True}, {"hide_outputs": True},
                     {"hide_inputs": True, "hide_outputs": True}):
        for viewer in (OWNER, VISITOR, Viewer("alice", "other-agent")):
            sight, view = Sight.of(agent(**switches), viewer), task_view(span(), agent(**switches),
                                                                          viewer)
            assert (sight.inputs, sight.outputs) == (not view["inputs_hidden"],
                                                     not view["outputs_hidden"])
