"""Runs in the domain (`bench_core.domain.runs`): which run a task belongs to as its ancestors
arrive, the tree a run is drawn as, what collapses in a big one, and the log cap."""

from __future__ import annotations

from bench_core.domain.field_limits import dumps
from bench_core.domain.models import TaskState
from bench_core.domain.runs import (
    MAX_LOG_BYTES,
    MAX_LOG_ENTRIES,
    Reassign,
    append_log,
    assign_runs,
    build_tree,
    rows,
    walk,
)


def task(task_id: str, parent: str | None = None, start: int = 0, status: str = "success",
         run_id: str | None = None) -> TaskState:
    return TaskState(task_id, parent_task_id=parent, status=status, run_id=run_id,
                     started_at=f"2026-12-02T16:00:00.{start:03d}Z",
                     ended_at=f"2026-12-02T16:00:00.{start + 1:03d}Z")


def test_a_batch_resolves_runs_through_itself_and_through_stored_parents() -> None:
    batch = {"c": task("c", "b"), "b": task("b", "a")}
    moves, unknown = assign_runs(batch, {"a": task("a", run_id="a")})
    assert (batch["b"].run_id, batch["c"].run_id) == ("a", "a")
    assert unknown == set()
    assert Reassign("b", "a") in moves  # tasks stored under b earlier move to a


def test_an_unknown_parent_stands_for_the_run_until_it_arrives() -> None:
    batch = {"leaf": task("leaf", "middle")}
    moves, unknown = assign_runs(batch, {})
    assert batch["leaf"].run_id == "middle" and unknown == {"middle"}
    later = {"middle": task("middle", "root")}
    moves, _ = assign_runs(later, {"middle": TaskState("middle", run_id="middle")})
    assert moves == [Reassign("middle", "root")] and later["middle"].run_id == "root"


def test_a_parent_cycle_ends_instead_of_looping() -> None:
    batch = {"x": task("x", "y"), "y": task("y", "x")}
    assign_runs(batch, {})
    assert {batch["x"].run_id, batch["y"].run_id} <= {"x", "y"}


def test_the_tree_is_in_start_order_with_offsets_and_failures_flagged_upwards() -> None:
    root = task("r", start=0)
    tree = build_tree(root, [task("b", "r", 50), task("a", "r", 10),
                             task("a1", "a", 20, status="failed"), task("orphan", "gone", 30)])
    order = [(n.task_id, n.depth, n.start_offset_ms) for n in walk(tree)]
    assert order == [("r", 0, 0.0), ("a", 1, 10.0), ("a1", 2, 20.0), ("orphan", 1, 30.0),
                     ("b", 1, 50.0)]
    assert (tree.failed_below, tree.descendants) == (1, 4)


def test_wide_and_deep_runs_draw_a_bounded_number_of_rows_with_counts() -> None:
    root = task("r")
    kids = [task(f"k{i}", "r", i % 900) for i in range(300)]
    chain = [task(f"d{i}", f"d{i - 1}" if i else "r", 1) for i in range(30)]
    chain[-1].status = "failed"
    tree = build_tree(root, kids + chain)
    drawn = rows(tree, children_shown=20, depth_shown=5, rows_shown=100)
    spans = [r for r in drawn if r.kind == "span"]
    assert len(spans) <= 100
    more = next(r for r in drawn if r.kind == "children")
    assert more.node is tree and more.hidden == 301 - 20  # the chain starts second: drawn
    deeper = next(r for r in drawn if r.kind == "deeper")
    assert deeper.hidden_failed == 1 and deeper.hidden == 30 - 5
    everything = rows(tree, expand=lambda n: n is tree, children_shown=20, depth_shown=50,
                      rows_shown=100)
    rest = [r for r in everything if r.kind == "rest"]
    assert len(rest) == 1 and rest[0].hidden + sum(r.kind == "span" for r in everything) == 331


def test_logs_are_capped_by_count_and_bytes_and_count_the_rest() -> None:
    logs: list[dict] = []
    for i in range(MAX_LOG_ENTRIES + 50):
        append_log(logs, "t", {"label": "n", "value": i})
    assert len(logs) == MAX_LOG_ENTRIES and logs[-1] == {"omitted": 51}
    big: list[dict] = []
    for _ in range(10):
        append_log(big, "t", "x" * (MAX_LOG_BYTES // 4))
    assert sum(len(dumps(e)) for e in big) <= MAX_LOG_BYTES + 100 and "omitted" in big[-1]


def test_every_collapsed_row_leads_on_until_every_span_is_drawn() -> None:
    """Following each collapsed row's way on (`Row.resume`, within its span's subtree for
    "children" and "deeper", the whole tree for "rest") draws every span of a tree too wide,
    too deep and too big for one page, each once per way it is reached, nothing lost."""
    tasks = [task(f"w{i}", "root", start=1) for i in range(120)]  # wide
    tasks += [task(f"d{i}", f"d{i - 1}" if i else "w3", start=2) for i in range(30)]  # deep
    tree = build_tree(task("root"), tasks)
    seen: set[str] = set()
    todo = [(tree, None)]
    pages = 0
    while todo:
        scope, start = todo.pop()
        pages += 1
        drawn = rows(scope, start=start, children_shown=10, depth_shown=5, rows_shown=40)
        assert len(drawn) <= 41
        for row in drawn:
            if row.kind == "span":
                seen.add(row.node.task_id)
            else:
                assert row.resume is not None and row.hidden > 0
                todo.append((tree if row.kind == "rest" else row.node, row.resume))
    assert seen == {t.task_id for t in walk(tree)} and pages < 60


def test_rows_from_a_span_go_on_with_the_later_siblings_of_its_ancestors() -> None:
    tree = build_tree(task("root"), [task("a", "root", 1), task("a1", "a", 2),
                                     task("a2", "a", 3), task("b", "root", 4)])
    start = tree.children[0].children[0]  # a1
    assert [r.node.task_id for r in rows(tree, start=start)] == ["a1", "a2", "b"]
    assert [r.node.task_id for r in rows(tree.children[0], start=start)] == ["a1", "a2"]
