"""Two runs compared (`bench_core.domain.run_diff`): spans matched by their path of names,
repeated names in order, what counts as changed, the order of the rows and the first place
the runs part."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import TaskState, Usage
from bench_core.domain.run_diff import RunDiff, Shown, diff
from bench_core.domain.runs import Node, build_tree
from bench_core.render.formatting import delta


def span(task_id: str, name: str, parent: str | None, start: int, *, status: str = "success",
         duration: float = 100, cost: float | None = None, tokens: int | None = None,
         model: str | None = None) -> TaskState:
    return TaskState(task_id, parent_task_id=parent, name=name, status=status,
                     duration_ms=duration, cost_usd=cost, model=model,
                     evidence=Usage(input_tokens=tokens, output_tokens=tokens, calls=1)
                     if tokens is not None else None,
                     started_at=f"2026-12-02T16:00:{start:02d}.000Z",
                     ended_at=f"2026-12-02T16:00:{start + 1:02d}.000Z")


Step = tuple[str, str, str | None, dict[str, Any]]


def run(prefix: str, spans: list[Step]) -> Node:
    """A run's tree from (id, name, parent id, fields) in start order; ids get `prefix`."""
    root = span(prefix, "research", None, 0, duration=5000)
    tasks = [span(f"{prefix}-{i}", name, f"{prefix}-{parent}" if parent else prefix, n + 1,
                  **fields) for n, (i, name, parent, fields) in enumerate(spans)]
    return build_tree(root, tasks)


BASE: list[Step] = [("plan", "plan", None, {}), ("s1", "search", None, {}),
        ("s2", "search", None, {}), ("f", "fetch", "s2", {}),
        ("answer", "answer", None, {"tokens": 100, "model": "gpt-4o-mini"})]


def kinds(result: RunDiff) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(r.kind, r.name or "", r.changes) for r in result.rows]


def test_identical_runs_match_span_for_span_and_do_not_part() -> None:
    result = diff(run("a", BASE), run("b", BASE), {}, {})
    assert [k for k, _, _ in kinds(result)] == ["same"] * 6
    assert result.first_divergence is None
    assert result.counts == {"same": 6, "changed": 0, "added": 0, "removed": 0}


def test_repeated_names_match_in_order_and_a_step_more_is_one_added_span() -> None:
    more = [*BASE[:3], ("s3", "search", None, {}), *BASE[3:]]
    result = diff(run("a", BASE), run("b", more), {}, {})
    assert kinds(result) == [
        ("same", "research", ()), ("same", "plan", ()), ("same", "search", ()),
        ("same", "search", ()), ("same", "fetch", ()), ("added", "search", ()),
        ("same", "answer", ())]
    assert result.first_divergence == 5
    # the matched second search is B's second, not the one added after it
    assert result.rows[3].b is not None and result.rows[3].b.task_id == "b-s2"


def test_a_removed_subtree_shows_every_span_of_it_removed() -> None:
    fewer = [BASE[0], BASE[1], BASE[4]]
    result = diff(run("a", BASE), run("b", fewer), {}, {})
    assert [(k, n) for k, n, _ in kinds(result)] == [
        ("same", "research"), ("same", "plan"), ("same", "search"), ("removed", "search"),
        ("removed", "fetch"), ("same", "answer")]
    assert result.rows[4].depth == 2 and result.rows[4].b is None


def test_status_tokens_model_cost_and_a_real_change_of_duration_count_as_changes() -> None:
    changed: list[Step] = [("plan", "plan", None, {"duration": 104}),  # jitter: no change
               ("s1", "search", None, {"duration": 400}),
               ("s2", "search", None, {"status": "failed"}), ("f", "fetch", "s2", {"cost": 0.01}),
               ("answer", "answer", None, {"tokens": 150, "model": "gpt-4o"})]
    result = diff(run("a", BASE), run("b", changed), {}, {})
    assert kinds(result)[1:] == [
        ("same", "plan", ()), ("changed", "search", ("duration",)),
        ("changed", "search", ("status",)), ("changed", "fetch", ("cost",)),
        ("changed", "answer", ("tokens", "model"))]


def test_content_is_compared_only_where_both_sides_are_shown() -> None:
    a, b = run("a", BASE), run("b", BASE)
    shown = diff(a, b, {"a-plan": Shown("x", "out-1")}, {"b-plan": Shown("x", "out-2")})
    assert shown.rows[1].changes == ("output",)
    hidden = diff(a, b, {"a-plan": Shown(None, None)}, {"b-plan": Shown(None, None)})
    assert hidden.rows[1].kind == "same"


def test_the_first_divergence_is_the_step_that_differs_not_the_parent_ending_after_it() -> None:
    a = run("a", [("p", "plan", None, {"tokens": 10}), ("c", "call", "p", {"tokens": 10})])
    b = run("b", [("p", "plan", None, {"tokens": 20}), ("c", "call", "p", {"tokens": 20})])
    result = diff(a, b, {}, {})
    assert [r.kind for r in result.rows] == ["same", "changed", "changed"]
    assert result.first_divergence == 2  # the call, not the plan whose tokens sum it


def test_deltas_read_signed_in_their_own_units() -> None:
    assert delta(412, "ms") == "+412 ms"
    assert delta(-0.0021, "usd") == "−$0.0021"
    assert delta(0) == "±0"
    assert delta(1200) == "+1,200"
    assert delta(None) == "—"


def test_a_parent_given_another_input_is_where_the_runs_part() -> None:
    a = run("a", [("p", "plan", None, {}), ("c", "call", "p", {"tokens": 10})])
    b = run("b", [("p", "plan", None, {}), ("c", "call", "p", {"tokens": 20})])
    result = diff(a, b, {"a-p": Shown("in-1", "out-1")}, {"b-p": Shown("in-2", "out-2")})
    assert result.rows[1].changes == ("input", "output")
    assert result.first_divergence == 1
