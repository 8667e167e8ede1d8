"""``agent.session(...)`` and a task's ``session_id=``/``user_id=``/``tags=``/``metadata=``: a run's
root task sends its session and user, nested tasks inherit the session through the context
(sync, async, decorators, ``asyncio.gather``), an id the server would refuse is made to fit,
nothing raises into the agent; and against the real server a multi-turn agent's runs make one
session, in order."""

from __future__ import annotations

import asyncio
import uuid

import bench
import pytest
from conftest import FAST, HANG_GUARD


def starts(memory) -> dict[str, dict]:
    return {e["name"]: e for e in memory.kind("task.start")}


def test_a_session_scope_puts_every_run_begun_inside_in_it(make_agent, memory) -> None:
    agent = make_agent()
    with agent.session("conv-1", user_id="user-9"):
        with agent.span("turn-1"), agent.span("step"):
            pass
        with agent.session("conv-2"), agent.span("turn-2"):  # the inner scope wins, the user
            pass                                               # carries on
    with agent.span("outside"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    sent = starts(memory)
    assert (sent["turn-1"]["session_id"], sent["turn-1"]["user_id"]) == ("conv-1", "user-9")
    assert "session_id" not in sent["step"], "a subtask is part of its run already"
    assert (sent["turn-2"]["session_id"], sent["turn-2"]["user_id"]) == ("conv-2", "user-9")
    assert "session_id" not in sent["outside"] and "user_id" not in sent["outside"]


def test_decorators_and_async_tasks_inherit_the_session(make_agent, memory) -> None:
    agent = make_agent()

    @agent.session("sync-conv")
    def handle() -> str:
        with agent.span("sync-turn"):
            return "ok"

    @agent.session("async-conv", user_id=7)
    async def handle_async() -> list[str]:
        async def turn(t: bench.BenchTask) -> str:
            return t.name

        return list(await asyncio.gather(agent.task("gathered-a", None, turn),
                                         agent.task("gathered-b", None, turn)))

    assert handle() == "ok"
    assert asyncio.run(handle_async()) == ["gathered-a", "gathered-b"]

    async def scoped() -> None:
        async with agent.session("ctx-conv"):
            await agent.task("async-with", None, lambda t: None)

    asyncio.run(scoped())
    assert agent.flush_sync(HANG_GUARD)
    sent = starts(memory)
    assert sent["sync-turn"]["session_id"] == "sync-conv"
    assert [sent[n]["session_id"] for n in ("gathered-a", "gathered-b")] == ["async-conv"] * 2
    assert sent["gathered-a"]["user_id"] == "7"
    assert sent["async-with"]["session_id"] == "ctx-conv"


def test_a_tasks_own_keywords_win_and_start_its_metadata(make_agent, memory) -> None:
    agent = make_agent()
    with agent.session("outer"), agent.span("mine", session_id="own", user_id="u-1", tags=["beta", "eu"],
                    metadata={"plan": "pro"}) as t:
        t.metadata({"step": 2})

    async def run() -> None:
        async with agent.task_ctx("ctx", session_id="ctx-own", tags="one"):
            pass

    asyncio.run(run())
    assert agent.flush_sync(HANG_GUARD)
    sent = starts(memory)
    assert (sent["mine"]["session_id"], sent["mine"]["user_id"]) == ("own", "u-1")
    assert memory.ends()["mine"]["data"] == {"plan": "pro", "tags": ["beta", "eu"], "step": 2}
    assert sent["ctx"]["session_id"] == "ctx-own"
    assert memory.ends()["ctx"]["data"] == {"tags": ["one"]}


@pytest.mark.parametrize("given, sent", [
    ("a/b#c", "a-b-c"), ("x" * 300, "x" * 128), (42, "42"), ("  ", None), ("..", None),
    (object(), None), (True, None), (None, None)])
def test_an_id_is_made_to_fit_and_never_raises(make_agent, memory, given, sent) -> None:
    agent = make_agent()
    with agent.session(given), agent.span("turn"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    assert starts(memory)["turn"].get("session_id") == sent


def test_a_multi_turn_agent_makes_one_session_on_the_server(bench_server) -> None:
    login, slug = "s" + uuid.uuid4().hex[:10], "chat-agent"
    agent = bench.BenchAgent(bench_server.create_key(login), slug, endpoint=bench_server.url,
                             sender_config=FAST)
    bench_server.showing_content(login, slug)
    try:
        with agent.session("conversation-1", user_id="person@example.com"):
            for question in ("hello", "what next?", "thanks"):
                with agent.span("reply", {"messages": [{"role": "user", "content": question}]}
                                ) as t:
                    with agent.span("think"):
                        pass
                    t.set_output(f"answer to {question}")
        assert agent.flush_sync(HANG_GUARD)
    finally:
        agent.shutdown_sync(HANG_GUARD)
    answer = bench_server.get(f"/api/agents/{login}/{slug}/sessions/conversation-1")
    assert answer["run_count"] == 3 and answer["successes"] == 3
    asked = [run["messages"][0]["parts"][0]["text"] for run in answer["runs"]]
    assert asked == ["hello", "what next?", "thanks"]
    assert [run["messages"][1]["parts"][0]["text"] for run in answer["runs"]] == [
        "answer to hello", "answer to what next?", "answer to thanks"]
    assert answer["user"] != "person@example.com" and answer["user"].startswith("u-")
