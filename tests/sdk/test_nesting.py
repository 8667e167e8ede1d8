"""Parent links, return values, exceptions and costs in sync, async and threaded code."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import bench
import pytest
from conftest import HANG_GUARD


def parent_of(memory, name: str):
    ends = memory.ends()
    parent_id = ends[name]["parent_task_id"]
    return next((n for n, e in ends.items() if e["task_id"] == parent_id), None)


def test_sync_span_nests_and_returns(make_agent, memory) -> None:
    agent = make_agent()
    with agent.span("outer", {"q": 1}) as outer:
        outer.log("step", 1)
        with agent.span("inner") as inner:
            inner.set_output("done")
    assert agent.flush_sync(HANG_GUARD)
    assert parent_of(memory, "inner") == "outer"
    assert parent_of(memory, "outer") is None
    assert memory.ends()["inner"]["output"] == "done"
    assert bench.current_task() is None


def test_decorators_on_sync_and_async_functions(make_agent, memory) -> None:
    agent = make_agent()

    @agent.span("fetch")
    def fetch(url: str, retries: int = 1) -> str:
        bench.current_task().log("url", url)
        return f"<{url}>"

    @agent.span()
    async def plan(goal: str) -> list[str]:
        await asyncio.sleep(0)
        return [fetch(goal)]

    assert asyncio.run(plan("x")) == ["<x>"]
    assert agent.flush_sync(HANG_GUARD)
    ends = memory.ends()
    plan_name = next(n for n in ends if n.endswith("plan"))
    assert parent_of(memory, "fetch") == plan_name
    assert ends["fetch"]["output"] == "<x>"
    starts = {e["name"]: e for e in memory.kind("task.start")}
    assert starts["fetch"]["input"] == {"url": "x"}
    assert starts[plan_name]["input"] == {"goal": "x"}


def test_method_decorator_leaves_out_self(make_agent, memory) -> None:
    agent = make_agent()

    class Tool:
        @agent.span("tool.run")
        def run(self, arg: int) -> int:
            return arg * 2

    assert Tool().run(4) == 8
    assert agent.flush_sync(HANG_GUARD)
    assert memory.kind("task.start")[0]["input"] == {"arg": 4}


def test_async_gather_children_link_to_their_parent(make_agent, memory) -> None:
    agent = make_agent()

    async def leaf(t):
        await asyncio.sleep(0.001)
        return t.name

    async def main():
        async with agent.task_ctx("root", None):
            await asyncio.gather(*(agent.task(f"leaf{i}", i, leaf) for i in range(5)))
            async with agent.span("middle"):
                await asyncio.gather(agent.task("deep", None, leaf))

    asyncio.run(main())
    assert agent.flush_sync(HANG_GUARD)
    for i in range(5):
        assert parent_of(memory, f"leaf{i}") == "root"
    assert parent_of(memory, "deep") == "middle"
    assert parent_of(memory, "middle") == "root"


def test_threads_with_copied_context_link_to_parent(make_agent, memory) -> None:
    agent = make_agent()

    def work(name: str) -> None:
        with agent.span(name):
            pass

    async def via_to_thread() -> None:
        with agent.span("async-root"):
            await asyncio.to_thread(work, "to-thread")

    with agent.span("root"):
        ctx = contextvars.copy_context()
        worker = threading.Thread(target=ctx.run, args=(work, "copied"))
        worker.start()
        worker.join(HANG_GUARD)
        plain = threading.Thread(target=work, args=("plain",))
        plain.start()
        plain.join(HANG_GUARD)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda n: contextvars.copy_context().run(work, n), []))
    asyncio.run(via_to_thread())
    assert agent.flush_sync(HANG_GUARD)
    assert parent_of(memory, "copied") == "root"
    assert parent_of(memory, "plain") is None, "a thread without the context starts a new root"
    assert parent_of(memory, "to-thread") == "async-root"


def test_concurrent_threads_keep_their_own_parents(make_agent, memory) -> None:
    agent = make_agent()
    span = agent.span("shared-span")

    def run(i: int) -> None:
        with agent.span(f"root{i}"):
            for _ in range(20):
                with span as t:
                    t.log("i", i)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(8)))
    assert agent.flush_sync(HANG_GUARD)
    roots = {e["task_id"]: e["name"] for e in memory.kind("task.end") if e["name"].startswith("root")}
    children = [e for e in memory.kind("task.end") if e["name"] == "shared-span"]
    assert len(children) == 160
    logs = {e["task_id"]: e["data"]["value"] for e in memory.kind("task.log")}
    for child in children:
        assert roots[child["parent_task_id"]] == f"root{logs[child['task_id']]}"


def test_exceptions_propagate_and_mark_failed(make_agent, memory) -> None:
    agent = make_agent()

    async def boom(t):
        raise KeyError("missing")

    with pytest.raises(KeyError):
        asyncio.run(agent.task("async-fail", {"a": 1}, boom))
    with pytest.raises(ValueError, match="bad"), agent.span("sync-fail"):
        raise ValueError("bad")

    @agent.span("deco-fail")
    def deco() -> None:
        raise RuntimeError()

    with pytest.raises(RuntimeError):
        deco()
    assert agent.flush_sync(HANG_GUARD)
    ends = memory.ends()
    assert ends["async-fail"]["status"] == "failed"
    assert ends["async-fail"]["output"] == "'missing'"
    assert ends["sync-fail"]["output"] == "bad"
    assert ends["deco-fail"]["output"] == "RuntimeError", "empty messages fall back to the type name"


def test_cancelled_task_is_failed_and_cancellation_propagates(make_agent, memory) -> None:
    agent = make_agent()

    async def slow(t):
        await asyncio.sleep(HANG_GUARD)

    async def main() -> None:
        job = asyncio.ensure_future(agent.task("cancelled", None, slow))
        await asyncio.sleep(0.01)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())
    assert agent.flush_sync(HANG_GUARD)
    assert memory.ends()["cancelled"]["status"] == "failed"


def test_subtask_costs_roll_up_like_the_original(make_agent, memory) -> None:
    agent = make_agent()

    async def child(t):
        t.cost(0.25, {"source": "openai", "model": "m"})
        return "c"

    async def parent(t):
        t.cost(0.5)
        await t.subtask("child", {"x": 1}, child)
        t.metadata({"k": "v"})
        return "p"

    assert asyncio.run(agent.task("parent", None, parent)) == "p"
    assert agent.flush_sync(HANG_GUARD)
    ends = memory.ends()
    assert ends["child"]["cost_usd"] == 0.25
    assert ends["parent"]["cost_usd"] == 0.75
    assert ends["parent"]["cost_breakdown"] == [
        {"source": "manual", "amount_usd": 0.5},
        {"source": "openai", "model": "m", "amount_usd": 0.25},
    ]
    assert ends["parent"]["data"] == {"k": "v"}
    assert "cost_breakdown" not in memory.ends()["child"] or ends["child"]["cost_breakdown"]


def test_invalid_cost_is_ignored_not_raised(make_agent, memory, caplog) -> None:
    agent = make_agent()
    with agent.span("costly") as t:
        t.cost(float("nan"))
        t.cost(-1)
        t.cost("3")  # type: ignore[arg-type]
        t.cost(True)  # type: ignore[arg-type]
        t.cost(float("inf"))
        t.cost(2)
        t.cost(999_999)  # would take the task over the server's limit
    assert agent.flush_sync(HANG_GUARD)
    end = memory.ends()["costly"]
    assert end["cost_usd"] == 2
    assert end["cost_breakdown"] == [{"source": "manual", "amount_usd": 2}]
    assert "ignoring cost" in caplog.text


def test_no_cost_means_no_breakdown_key(make_agent, memory) -> None:
    agent = make_agent()
    with agent.span("free"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    assert "cost_breakdown" not in memory.ends()["free"]


def test_recorded_values_are_snapshots(make_agent, memory) -> None:
    agent = make_agent()
    messages = [{"role": "user", "content": "hi"}]
    with agent.span("chat", messages) as t:
        t.log("messages", messages)
        messages.append({"role": "assistant", "content": "later"})
    assert agent.flush_sync(HANG_GUARD)
    assert len(memory.kind("task.start")[0]["input"]) == 1
    assert len(memory.kind("task.log")[0]["data"]["value"]) == 1


def test_custom_events_link_to_the_current_task(make_agent, memory) -> None:
    agent = make_agent()
    agent.event("boot", {"v": 1})
    with agent.span("work") as t:
        agent.event("tool.use", {"tool": "search"})
    assert agent.flush_sync(HANG_GUARD)
    boot, tool = memory.kind("boot")[0], memory.kind("tool.use")[0]
    assert "task_id" not in boot
    assert tool["task_id"] == t.task_id
