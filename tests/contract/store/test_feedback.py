"""Feedback from people in the store: kept under its run by the id its sender chose (a resend
keeps the first), read a run at a time, oldest first. The same suite runs on SQLite, DynamoDB
(moto) and the in-memory store."""

from __future__ import annotations

from typing import Any

from bench_core.domain.agreement import AgreementTable
from bench_core.domain.feedback import Feedback
from bench_core.domain.models import AgentRef
from bench_core.ports.store import Store

REF = AgentRef("owner", "helper")


def feedback(feedback_id: str, run_id: str = "run-1", **fields: Any) -> Feedback:
    base: dict[str, Any] = {"feedback_id": feedback_id, "run_id": run_id, "kind": "score",
                            "score": 0.5, "source": "owner",
                            "created_at": "2026-12-03T10:00:00.000Z"}
    return Feedback(**{**base, **fields})


def test_a_runs_feedback_comes_back_oldest_first(store: Store) -> None:
    later = feedback("a", score=0.25, label="wrong-tool", comment="used the calculator",
                     created_at="2026-12-03T11:00:00.000Z")
    earlier = feedback("b", kind="thumbs", score=1.0, source="agent")
    assert store.feedback.add_feedback(REF, later) is None
    assert store.feedback.add_feedback(REF, earlier) is None
    assert store.feedback.run_feedback(REF, "run-1", 100) == [earlier, later]


def test_a_resend_keeps_the_first_under_its_id(store: Store) -> None:
    first = feedback("same", score=0.9, comment="good")
    assert store.feedback.add_feedback(REF, first) is None
    assert store.feedback.add_feedback(REF, feedback("same", score=0.1)) == first
    assert store.feedback.run_feedback(REF, "run-1", 100) == [first]


def test_runs_and_agents_keep_their_own_feedback_even_when_ids_share_a_prefix(
        store: Store) -> None:
    # "run#1" + "x" and "run" + "1#x" would make the same key if ids were simply joined
    store.feedback.add_feedback(REF, feedback("x", run_id="run#1"))
    store.feedback.add_feedback(REF, feedback("1#x", run_id="run"))
    store.feedback.add_feedback(AgentRef("owner", "other"), feedback("x", run_id="run#1"))
    assert [f.feedback_id for f in store.feedback.run_feedback(REF, "run#1", 100)] == ["x"]
    assert [f.feedback_id for f in store.feedback.run_feedback(REF, "run", 100)] == ["1#x"]
    assert store.feedback.run_feedback(REF, "run#", 100) == []
    assert store.feedback.run_feedback(AgentRef("owner", "helper2"), "run#1", 100) == []


def test_a_read_takes_the_first_feedback_by_id_up_to_its_limit(store: Store) -> None:
    for n in range(5):
        store.feedback.add_feedback(REF, feedback(f"f{n}", created_at=f"2026-12-03T1{4 - n}:00:00.000Z"))
    assert [f.feedback_id for f in store.feedback.run_feedback(REF, "run-1", 3)] == \
        ["f2", "f1", "f0"]


def test_a_run_counts_once_in_the_cell_of_its_current_verdicts(store: Store) -> None:
    other = AgentRef("owner", "other")
    store.feedback.set_agreement(REF, "run-1", "pp")
    store.feedback.set_agreement(REF, "run-1", "pp")  # the same verdicts again: no change
    store.feedback.set_agreement(REF, "run#2", "pf")
    store.feedback.set_agreement(REF, "run", "ff")
    store.feedback.set_agreement(REF, "run#2", "ff")  # people changed their mind: moved
    store.feedback.set_agreement(other, "run-1", "fp")
    tables = store.feedback.agreement_tables([REF, other, AgentRef("owner", "unlabelled")])
    assert tables == {REF: AgreementTable(pp=1, ff=2), other: AgreementTable(fp=1),
                      AgentRef("owner", "unlabelled"): AgreementTable()}


def test_a_temporary_agents_agreement_expires_with_it(store: Store) -> None:
    store.feedback.set_agreement(REF, "run-1", "pf", expires_at="2099-01-01T00:00:00.000Z")
    assert store.feedback.agreement_tables([REF])[REF] == AgreementTable(pf=1)


def test_an_agent_has_feedback_once_it_was_given_any(store: Store) -> None:
    assert not store.feedback.has_feedback(REF)
    store.feedback.set_agreement(REF, "run-1", "pp")  # counting agreement gives no feedback
    assert not store.feedback.has_feedback(REF)
    store.feedback.add_feedback(REF, feedback("a"))
    assert store.feedback.has_feedback(REF)
    assert not store.feedback.has_feedback(AgentRef("owner", "other"))


def test_a_labelled_run_is_marked_until_judged_and_counted_once_judged(store: Store) -> None:
    store.feedback.set_agreement(REF, "run#1", None)  # people's verdict, no judge's yet
    store.feedback.set_agreement(REF, "run-2", "fp")
    store.feedback.set_agreement(REF, "run-2", None)  # a judged run stays in its cell
    assert store.feedback.agreement_tables([REF])[REF] == AgreementTable(fp=1)
    assert store.feedback.run_marks(REF, ["run#1", "run-2", "run", "run-3"]) == \
        {"run#1": None, "run-2": "fp"}
    store.feedback.set_agreement(REF, "run#1", "pp")
    assert store.feedback.agreement_tables([REF])[REF] == AgreementTable(pp=1, fp=1)
    assert store.feedback.run_marks(REF, ["run#1"]) == {"run#1": "pp"}
    assert store.feedback.run_marks(AgentRef("owner", "other"), ["run#1"]) == {}


def test_an_agents_label_set_is_kept_in_its_order_and_cleared(store: Store) -> None:
    assert store.feedback.label_set(REF) is None
    store.feedback.set_label_set(REF, ["wrong-tool", "correct", "off topic"])
    assert store.feedback.label_set(REF) == ["wrong-tool", "correct", "off topic"]
    store.feedback.set_label_set(REF, ["correct"], expires_at="2099-01-01T00:00:00.000Z")
    assert store.feedback.label_set(REF) == ["correct"]
    assert store.feedback.label_set(AgentRef("owner", "other")) is None
    store.feedback.set_label_set(REF, [])
    assert store.feedback.label_set(REF) is None
