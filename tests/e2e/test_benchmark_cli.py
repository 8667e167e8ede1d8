"""`bench benchmark run` end to end: the real CLI in its own process runs the example agent on
the shipped suite against the real local server; the run is stored with its evidence and the
server's own aggregates. Also `list`, `show`, crashing, hanging and unimportable agents, and a
locally changed suite refused by the registry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from bench._benchmark import value_hash
from bench_core.benchmarks.aggregate import summarize
from bench_core.benchmarks.suites import load_suite
from bench_core.domain.models import AgentRef

from tests.benchmark_support import REPO, SUITE, SUITE_DIR, new_slug
from tests.conftest import RunningServer

HANG_GUARD_S = 300


def bench_cli(server: RunningServer, key: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_KEY": key, "BENCH_ENDPOINT": server.url, "XDG_CONFIG_HOME": str(cwd),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "sdk")])}
    env.pop("BENCH_AGENT", None)
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


def test_the_example_agent_runs_three_times_per_case_and_the_server_recomputes(
        bench_server: RunningServer, tmp_path: Path) -> None:
    login, slug = "e" + new_slug(), new_slug()
    key = bench_server.create_key(login)
    # tmp_path has no benchmarks/ folder: the CLI fetches the suite from the server
    done = bench_cli(bench_server, key, tmp_path, "benchmark", "run", SUITE, "--agent",
                     "examples.benchmark_agent:answer", "--agent-slug", slug, "--repeats", "3", "--timeout", "60")
    assert done.returncode == 0, done.stderr
    suite = load_suite(SUITE).suite
    total = 3 * len(suite.cases)
    assert f"] {total}/{total} gzip-vs-zstd-choice #3 ok" in done.stderr  # the progress bar
    assert "meeting-time-zones #1 error" in done.stderr
    distinct = len(suite.cases) - 1  # deterministic answers, one case crashing: graded once each
    assert f"grading 0/{distinct} (pending)" in done.stderr, "it waited for the grades"
    (run,) = bench_server.store.benchmarks.benchmark_runs_of(AgentRef(login, slug), 5)
    stored = bench_server.store.benchmarks.get_benchmark_run(run.run_id)
    assert stored is not None and len(stored.attempts) == total
    assert stored.summary == summarize(stored.attempts, [c.id for c in suite.cases], 3)
    s = stored.summary
    assert s["k"] == 3 and s["errors"] == 3 and s["timeouts"] == 0
    assert 0 < s["pass_hat_k"] < 1 and s["pass_hat_k"] == s["pass_at_k"]
    for attempt in stored.attempts:
        assert attempt.output_hash == value_hash(attempt.output)
        assert attempt.judge == "grounding-heuristic-v1" and attempt.reasoning
        assert attempt.input == suite.agent_input(suite.case(attempt.case_id))  # type: ignore[arg-type]
    assert f"pass rate {s['pass_rate'] * 100:.1f}%" in done.stdout
    assert f"pass^3 {s['pass_hat_k'] * 100:.1f}%" in done.stdout and f"/runs/{run.run_id}" in done.stdout

    shown = bench_cli(bench_server, key, tmp_path, "benchmark", "show", run.run_id)
    assert shown.returncode == 0, shown.stderr
    assert f"run {run.run_id}" in shown.stdout and "meeting-time-zones" in shown.stdout
    listed = bench_cli(bench_server, key, tmp_path, "benchmark", "list")
    assert listed.returncode == 0 and f"{SUITE}: {len(suite.cases)} cases" in listed.stdout


def test_crashes_and_timeouts_are_recorded_per_attempt(bench_server: RunningServer, tmp_path: Path) -> None:
    (tmp_path / "flaky_agent.py").write_text(textwrap.dedent("""
        import threading
        calls = {"n": 0}
        def answer(case):
            calls["n"] += 1
            if "Rayleigh" in case["sources"][0]["title"]:
                threading.Event().wait(30)  # hangs: the runner gives up after --timeout
            if "Pelican" in case["question"]:
                raise RuntimeError("boom")
            return {"answer": " ".join(s["text"] for s in case["sources"]),
                    "citations": [s["id"] for s in case["sources"]]}
    """))
    login, slug = "e" + new_slug(), new_slug()
    key = bench_server.create_key(login, slug)  # an agent key for this very agent
    done = bench_cli(bench_server, key, tmp_path, "benchmark", "run", SUITE, "--agent", "flaky_agent:answer",
                     "--agent-slug", slug, "--repeats", "1", "--timeout", "0.5")
    assert done.returncode == 0, done.stderr
    (run,) = bench_server.store.benchmarks.benchmark_runs_of(AgentRef(login, slug), 5)
    stored = bench_server.store.benchmarks.get_benchmark_run(run.run_id)
    assert stored is not None
    by_case = {a.case_id: a for a in stored.attempts}
    assert by_case["rayleigh-blue-sky"].status == "timeout" and by_case["rayleigh-blue-sky"].score == 0
    assert by_case["pelican-release-conflict"].status == "error"
    assert by_case["pelican-release-conflict"].error == "RuntimeError: boom"
    assert by_case["wilson-vs-wald"].passed and isinstance(by_case["wilson-vs-wald"].output, dict)
    assert stored.summary["timeouts"] == 1 and stored.summary["errors"] == 1


def test_bad_agent_paths_fail_in_one_line_before_running(bench_server: RunningServer, tmp_path: Path) -> None:
    key = bench_server.create_key("e" + new_slug())
    (tmp_path / "broken.py").write_text("raise ImportError('missing dependency')\n")
    for agent, message in (("nothing", "--agent must be module:function"),
                           ("no_such_module:run", "cannot import 'no_such_module'"),
                           ("broken:run", "cannot import 'broken': ImportError: missing dependency"),
                           ("examples.benchmark_agent:nope", "has no 'nope'")):
        done = bench_cli(bench_server, key, REPO if agent.startswith("examples") else tmp_path,
                         "benchmark", "run", SUITE, "--agent", agent, "--agent-slug", "x")
        assert done.returncode == 1, agent
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_locally_changed_suite_is_refused_by_the_registry(bench_server: RunningServer, tmp_path: Path) -> None:
    local = tmp_path / "benchmarks" / SUITE
    shutil.copytree(SUITE_DIR, local)
    cases: list[dict[str, Any]] = json.loads((local / "cases.json").read_text())
    cases[0]["facts"] = cases[0]["facts"][:1]  # an easier case under the same version
    (local / "cases.json").write_text(json.dumps(cases))
    shutil.copy(REPO / "examples" / "benchmark_agent.py", tmp_path / "agent.py")
    key = bench_server.create_key("e" + new_slug())
    done = bench_cli(bench_server, key, tmp_path, "benchmark", "run", SUITE, "--agent", "agent:answer",
                     "--agent-slug", "changed", "--repeats", "1")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("bench: the server answered 409") and "never changes" in last


def test_a_run_still_grading_after_wait_or_failing_says_where_to_look(tmp_path: Path) -> None:
    from bench_core.settings import LLMSettings

    from tests.conftest import start_server
    from tests.fake_openai import Reply, fake_openai

    with fake_openai(Reply(status=503)) as judge:
        server, uvicorn_server, thread = start_server(
            tmp_path / "data", llm=LLMSettings(provider="openai_compat", url=judge.url, model="judge-model",
                                               timeout_s=5))
        try:
            key = server.create_key("e" + new_slug())
            args = ("benchmark", "run", SUITE, "--agent", "examples.benchmark_agent:answer", "--repeats", "1")
            failed = bench_cli(server, key, REPO, *args, "--agent-slug", "down")
            assert failed.returncode == 1
            last = failed.stderr.strip().splitlines()[-1]
            assert "failed: the benchmark judge (openai_compat:judge-model) was unavailable" in last, last
            assert "submit the run again" in last
            waited = bench_cli(server, key, REPO, *args, "--agent-slug", "slow", "--wait", "0.01")
            assert waited.returncode == 1
            last = waited.stderr.strip().splitlines()[-1]
            assert "is still being graded after 0.01 s" in last and "bench benchmark show" in last, last
        finally:
            uvicorn_server.should_exit = True
            thread.join(timeout=10)
