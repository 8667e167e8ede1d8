"""The owner's dashboard over real HTTP: setting up an agent, its key, privacy settings, key
management, and `bench login`'s device flow driven by the real CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bench_core.settings import AccountSettings

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.accounts_support import CSRF, Browser, new_login


def ingest(server: RunningServer, key: str, slug: str, **kwargs: object) -> httpx.Response:
    return httpx.post(server.url + "/ingest", json=batch(slug, task_events("t1", **kwargs)),
                      headers={"X-Bench-Key": key}, timeout=30)


def test_signed_out_visitors_are_sent_to_sign_in_and_brought_back(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    for path in ("/dashboard", "/dashboard/new", "/dashboard/keys", "/dashboard/agents/x"):
        r = browser.get(path)
        assert r.status_code == 303, path
        assert r.headers["location"] == "/signin?next=" + path.replace("/", "%2F"), path
    login = new_login()
    done = browser.post("/signin/local", {**browser.signin_form(), "login": login,
                                          "next": "/dashboard/keys"}, token_from=None)
    assert done.headers["location"] == "/dashboard/keys"


def test_setting_up_an_agent_shows_the_install_command_a_key_and_a_first_task(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    page = browser.post("/dashboard/new", {"slug": "Setup-Agent", "display_name": "Setup"},
                        token_from="/dashboard/new")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "private, no-store"
    text = page.text
    assert f"pip install --index-url {bench_server.url}/simple/ bench-observe" in text
    key = re.search(r"data-key>(bka_[\w-]+)<", text).group(1)
    assert 'agent="setup-agent"' in text and "OTEL_EXPORTER_OTLP_HEADERS=X-Bench-Key=" + key in text
    assert f'data-first-event="{login}/setup-agent"' in text
    assert f'href="/u/{login}/setup-agent"' in text
    again = browser.get("/dashboard")
    assert "setup-agent" in again.text and key not in again.text, "the key is shown once"
    assert ingest(bench_server, key, "setup-agent").status_code == 200
    assert ingest(bench_server, key, "another-agent").status_code == 403, "bound to its agent"
    agent_page = browser.get("/dashboard/agents/setup-agent")
    assert agent_page.status_code == 200 and "task.end" in agent_page.text
    assert bench_server.get(f"/api/agents/{login}/setup-agent")["runs"] == 1


def test_an_agent_set_up_private_is_private_from_its_first_event(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    key = browser.new_agent("hidden-agent", visibility="private")
    assert ingest(bench_server, key, "hidden-agent").status_code == 200
    assert httpx.get(f"{bench_server.url}/api/agents/{login}/hidden-agent").status_code == 404
    listed = httpx.get(f"{bench_server.url}/api/leaderboard", params={"q": login}).json()
    assert listed["agents"] == []
    assert browser.get(f"/u/{login}/hidden-agent").status_code == 200, "its owner sees it"


def test_a_second_agent_of_the_same_name_is_refused(bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    browser.sign_in()
    browser.new_agent("twin")
    again = browser.post("/dashboard/new", {"slug": "twin"}, token_from="/dashboard/new")
    assert again.status_code == 400 and "already have an agent called twin" in again.text
    bad = browser.post("/dashboard/new", {"slug": "no spaces"}, token_from="/dashboard/new")
    assert bad.status_code == 400


def test_privacy_settings_change_what_others_see(bench_server: RunningServer) -> None:
    owner = Browser(bench_server)
    login = owner.sign_in()
    key = owner.new_agent("settings-agent")
    ingest(bench_server, key, "settings-agent", input={"secret": "question"})
    tasks = f"{bench_server.url}/api/agents/{login}/settings-agent/tasks"
    assert httpx.get(tasks).json()["tasks"][0]["input"] == {"secret": "question"}
    saved = owner.post("/dashboard/agents/settings-agent/settings",
                       {"visibility": "public", "hide_inputs": "on", "display_name": "Renamed"},
                       token_from="/dashboard/agents/settings-agent")
    assert saved.status_code == 303
    assert httpx.get(tasks).json()["tasks"][0]["input"] == "[hidden by owner]"
    assert "Renamed" in owner.get("/dashboard/agents/settings-agent").text
    owner.post("/dashboard/agents/settings-agent/settings", {"visibility": "private"},
               token_from="/dashboard/agents/settings-agent")
    assert httpx.get(tasks).status_code == 404
    stranger = Browser(bench_server)
    stranger.sign_in()
    changed = stranger.post("/dashboard/agents/settings-agent/settings", {"visibility": "public"},
                            token_from="/dashboard")
    assert changed.status_code == 404, "a stranger's settings page names their own agents only"
    assert httpx.get(tasks).status_code == 404


def test_keys_are_created_named_used_and_revoked(bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    created = browser.post("/dashboard/keys", {"name": "laptop", "scope": "owner"},
                           token_from="/dashboard/keys")
    owner_key = re.search(r"data-key>(bk_[\w-]+)<", created.text).group(1)
    assert "laptop" in created.text
    assert ingest(bench_server, owner_key, "any-agent").status_code == 200
    listing = browser.get("/dashboard/keys").text
    assert owner_key not in listing and owner_key[:11] in listing
    row = re.search(r'data-key-row="%s">(.*?)</tr>' % re.escape(owner_key[:11]), listing, re.S)
    assert row and "never" not in row.group(1), "last use is shown"
    record = next(k for k in bench_server.store.accounts.list_keys(login) if k.name == "laptop")
    other = Browser(bench_server)
    other.sign_in()
    assert other.post("/dashboard/keys/revoke", {"key": record.key_hash},
                      token_from="/dashboard/keys").status_code == 404
    assert ingest(bench_server, owner_key, "any-agent").status_code == 200
    revoked = browser.post("/dashboard/keys/revoke", {"key": record.key_hash},
                           token_from="/dashboard/keys")
    assert revoked.status_code == 303
    assert ingest(bench_server, owner_key, "any-agent").status_code == 401
    assert "revoked" in browser.get("/dashboard/keys").text
    agent_key_page = browser.post("/dashboard/keys", {"name": "ci", "scope": "any-agent"},
                                  token_from="/dashboard/keys")
    agent_key = re.search(r"data-key>(bka_[\w-]+)<", agent_key_page.text).group(1)
    assert ingest(bench_server, agent_key, "any-agent").status_code == 200
    assert ingest(bench_server, agent_key, "other").status_code == 403


def test_the_dashboard_lists_the_owners_agents_and_no_one_elses(
        bench_server: RunningServer) -> None:
    alice, bob = Browser(bench_server), Browser(bench_server)
    alice_login = alice.sign_in()
    bob.sign_in()
    key = alice.new_agent("alices-agent")
    ingest(bench_server, key, "alices-agent")
    page = alice.get("/dashboard").text
    assert f'data-agent="{alice_login}/alices-agent"' in page
    assert 'data-stat="runs">1<' in page
    assert "alices-agent" not in bob.get("/dashboard").text
    assert bob.get("/dashboard/agents/alices-agent").status_code == 404


# ---- bench login ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def device_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server telling the CLI to poll every second (the default is five)."""
    with serving(tmp_path_factory.mktemp("device"), store="memory",
                 accounts=AccountSettings(device_interval_s=1)) as running:
        yield running


