"""The fold is pure: these tests need no store."""

from __future__ import annotations

from bench_core.domain.folding import fold_batch, fold_task, logged_cost
from bench_core.domain.models import TaskState

from tests.factories import clean, ev, task_events


def test_fold_does_not_modify_the_stored_state() -> None:
    before = TaskState(task_id="t1", name="x")
    after = fold_task(before, "t1", clean(task_events("t1")))
    assert before.status == "running" and after.status == "success"


def test_duration_comes_from_timestamps_when_the_end_has_none() -> None:
    start = ev("task.start", "t1", ts="2026-12-02T10:00:00.000Z")
    end = ev("task.end", "t1", status="success", ts="2026-12-02T10:00:01.250Z")
    fold = fold_batch({}, clean([start, end]))
    assert fold.tasks["t1"].duration_ms == 1250
    assert fold.runs[0][1].duration_ms == 1250


def test_subtasks_hand_cost_to_parents_outside_the_batch() -> None:
    fold = fold_batch({}, clean(task_events("c1", parent="p0", cost=0.25)))
    assert fold.runs == [] and fold.child_costs == {"p0": 0.25}
    assert fold.finished == [("c1", False)]


def test_a_parent_still_open_in_the_batch_receives_its_childs_cost() -> None:
    events = [ev("task.start", "p1"), *task_events("c1", parent="p1", cost=0.5)]
    fold = fold_batch({}, clean(events))
    assert fold.tasks["p1"].child_cost_usd == 0.5 and fold.child_costs == {}


def test_only_well_formed_cost_logs_count() -> None:
    assert logged_cost({"label": "cost", "cost_usd": 0.5}) == 0.5
    assert logged_cost({"label": "cost", "cost_usd": True}) == 0
    assert logged_cost({"label": "cost", "cost_usd": -1}) == 0
    assert logged_cost({"label": "found", "value": 3}) == 0
    assert logged_cost("cost") == 0
