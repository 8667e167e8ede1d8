"""The ``bench`` command line: init, doctor, test, login."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from bench.cli import main


@pytest.mark.parametrize(
    ("filename", "content", "framework"),
    [
        ("pyproject.toml", '[project]\nname = "Deep Research"\ndependencies = ["anthropic>=0.30"]\n', "anthropic"),
        ("requirements.txt", "openai==1.40\nrequests\n", "openai"),
        ("requirements.txt", "langchain-openai\nopenai\n", "langchain"),
        ("requirements.txt", "requests\n", "custom"),
    ],
)
def test_init_detects_the_stack_and_writes_manifest_without_a_key(
    project: Path, capsys, monkeypatch, filename: str, content: str, framework: str
) -> None:
    monkeypatch.setenv("BENCH_KEY", "bk_must_not_be_written")
    (project / filename).write_text(content)
    assert main(["init", "--agent", "Research Bot!"]) == 0
    manifest = json.loads((project / "bench.agent.json").read_text())
    assert manifest["schema_version"] == "1"
    assert manifest["slug"] == "research-bot"
    assert manifest["framework"] == framework
    assert manifest["language"] == "python"
    assert manifest["invocation"] == {"mode": "disabled"}
    assert manifest["capability"]["skills"]
    assert manifest["observability"]["environment_variable"] == "BENCH_KEY"
    assert (project / ".env.example").read_text() == "BENCH_KEY=\n"
    for path in project.iterdir():
        assert "bk_must_not_be_written" not in path.read_text()
    out = capsys.readouterr().out
    assert "pip install --index-url http://127.0.0.1:8000/simple/ bench-observe" in out
    assert 'bench.observe(agent="research-bot")' in out


def test_init_keeps_existing_files_unless_forced(project: Path) -> None:
    (project / ".env.example").write_text("OTHER=1")
    assert main(["init", "--agent", "first"]) == 0
    assert main(["init", "--agent", "second"]) == 0
    assert json.loads((project / "bench.agent.json").read_text())["slug"] == "first"
    assert main(["init", "--agent", "second", "--name", "Second One", "--force"]) == 0
    manifest = json.loads((project / "bench.agent.json").read_text())
    assert (manifest["slug"], manifest["display_name"]) == ("second", "Second One")
    assert (project / ".env.example").read_text() == "OTHER=1\nBENCH_KEY=\n"


def test_init_refuses_to_clobber_a_broken_manifest(project: Path, capsys) -> None:
    (project / "bench.agent.json").write_text("{not json")
    assert main(["init"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bench: ") and err.count("\n") == 1


def test_doctor_reports_everything_missing(project: Path, capsys) -> None:
    assert main(["doctor", "--endpoint", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "No agent slug" in err and "No key" in err and "Cannot reach" in err


def test_doctor_passes_when_ready(project: Path, capsys, monkeypatch, sink) -> None:
    monkeypatch.setenv("BENCH_KEY", "bk_x")
    assert main(["init", "--agent", "ready"]) == 0
    assert main(["doctor", "--endpoint", sink.url]) == 0
    assert "Ready: agent ready" in capsys.readouterr().out


def test_test_sends_one_task_and_prints_the_profile_url(project: Path, capsys, monkeypatch, sink) -> None:
    monkeypatch.setenv("BENCH_KEY", "bk_verify")
    main(["init", "--agent", "verified"])
    capsys.readouterr()
    assert main(["test", "--endpoint", sink.url]) == 0
    out = capsys.readouterr().out
    assert f"{sink.url}/u/tester/verified" in out
    (request,) = sink.requests
    assert request.headers["X-Bench-Key"] == "bk_verify"
    assert [e["kind"] for e in request.body["events"]] == ["task.start", "task.end"]


@pytest.mark.parametrize(("mode", "message"), [("400", "invalid batch"), ("500", "500")])
def test_test_reports_server_errors_in_one_line(project: Path, capsys, monkeypatch, sink, mode, message) -> None:
    monkeypatch.setenv("BENCH_KEY", "bk_verify")
    sink.mode = mode
    assert main(["test", "--agent", "a", "--endpoint", sink.url]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_test_without_key_or_server_fails_clearly(project: Path, capsys, monkeypatch) -> None:
    assert main(["test", "--agent", "a"]) == 1
    assert "no key" in capsys.readouterr().err
    monkeypatch.setenv("BENCH_KEY", "bk")
    assert main(["test", "--agent", "a", "--endpoint", "http://127.0.0.1:9"]) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_login_stores_the_key_outside_the_repo_for_the_sdk(project: Path, tmp_path: Path, capsys, sink) -> None:
    assert main(["login", "--endpoint", sink.url]) == 0
    out = capsys.readouterr().out
    assert "ABCD-EFGH" in out and "Signed in as tester" in out
    stored = tmp_path / "config" / "bench" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text())["servers"][sink.url]["key"] == "bk_from_device_login"
    assert list(project.iterdir()) == []
    assert main(["test", "--agent", "after-login", "--endpoint", sink.url]) == 0
    assert sink.requests[-1].headers["X-Bench-Key"] == "bk_from_device_login"


def test_login_against_a_server_without_device_login(project: Path, capsys) -> None:
    assert main(["login", "--endpoint", "http://127.0.0.1:9"]) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_console_script_entry_point_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.cli", "--version"], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ}, timeout=60,
    )
    assert result.returncode == 0 and result.stdout.startswith("bench-observe ")
