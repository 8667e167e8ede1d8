"""``bench publish`` and ``bench call`` against a real server calling a real agent endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bench.cli import main

from tests.conftest import RunningServer
from tests.http.accounts_support import new_login
from tests.http.reuse_support import AgentEndpoint, serve_bench, serve_endpoint


@pytest.fixture(scope="module")
def endpoint() -> Iterator[AgentEndpoint]:
    yield from serve_endpoint()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from serve_bench(tmp_path_factory.mktemp("reuse-cli"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: RunningServer) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("BENCH_ENDPOINT", server.url)
    for name in ("BENCH_KEY", "BENCH_AGENT", "BENCH_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def set_invocation(root: Path, invocation: dict[str, object], **capability: object) -> None:
    path = root / "bench.agent.json"
    manifest = json.loads(path.read_text())
    manifest["invocation"] = invocation
    manifest["capability"].update(capability)
    path.write_text(json.dumps(manifest))


def test_publish_then_call_with_clear_errors_along_the_way(
        project: Path, server: RunningServer, endpoint: AgentEndpoint,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    owner, caller = new_login(), new_login()
    owner_key, caller_key = server.create_key(owner), server.create_key(caller)
    monkeypatch.setenv("BENCH_KEY", owner_key)
    assert main(["publish"]) == 1
    assert "no bench.agent.json here" in capsys.readouterr().err
    assert main(["init", "--agent", "helper"]) == 0
    set_invocation(project, {"mode": "http", "url": endpoint.url + "/echo"})
    assert main(["publish"]) == 1
    assert f"{owner}/helper does not exist yet" in capsys.readouterr().err
    assert main(["test"]) == 0
    capsys.readouterr()
    assert main(["publish"]) == 0
    out = capsys.readouterr().out
    assert f"Published the capability card of {owner}/helper; it takes calls" in out
    secret = next(line.strip() for line in out.splitlines() if line.strip().startswith("bis_"))
    endpoint.secrets[f"{owner}/helper"] = secret
    assert main(["publish"]) == 0
    assert "bis_" not in capsys.readouterr().out, "the secret is shown once"

    monkeypatch.setenv("BENCH_KEY", caller_key)
    assert main(["call", f"@{owner}/helper", "--input", '{"q": "hi"}']) == 1
    assert capsys.readouterr().err.strip() == (
        f"bench: @{owner} has not granted @{caller} calls to helper; ask the owner for a grant "
        "(403)")
    httpx.post(f"{server.url}/api/agents/{owner}/helper/grants", headers={"X-Bench-Key": owner_key},
               json={"caller": caller, "calls_per_day": 1}).raise_for_status()
    assert main(["call", f"@{owner}/helper", "--input", '{"q": "hi"}', "--skill", "general"]) == 0
    assert json.loads(capsys.readouterr().out) == {"caller": caller, "echo": {"q": "hi"},
                                                   "skill": "general"}
    assert main(["call", f"@{owner}/helper", "--input", '{"q": "again"}']) == 1
    err = capsys.readouterr().err
    assert err.startswith("bench: quota used up: 1 calls per day") and "(429; retry after" in err
    assert main(["call", f"{owner}-helper", "--input", "{}"]) == 1
    assert "name the agent as @login/slug" in capsys.readouterr().err
    assert main(["call", f"@{owner}/helper", "--input", "{nope"]) == 1
    assert "--input is not valid JSON" in capsys.readouterr().err


def initialised_project(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new owner whose key is BENCH_KEY, with `bench init` and `bench test` done here."""
    owner = new_login()
    monkeypatch.setenv("BENCH_KEY", server.create_key(owner))
    assert main(["init", "--agent", "helper"]) == 0
    assert main(["test"]) == 0
    return owner


def test_publish_names_the_field_of_a_bad_card(project: Path, server: RunningServer,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    initialised_project(server, monkeypatch)
    set_invocation(project, {"mode": "http", "url": "https://10.1.2.3/agent"})
    capsys.readouterr()
    assert main(["publish"]) == 1
    assert capsys.readouterr().err.strip() == (
        "bench: invocation.url is refused: Bench calls endpoints on public addresses only (422): "
        "body.invocation.url: Bench calls endpoints on public addresses only")
    set_invocation(project, {"mode": "disabled"}, description="")
    assert main(["publish"]) == 1
    assert "body.capability.description: String should have at least 1 character" in \
        capsys.readouterr().err


def test_bench_agent_json_turns_content_on(project: Path, server: RunningServer,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    owner = initialised_project(server, monkeypatch)
    agent = f"{server.url}/api/agents/{owner}/helper"
    assert httpx.get(agent).json()["hide_outputs"] is True, "hidden until the owner shows it"
    path = project / "bench.agent.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "privacy": {"hide_inputs": False,
                                                         "hide_outputs": False}}))
    assert main(["publish"]) == 0
    shown = httpx.get(agent).json()
    assert (shown["hide_inputs"], shown["hide_outputs"]) == (False, False)
    path.write_text(json.dumps({**manifest, "privacy": {"show": True}}))
    capsys.readouterr()
    assert main(["publish"]) == 1
    assert "takes only visibility, hide_inputs, hide_outputs" in capsys.readouterr().err
