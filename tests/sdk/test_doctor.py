"""`bench doctor` against a real Bench server: it asks the server whether the key is accepted
(storing nothing), and after `bench login` it finds the key and the server without
BENCH_ENDPOINT, as `bench test` and the SDK do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import bench
import httpx
import pytest
from bench.cli import main as cli_main
from bench_core.accounts import device
from bench_core.clock import SYSTEM_CLOCK
from bench_core.settings import AccountSettings
from conftest import HANG_GUARD

from tests.conftest import RunningServer, serving


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A real server whose device login asks the CLI to poll every second (default: five)."""
    with serving(tmp_path_factory.mktemp("doctor"), store="memory",
                 accounts=AccountSettings(device_interval_s=1)) as running:
        yield running


def agent_exists(server: RunningServer, login: str, slug: str) -> bool:
    return httpx.get(f"{server.url}/api/agents/{login}/{slug}", timeout=10).status_code == 200


def test_doctor_says_an_invalid_key_is_invalid(server: RunningServer, project: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("BENCH_KEY", "bk_not_a_real_key")
    assert cli_main(["init", "--agent", "doctored"]) == 0
    capsys.readouterr()
    assert cli_main(["doctor", "--endpoint", server.url]) == 1
    captured = capsys.readouterr()
    assert "Ready" not in captured.out
    assert f"The server at {server.url} rejected the key (401" in captured.err
    assert cli_main(["test", "--endpoint", server.url]) == 1, "bench test agrees"
    assert "401" in capsys.readouterr().err


def test_doctor_accepts_a_valid_key_and_stores_nothing(server: RunningServer, project: Path, monkeypatch,
                                                       capsys) -> None:
    monkeypatch.setenv("BENCH_KEY", server.create_key("doctor-ok"))
    assert cli_main(["init", "--agent", "checked"]) == 0
    capsys.readouterr()
    assert cli_main(["doctor", "--endpoint", server.url]) == 0
    assert f"Ready: agent checked -> {server.url} (key accepted)" in capsys.readouterr().out
    assert not agent_exists(server, "doctor-ok", "checked"), "the check stored nothing"


def test_doctor_says_a_revoked_key_is_invalid(server: RunningServer, project: Path, monkeypatch, capsys) -> None:
    from bench_core.domain.models import iso

    key = server.create_key("doctor-revoked")
    (record,) = server.store.accounts.list_keys("doctor-revoked")
    server.store.accounts.revoke_key(record.key_hash, iso(SYSTEM_CLOCK.now()))
    monkeypatch.setenv("BENCH_KEY", key)
    monkeypatch.setenv("BENCH_AGENT", "revoked")
    assert cli_main(["doctor", "--endpoint", server.url]) == 1
    assert "rejected the key (401" in capsys.readouterr().err


def test_after_bench_login_doctor_test_and_the_sdk_use_the_stored_key_and_server(
        server: RunningServer, project: Path, tmp_path: Path, capsys) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    login = subprocess.Popen([sys.executable, "-m", "bench.cli", "login", "--endpoint", server.url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=project)
    assert login.stdout is not None
    found = re.match(r"Open \S+ and approve the code (\S+)\.", login.stdout.readline())
    assert found
    user_code = device.normalize_user_code(found.group(1))
    assert user_code and device.decide(server.store, user_code, "logged-in", True)  # as the /device page does
    out, err = login.communicate(timeout=HANG_GUARD)
    assert login.returncode == 0, err

    assert cli_main(["init", "--agent", "after-login"]) == 0
    capsys.readouterr()
    assert cli_main(["doctor"]) == 0, capsys.readouterr().err
    assert f"Ready: agent after-login -> {server.url} (key accepted)" in capsys.readouterr().out
    assert cli_main(["test"]) == 0
    assert agent_exists(server, "logged-in", "after-login")
    agent = bench.observe(agent="sdk-after-login")
    agent.event("hello", None)
    assert agent.flush_sync(HANG_GUARD) and agent.shutdown_sync()
    assert agent_exists(server, "logged-in", "sdk-after-login")
