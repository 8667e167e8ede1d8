"""The original system's published client (bench-observe 0.1.3), unchanged: a multi-turn agent
that names its conversation and user in each run's metadata (`t.metadata({"session_id": ...})`,
the only place that client can) makes one session on our server, its turns in order."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
from bench_core.domain.models import AgentRef
from bench_core.domain.privacy import pseudonym

from tests.conftest import RunningServer
from tests.e2e.test_original_client import run_original_client

AGENT_SCRIPT = textwrap.dedent('''
    import asyncio, os
    import bench

    agent = bench.observe(api_key=os.environ["BENCH_KEY"], agent="legacy-chat",
                          endpoint=os.environ["BENCH_ENDPOINT"], flush_interval_ms=50)

    async def main():
        for i, question in enumerate(["hi", "and then?", "bye"]):
            async def reply(t, i=i):
                t.metadata({"session_id": "legacy-conv-1", "userId": "mail@example.com",
                            "turn": i})
                return "answer " + str(i)
            await agent.task("reply", {"question": question}, reply)
            await asyncio.sleep(0.01)
        await agent.flush()

    asyncio.run(main())
''')


def test_the_original_clients_metadata_makes_a_session(
        bench_server: RunningServer, original_client_dir: Path, tmp_path: Path) -> None:
    login, key = run_original_client(bench_server, original_client_dir, tmp_path, AGENT_SCRIPT,
                                     "legacy-chat")

    path = f"/api/agents/{login}/legacy-chat/sessions/legacy-conv-1"
    answer = bench_server.get(path)
    assert answer["run_count"] == 3 and answer["successes"] == 3
    assert [run["messages"][0]["parts"][0]["text"] for run in answer["runs"]] == [
        '{\n "question": "hi"\n}', '{\n "question": "and then?"\n}', '{\n "question": "bye"\n}']
    assert [run["messages"][1]["parts"][0]["text"] for run in answer["runs"]] == [
        "answer 0", "answer 1", "answer 2"]
    assert answer["user"] == pseudonym(AgentRef(login, "legacy-chat"), "mail@example.com")
    assert bench_server.get(path, key)["user"] == "mail@example.com"
    run = answer["runs"][0]["run_id"]
    shown = httpx.get(f"{bench_server.url}/api/agents/{login}/legacy-chat/runs/{run}").json()
    assert shown["spans"][0]["metadata"] == {"session_id": "legacy-conv-1", "turn": 0}, \
        "the metadata shown to a visitor leaves out who the user is"
