"""Cost evidence: every Store adapter keeps provider-proven cost apart from owner-reported cost.

Evidence arrives as `task.log` records labelled `evidence` (adapters, OTLP spans); Bench prices
them from its own table, a task sums its own and its finished subtasks', and the agent's totals
add each record once.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.ports.store import Store

from tests.concurrency import in_parallel
from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
GPT_4O_CALL = 0.00725
"""1,000 input tokens (200 of them cached) and 500 output tokens of gpt-4o at $2.50, $1.25 cached
and $10 per million: (800 * 2.5 + 200 * 1.25 + 500 * 10) / 1e6."""


def ingest(store: Store, events: list[dict[str, Any]]):
    return store.ingest.ingest("alice", META, clean(events))


def evidence(task_id: str, model: str = "gpt-4o", parent: str | None = None,
             **tokens: Any) -> dict[str, Any]:
    data = {"label": "evidence", "provider": "openai", "model": model, "input_tokens": 1000,
            "output_tokens": 500, "cache_read_input_tokens": 200, **tokens}
    return ev("task.log", task_id, name="chat", parent_task_id=parent, data=data)


def call(task_id: str, parent: str | None = None, **tokens: Any) -> list[dict[str, Any]]:
    """An LLM call as the adapters record it: start, evidence, end (no owner cost)."""
    start, end = task_events(task_id, "chat", parent=parent)
    return [start, evidence(task_id, parent=parent, **tokens), end]


def test_an_evidence_record_is_priced_from_the_table_and_kept_apart_from_owner_cost(
        store: Store) -> None:
    ingest(store, call("t1"))
    task = store.ingest.get_task(REF, "t1")
    assert task.evidence.cost_usd == pytest.approx(GPT_4O_CALL)
    assert (task.evidence.input_tokens, task.evidence.output_tokens,
            task.evidence.cache_read_input_tokens) == (1000, 500, 200)
    assert task.evidence.calls == 1 and task.evidence.unpriced_calls == 0
    assert task.cost_usd == 0.0
    s = store.agents.get_agent(REF).stats
    assert s.cost_usd_total == 0.0
    assert s.evidence_cost_usd_total == pytest.approx(GPT_4O_CALL)
    assert (s.evidence_input_tokens, s.evidence_output_tokens, s.evidence_calls) == (1000, 500, 1)
    logged = [e["data"] for e in store.ingest.task_events(REF, "t1") if e["kind"] == "task.log"]
    assert logged[0]["cost_usd"] == pytest.approx(GPT_4O_CALL)
    assert logged[0]["price_source"].startswith("bench price table ")


def test_a_cost_claimed_by_the_sender_is_replaced_by_the_tables(store: Store) -> None:
    start, end = task_events("t1", "chat")
    ingest(store, [start, evidence("t1", cost_usd=99.0), end])
    assert store.ingest.get_task(REF, "t1").evidence.cost_usd == pytest.approx(GPT_4O_CALL)
    assert store.agents.get_agent(REF).stats.evidence_cost_usd_total == pytest.approx(GPT_4O_CALL)


def test_an_unknown_model_keeps_its_tokens_and_gets_no_cost(store: Store) -> None:
    start, end = task_events("t1", "chat")
    ingest(store, [start, evidence("t1", model="my-finetune-7b", cost_usd=1.5), end])
    task = store.ingest.get_task(REF, "t1")
    assert task.evidence.cost_usd is None and task.evidence.input_tokens == 1000
    assert task.evidence.unpriced_calls == 1
    s = store.agents.get_agent(REF).stats
    assert s.evidence_cost_usd_total == 0.0 and s.evidence_unpriced_calls == 1
    assert s.evidence_input_tokens == 1000


def test_a_count_is_zero_only_when_sent_as_zero(store: Store) -> None:
    start, end = task_events("t1", "embed")
    data = {"label": "evidence", "provider": "openai", "model": "text-embedding-3-small",
            "input_tokens": 50_000, "output_tokens": 0}
    ingest(store, [start, ev("task.log", "t1", data=data), end])
    usage = store.ingest.get_task(REF, "t1").evidence
    assert (usage.output_tokens, usage.cache_read_input_tokens, usage.reasoning_output_tokens
            ) == (0, None, None)
    assert usage.cost_usd == pytest.approx(50_000 * 0.02 / 1e6)


def test_subtasks_hand_their_evidence_to_the_parent_like_cost(store: Store) -> None:
    parent_start, parent_end = task_events("p1", "research")
    ingest(store, [parent_start, *call("c1", parent="p1"), *call("c2", parent="p1"), parent_end])
    parent = store.ingest.get_task(REF, "p1").evidence
    assert parent.cost_usd == pytest.approx(2 * GPT_4O_CALL)
    assert (parent.input_tokens, parent.calls) == (2000, 2)
    assert store.ingest.get_task(REF, "c1").evidence.calls == 1
    s = store.agents.get_agent(REF).stats
    assert s.evidence_calls == 2 and s.evidence_cost_usd_total == pytest.approx(2 * GPT_4O_CALL)


@pytest.mark.parametrize("parent_first", [False, True])
def test_evidence_of_a_subtask_in_another_batch_reaches_its_parent(store: Store,
                                                                   parent_first: bool) -> None:
    """Spans of one trace arrive in any order and any number of requests."""
    parent = task_events("p1", "research")
    batches = [parent, call("c1", parent="p1")]
    for batch in batches if parent_first else batches[::-1]:
        ingest(store, batch)
    assert store.ingest.get_task(REF, "p1").evidence.cost_usd == pytest.approx(GPT_4O_CALL)
    s = store.agents.get_agent(REF).stats
    assert s.runs == 1 and s.evidence_calls == 1
    assert s.evidence_cost_usd_total == pytest.approx(GPT_4O_CALL)


def test_subtasks_finishing_while_their_parent_folds_all_reach_it_once(store: Store) -> None:
    """Eight calls, each in its own batch, sent at the same moment as the parent's own log and
    end: every call's cost and evidence reaches the parent once, whichever write lands first."""
    start, end = task_events("p1", "research")
    ingest(store, [start])
    note = ev("task.log", "p1", data={"label": "cost", "cost_usd": 0.5})
    sends = [lambda i=i: ingest(store, [*call(f"c{i}", parent="p1")[:2],
                                        {**call(f"c{i}", parent="p1")[2], "cost_usd": 0.01}])
             for i in range(8)]
    in_parallel(*sends, lambda: ingest(store, [note]), lambda: ingest(store, [end]))
    parent = store.ingest.get_task(REF, "p1")
    assert parent.evidence.calls == 8 and parent.evidence.input_tokens == 8000
    assert parent.evidence.cost_usd == pytest.approx(8 * GPT_4O_CALL)
    assert parent.child_cost_usd == pytest.approx(0.08)
    assert store.agents.get_agent(REF).stats.evidence_calls == 8
    ingest(store, [ev("task.log", "p1", data={"label": "note", "value": "after"})])
    again = store.ingest.get_task(REF, "p1")
    assert (again.evidence, again.child_cost_usd) == (parent.evidence, parent.child_cost_usd)


def test_owner_cost_and_evidence_add_up_separately(store: Store) -> None:
    start, end = task_events("p1", "research", cost=0.5)[0::2]  # the end's total, no cost log
    ingest(store, [start, *call("c1", parent="p1"), end])
    task = store.ingest.get_task(REF, "p1")
    assert task.cost_usd == 0.5 and task.evidence.cost_usd == pytest.approx(GPT_4O_CALL)
    s = store.agents.get_agent(REF).stats
    assert s.cost_usd_total == 0.5
    assert s.evidence_cost_usd_total == pytest.approx(GPT_4O_CALL)


def test_replayed_evidence_counts_once(store: Store) -> None:
    events = call("t1")
    ingest(store, events)
    assert ingest(store, events).accepted == 0
    assert store.ingest.get_task(REF, "t1").evidence.calls == 1
    s = store.agents.get_agent(REF).stats
    assert s.evidence_calls == 1 and s.evidence_cost_usd_total == pytest.approx(GPT_4O_CALL)


def test_a_task_without_evidence_has_none(store: Store) -> None:
    ingest(store, task_events("t1", cost=0.01))
    assert store.ingest.get_task(REF, "t1").evidence is None
    assert store.agents.get_agent(REF).stats.evidence_calls == 0
