"""The agent's version from the real SDK to a real server: ``observe(version=...)``, else
``BENCH_AGENT_VERSION``, else the git commit of the working directory (read from ``.git``
without a ``git`` binary), else none; a version the server would refuse is made to fit."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import bench
import pytest
from bench._config import agent_version
from bench._git import head_commit
from conftest import FAST, HANG_GUARD, run_python

SHA = "3f1c2a9be0d4c5f67a8b9c0d1e2f3a4b5c6d7e8f"
OTHER = "a" * 40


def checkout(root: Path, *, packed: bool = False) -> Path:
    """A repository's ``.git`` as git writes it, with ``main`` at ``SHA`` (loose or packed)."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    if packed:
        (git / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n"
                                         f"{OTHER} refs/heads/other\n{SHA} refs/heads/main\n")
    else:
        (git / "refs" / "heads" / "main").write_text(SHA + "\n")
    return git


def test_explicit_versions_reach_the_server_on_every_run(server: Any) -> None:
    key = server.create_key("sdk-versions")
    for version, runs in (("1.0.0", 12), ("1.1.0", 12)):
        agent = bench.BenchAgent(key, "released", endpoint=server.url, sender_config=FAST,
                                 version=version)
        for i in range(runs):
            with agent.span("answer", {"i": i}):
                pass
        assert agent.flush_sync(HANG_GUARD)
        agent.shutdown_sync()
    answer = server.get("/api/agents/sdk-versions/released/versions")
    assert [(v["version"], v["runs"]) for v in answer["versions"]] == [("1.1.0", 12), ("1.0.0", 12)]
    assert answer["comparison"]["newer"] == "1.1.0"
    tasks = server.get("/api/agents/sdk-versions/released/tasks", limit=50)["tasks"]
    assert {t["version"] for t in tasks} == {"1.0.0", "1.1.0"}


def test_the_environment_then_the_git_commit_give_the_version(server: Any, tmp_path: Path) -> None:
    """In a fresh process with no ``git`` on the PATH: the commit comes from ``.git`` itself."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    checkout(repo)
    code = textwrap.dedent("""
        import bench
        agent = bench.observe(agent="from-git")
        with agent.span("only-run"):
            pass
    """)
    env = {**os.environ, "BENCH_KEY": server.create_key("sdk-git"), "BENCH_ENDPOINT": server.url,
           "XDG_CONFIG_HOME": str(tmp_path), "PATH": str(tmp_path / "no-bin")}
    env.pop("BENCH_AGENT_VERSION", None)
    result = run_python(code, env, cwd=repo / "src")
    assert result.returncode == 0, result.stderr
    result = run_python(code, {**env, "BENCH_AGENT_VERSION": "2026.12.05"}, cwd=repo / "src")
    assert result.returncode == 0, result.stderr
    versions = server.get("/api/agents/sdk-git/from-git/versions")["versions"]
    assert sorted(v["version"] for v in versions) == ["2026.12.05", SHA[:7]]


def test_a_version_the_server_would_refuse_is_made_to_fit(server: Any, caplog) -> None:
    agent = bench.BenchAgent(server.create_key("sdk-fit"), "fitted", endpoint=server.url,
                             sender_config=FAST, version="release 7/b#2")
    with agent.span("run"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    agent.shutdown_sync()
    versions = server.get("/api/agents/sdk-fit/fitted/versions")["versions"]
    assert [v["version"] for v in versions] == ["release-7-b-2"]
    assert any("sent as 'release-7-b-2'" in r.getMessage() for r in caplog.records)


def test_no_version_anywhere_sends_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_AGENT_VERSION", raising=False)
    assert agent_version(None, tmp_path) is None
    assert agent_version("", tmp_path) is None
    assert agent_version("v" * 80, tmp_path) == "v" * 64


@pytest.mark.parametrize("packed", [False, True])
def test_the_commit_is_read_loose_or_packed_from_any_subdirectory(tmp_path: Path,
                                                                    packed: bool) -> None:
    checkout(tmp_path, packed=packed)
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert head_commit(tmp_path / "a" / "b") == SHA[:7]


def test_a_detached_head_and_a_worktree_are_read(tmp_path: Path) -> None:
    main = tmp_path / "main"
    git = checkout(main)
    (git / "HEAD").write_text(OTHER + "\n")
    assert head_commit(main) == OTHER[:7]
    # a worktree: `.git` is a file naming its own directory, whose `commondir` holds the refs
    own = git / "worktrees" / "wt"
    own.mkdir(parents=True)
    (own / "HEAD").write_text("ref: refs/heads/main\n")
    (own / "commondir").write_text("../..\n")
    tree = tmp_path / "wt"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {own}\n")
    assert head_commit(tree) == SHA[:7]


@pytest.mark.parametrize("head", ["ref: refs/heads/gone\n", "garbage\n", "\x00\xff"])
def test_an_unreadable_checkout_gives_no_version_and_no_error(tmp_path: Path, head: str) -> None:
    git = checkout(tmp_path)
    (git / "HEAD").write_bytes(head.encode("latin-1"))
    assert head_commit(tmp_path) is None
    assert head_commit(tmp_path / "does-not-exist") is None
