"""``bench check`` as a CI job runs it: the SDK's command line in a subprocess against a real
server on loopback, each exit status (0 not worse, 1 worse with the evidence, 2 too few runs,
3 no check made) and ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.benchmark_support import SUITE, graded_run, new_slug, run_body, suite_document, with_output
from tests.conftest import RunningServer
from tests.http.surfaces_data import new_login, seed_agent


def bench_check(server: RunningServer, tmp_path: Path, *args: str, key: str | None = None
                ) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BENCH_")}
    env.update(BENCH_ENDPOINT=server.url, XDG_CONFIG_HOME=str(tmp_path / "config"),
               **({"BENCH_KEY": key} if key else {}))
    return subprocess.run([sys.executable, "-m", "bench.cli", "check", *args], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=60)


def releases(server: RunningServer, *failures: tuple[str, int, int]) -> tuple[str, str]:
    """An agent with one release per (version, runs, failed runs), in that order; its
    login/slug and owner key."""
    login = new_login()
    key = server.create_key(login)
    for version, runs, failed in failures:
        seed_agent(server, login=login, key=key, slug="agent", runs=runs, failures=failed,
                   version=version)
    return f"{login}/agent", key


def test_a_better_release_passes(bench_server: RunningServer, tmp_path: Path) -> None:
    path, _ = releases(bench_server, ("1.0.0", 30, 8), ("1.1.0", 30, 0))
    done = bench_check(bench_server, tmp_path, "--agent", path, "--version", "1.1.0")
    assert done.returncode == 0, done.stderr
    assert "1.1.0 (30 runs) against 1.0.0 (30 runs): no regression" in done.stdout
    assert "Success rate" in done.stdout and "better" in done.stdout


def test_a_worse_release_fails_with_the_evidence(bench_server: RunningServer,
                                                   tmp_path: Path) -> None:
    path, key = releases(bench_server, ("1.0.0", 30, 0), ("2.0.0", 30, 12))
    done = bench_check(bench_server, tmp_path, "--agent", "agent", "--version", "2.0.0", key=key)
    assert done.returncode == 1, done.stderr
    assert "WORSE beyond noise" in done.stdout, "a bare slug is the key's owner's"
    (success,) = [line for line in done.stdout.splitlines() if "Success rate" in line]
    assert success.startswith(" ✗") and "60% (" in success and "100% (" in success
    assert "worse, p" in success
    answer = json.loads(bench_check(bench_server, tmp_path, "--agent", path, "--version", "2.0.0",
                                    "--against", "1.0.0", "--json").stdout)
    assert answer["status"] == "worse" and "success" in answer["worse"]
    line = next(line for line in answer["lines"] if line["key"] == "success")
    assert line["p_value"] < answer["threshold"] <= answer["alpha"]


def test_a_release_within_noise_passes(bench_server: RunningServer, tmp_path: Path) -> None:
    path, _ = releases(bench_server, ("1.0.0", 30, 3), ("1.0.1", 30, 4))
    done = bench_check(bench_server, tmp_path, "--agent", path, "--version", "1.0.1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "pass"


def test_too_few_runs_yet_exits_2(bench_server: RunningServer, tmp_path: Path) -> None:
    path, _ = releases(bench_server, ("1.0.0", 30, 0), ("1.1.0", 4, 4))
    done = bench_check(bench_server, tmp_path, "--agent", path, "--version", "1.1.0")
    assert done.returncode == 2, done.stderr
    assert "not enough runs yet (at least 10 on each side)" in done.stdout
    unseen = bench_check(bench_server, tmp_path, "--agent", path, "--version", "1.2.0")
    assert unseen.returncode == 2, "a version not yet seen has no runs yet"
    assert "1.2.0 (0 runs) against 1.1.0 (4 runs)" in unseen.stdout
    more = bench_check(bench_server, tmp_path, "--agent", path, "--version", "1.1.0",
                       "--against", "1.0.0", "--min-runs", "50")
    assert more.returncode == 2


@pytest.mark.parametrize(("args", "says"), [
    (["--version", "1.0.0"], "pass --agent and --version (or --benchmark-run)"),
    (["--benchmark-run", "r1", "--agent", "a/b"], "--benchmark-run takes neither"),
    (["--benchmark-run", "no-such-run"], "benchmark run not found"),
    (["--agent", "a/b/c", "--version", "1.0.0"], "--agent must be SLUG or LOGIN/SLUG"),
    (["--agent", "{path}", "--version", "1.0.0", "--min-runs", "3"], "min_runs"),
    (["--agent", "{path}", "--version", "1.0.0", "--against", "0.9"], "version 0.9 has no runs"),
    (["--agent", "{path}", "--version", "1.0.0"], "no version before 1.0.0"),
    (["--agent", "{path}", "--version", "not a version"], "version"),
    (["--agent", "nobody-here/agent", "--version", "1.0.0"], "agent not found"),
    (["--agent", "agent", "--version", "1.0.0"], "names no login"),
])
def test_a_check_that_cannot_be_made_exits_3(bench_server: RunningServer, tmp_path: Path,
                                              args: list[str], says: str) -> None:
    path, _ = releases(bench_server, ("1.0.0", 12, 0))
    done = bench_check(bench_server, tmp_path, *(a.format(path=path) for a in args))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert says in done.stderr and done.stdout == ""


def test_an_unreachable_server_exits_3(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BENCH_")}
    done = subprocess.run([sys.executable, "-m", "bench.cli", "check", "--agent", "a/b",
                           "--version", "1", "--endpoint", "http://127.0.0.1:9"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 3 and "cannot reach http://127.0.0.1:9" in done.stderr


def perfect_run(slug: str) -> dict[str, object]:
    body = run_body(slug, repeats=2)
    for repeat in range(2):
        for i, case in enumerate(suite_document()["cases"]):
            answer = " ".join(f"{f['claim']} [{f['sources'][0]}]" for f in case["facts"])
            body = with_output(body, repeat * len(suite_document()["cases"]) + i, answer)
    return body


def broken_run(slug: str, broken: int) -> dict[str, object]:
    """The perfect run with its first `broken` cases answering nothing useful."""
    body = perfect_run(slug)
    cases = len(suite_document()["cases"])
    for repeat in range(2):
        for i in range(broken):
            body = with_output(body, repeat * cases + i, "I could not find anything.")
    return body


def benchmark_runs(server: RunningServer, *bodies: dict[str, object]) -> list[str]:
    login = new_login()
    key = server.create_key(login)
    ids = []
    for body in bodies:
        accepted = httpx.post(f"{server.url}/api/benchmarks/{SUITE}/runs", json=body,
                              headers={"X-Bench-Key": key}, timeout=30)
        ids.append(graded_run(server.url, accepted, key)["run_id"])
    return ids


def test_a_benchmark_run_gates_on_the_agents_run_before_it(bench_server: RunningServer,
                                                         tmp_path: Path) -> None:
    slug = new_slug()
    good, same, worse, slightly = benchmark_runs(
        bench_server, perfect_run(slug), perfect_run(slug), broken_run(slug, 12),
        broken_run(slug, 13))
    passed = bench_check(bench_server, tmp_path, "--benchmark-run", same)
    assert passed.returncode == 0, passed.stderr
    assert f"run {same} against {good} (22 cases): no regression" in passed.stdout
    failed = bench_check(bench_server, tmp_path, "--benchmark-run", worse)
    assert failed.returncode == 1, failed.stderr
    assert "WORSE beyond noise" in failed.stdout
    (hat_k,) = [line for line in failed.stdout.splitlines() if "pass^k" in line]
    assert hat_k.startswith(" ✗") and "12 cases worse, 0 better" in hat_k
    answer = json.loads(bench_check(bench_server, tmp_path, "--benchmark-run", slightly,
                                    "--against", worse, "--json").stdout)
    assert answer["status"] == "pass" and answer["against"]["run_id"] == worse, \
        "one case more lost is within noise"
    wait = bench_check(bench_server, tmp_path, "--benchmark-run", same, "--min-runs", "30")
    assert wait.returncode == 2 and "not enough yet" in wait.stdout
    first = bench_check(bench_server, tmp_path, "--benchmark-run", good)
    assert first.returncode == 3 and "no earlier run" in first.stderr


def test_a_private_agent_is_checked_with_its_owners_key_only(bench_server: RunningServer,
                                                             tmp_path: Path) -> None:
    path, key = releases(bench_server, ("1.0.0", 30, 0), ("2.0.0", 30, 12))
    response = httpx.patch(f"{bench_server.url}/api/agents/{path}", json={"visibility": "private"},
                           headers={"X-Bench-Key": key}, timeout=10)
    assert response.status_code == 200
    hidden = bench_check(bench_server, tmp_path, "--agent", path, "--version", "2.0.0")
    assert hidden.returncode == 3 and "agent not found" in hidden.stderr
    owned = bench_check(bench_server, tmp_path, "--agent", path, "--version", "2.0.0", key=key)
    assert owned.returncode == 1, owned.stderr
    refused = bench_check(bench_server, tmp_path, "--agent", path, "--version", "2.0.0",
                          key="bk_not_a_real_key_at_all")
    assert refused.returncode == 3 and "rejected the key" in refused.stderr
