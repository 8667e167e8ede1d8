"""The example agents run against a server with no provider keys and record linked tasks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_python

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(("script", "root"), [("research_agent.py", "research"), ("tool_agent.py", "handle-request")])
def test_example_runs_and_delivers(sink, tmp_path, script: str, root: str) -> None:
    env = {**os.environ, "BENCH_KEY": "bk_example", "BENCH_ENDPOINT": sink.url, "XDG_CONFIG_HOME": str(tmp_path)}
    env.pop("BENCH_AGENT", None)
    code = f"import runpy, sys; sys.argv = ['{script}', '--runs', '4', '--seed', '7']; " \
           f"runpy.run_path({str(EXAMPLES / script)!r}, run_name='__main__')"
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    assert "4 runs" in result.stdout and "delivered to" in result.stdout
    ends = sink.of_kind("task.end")
    roots = [e for e in ends if e["name"] == root]
    assert len(roots) == 4 and all(e["parent_task_id"] is None for e in roots)
    root_ids = {e["task_id"] for e in roots}
    by_id = {e["task_id"]: e for e in ends}
    for end in ends:
        top = end
        while top["parent_task_id"] is not None:
            top = by_id[top["parent_task_id"]]
        assert top["task_id"] in root_ids, "every step belongs to a run"
    assert any(e.get("cost_usd") for e in roots)