def run_login(server: RunningServer, tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    bench = Path(sys.executable).parent / "bench"  # the console script pip installed
    return subprocess.Popen([str(bench), "login", "--endpoint", server.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)


def prompt(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The URL and code `bench login` asks the user to approve."""
    line = process.stdout.readline()  # type: ignore[union-attr]
    found = re.match(r"Open (\S+) and approve the code (\S+)\.", line)
    assert found, line
    return found.group(1), found.group(2)


def test_bench_login_gets_a_key_once_the_code_is_approved(device_server: RunningServer,
                                                          tmp_path: Path) -> None:
    process = run_login(device_server, tmp_path)
    url, code = prompt(process)
    assert url == f"{device_server.url}/device?code={code}"
    browser = Browser(device_server)
    signed_out = browser.get(url.removeprefix(device_server.url))
    assert signed_out.status_code == 303 and "next=%2Fdevice%3Fcode%3D" in signed_out.headers["location"]
    login = browser.sign_in()
    page = browser.get(url.removeprefix(device_server.url))
    assert code in page.text and "Approve" in page.text
    approved = browser.post("/device", {"user_code": code, "decision": "approve",
                                        "csrf": CSRF.search(page.text).group(1)}, token_from=None)
    assert approved.status_code == 200 and "Approved" in approved.text
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"Signed in as {login}" in out
    stored = (tmp_path / "config" / "bench" / "credentials.json").read_text()
    key = re.search(r'"key": "(bk_[\w-]+)"', stored).group(1)
    assert ingest(device_server, key, "cli-agent").status_code == 200
    assert any(k.name and k.name.startswith("bench login") for k in
               device_server.store.accounts.list_keys(login))


def test_bench_login_stops_when_the_code_is_denied(device_server: RunningServer,
                                                   tmp_path: Path) -> None:
    process = run_login(device_server, tmp_path)
    _, code = prompt(process)
    browser = Browser(device_server)
    browser.sign_in()
    denied = browser.post("/device", {"user_code": code, "decision": "deny"},
                          token_from=f"/device?code={code}")
    assert denied.status_code == 200 and "Denied" in denied.text
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0 and "access_denied" in err
    again = browser.post("/device", {"user_code": code, "decision": "approve"},
                         token_from="/dashboard")
    assert again.status_code == 400, "a decided code cannot be decided again"


def test_device_tokens_answer_in_the_rfc_8628_vocabulary(device_server: RunningServer) -> None:
    api = f"{device_server.url}/api/cli/device"
    start = httpx.post(f"{api}/code", json={"client": "test"}).json()
    assert set(start) == {"device_code", "user_code", "verification_uri",
                          "verification_uri_complete", "interval", "expires_in"}
    assert re.fullmatch(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}", start["user_code"])
    poll = httpx.post(f"{api}/token", json={"device_code": start["device_code"]})
    assert (poll.status_code, poll.json()) == (400, {"error": "authorization_pending"})
    fast = httpx.post(f"{api}/token", json={"device_code": start["device_code"]})
    assert fast.json() == {"error": "slow_down"}
    unknown = httpx.post(f"{api}/token", json={"device_code": "never-issued"})
    assert (unknown.status_code, unknown.json()) == (400, {"error": "expired_token"})
    assert httpx.post(f"{api}/token", json={}).status_code == 422
