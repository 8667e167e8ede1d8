"""`/try` over real HTTP: a sandbox without signing up, its key, its demo run through the real
ingest path, its live feed, its privacy, and the per-client rate limit."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
import websockets
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.keys import new_key
from bench_core.domain.models import iso
from bench_core.settings import AccountSettings
from bench_core.trial import sandbox

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.accounts_support import SHOWN_KEY, Browser


def start(server: RunningServer) -> tuple[Browser, str, str]:
    """A visitor starting a sandbox: their browser, the sandbox login and the key shown."""
    browser = Browser(server)
    page = browser.post("/try", {}, token_from="/try")
    assert page.status_code == 200, page.text
    assert page.headers["cache-control"] == "private, no-store"
    login = re.search(r"@(try--[0-9a-f]+)/demo-agent", page.text).group(1)
    return browser, login, SHOWN_KEY.search(page.text).group(1)


def test_a_sandbox_starts_without_signing_up_and_shows_its_key_once(
        try_server: RunningServer) -> None:
    browser = Browser(try_server)
    page = browser.post("/try", {}, token_from="/try")
    login = re.search(r"@(try--[0-9a-f]+)/demo-agent", page.text).group(1)
    key = SHOWN_KEY.search(page.text).group(1)
    assert key.startswith("bka_")
    assert f'api_key="{key}", agent="demo-agent", endpoint="{try_server.url}"' in page.text
    again = browser.get("/try")
    assert again.status_code == 200 and login in again.text and key not in again.text
    record = next(k for k in try_server.store.accounts.list_keys(login))
    expires = record.expires_at
    assert expires is not None
    assert iso(SYSTEM_CLOCK.now() + timedelta(hours=23)) < expires <= iso(SYSTEM_CLOCK.now() + timedelta(hours=24))
    assert browser.session_cookie is not None


def test_the_snippet_key_writes_the_sandbox_agent_and_nothing_else(
        try_server: RunningServer) -> None:
    browser, login, key = start(try_server)
    for slug, status in (("demo-agent", 200), ("other-agent", 403)):
        sent = httpx.post(try_server.url + "/ingest", headers={"X-Bench-Key": key},
                          json=batch(slug, task_events("mine")))
        assert sent.status_code == status, slug
    assert browser.get(f"/u/{login}/demo-agent").status_code == 200


def test_a_sandbox_is_private_and_never_on_the_leaderboard(try_server: RunningServer) -> None:
    browser, login, _ = start(try_server)
    browser.post("/try/demo", {}, token_from="/try")
    assert httpx.get(f"{try_server.url}/u/{login}/demo-agent").status_code == 404
    assert httpx.get(f"{try_server.url}/api/agents/{login}/demo-agent").status_code == 404
    assert httpx.get(f"{try_server.url}/badge/{login}/demo-agent.svg").status_code == 404
    board = httpx.get(f"{try_server.url}/api/leaderboard", params={"q": "try--"}).json()
    assert board["agents"] == []
    other = Browser(try_server)
    other.sign_in()
    assert other.get(f"/u/{login}/demo-agent").status_code == 404


def test_the_demo_runs_through_ingest_and_reaches_the_live_feed(
        try_server: RunningServer) -> None:
    browser, login, _ = start(try_server)
    token = browser.csrf("/try")

    async def test() -> None:
        url = try_server.url.replace("http://", "ws://") + f"/live/{login}/demo-agent"
        headers = {"Origin": try_server.url, "Cookie": f"bench_session={browser.session_cookie}"}
        async with websockets.connect(url, additional_headers=headers) as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
            for step in range(sandbox.DEMO_STEPS):
                sent = await asyncio.to_thread(
                    browser.http.post, "/try/demo", data={"step": str(step)},
                    headers={"X-CSRF-Token": token})
                assert sent.json() == {"sent": 1}
            ends: list[dict[str, object]] = []
            while len(ends) < sandbox.DEMO_STEPS:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                ends += [e for e in message["events"]
                         if e["kind"] == "task.end" and e["name"] == "answer_question"]
            assert sum(e["status"] == "failed" for e in ends) == 1

    asyncio.run(test())
    profile = browser.get(f"/api/agents/{login}/demo-agent").json()
    assert (profile["runs"], profile["failures"]) == (sandbox.DEMO_STEPS, 1)
    assert profile["cost_usd_total"] > 0


def test_the_demo_form_without_javascript_sends_every_run(try_server: RunningServer) -> None:
    browser, login, _ = start(try_server)
    done = browser.post("/try/demo", {}, token_from="/try")
    assert done.status_code == 303 and done.headers["location"] == "/try"
    assert browser.get(f"/api/agents/{login}/demo-agent").json()["runs"] == sandbox.DEMO_STEPS


def test_a_sandbox_is_no_account(try_server: RunningServer) -> None:
    browser, _, _ = start(try_server)
    assert browser.get("/dashboard").status_code == 303
    nobody = Browser(try_server)
    assert nobody.post("/try/demo", {}, token_from="/try").status_code == 403
    account = Browser(try_server)
    account.sign_in()
    assert account.get("/try").headers["location"] == "/dashboard/new"


def test_an_expired_sandbox_key_is_refused(try_server: RunningServer) -> None:
    raw, record = new_key("try--0000expired", sandbox.SLUG, name="sandbox", now=SYSTEM_CLOCK.now())
    try_server.store.accounts.create_key(replace(record, expires_at=iso(SYSTEM_CLOCK.now() - timedelta(seconds=1))))
    r = httpx.post(try_server.url + "/ingest", headers={"X-Bench-Key": raw},
                   json=batch(sandbox.SLUG, task_events("late")))
    assert r.status_code == 401


@pytest.fixture(scope="module")
def try_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server of its own: every test here starts sandboxes from the same address, more than
    the default hourly limit allows."""
    with serving(tmp_path_factory.mktemp("try"), store="memory",
                 accounts=AccountSettings(sandbox_per_hour=1000)) as running:
        yield running


@pytest.fixture
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serving(tmp_path_factory.mktemp("try"), store="memory",
                 accounts=AccountSettings(sandbox_per_hour=2)) as running:
        yield running


def test_sandboxes_are_rate_limited_per_client(strict_server: RunningServer) -> None:
    start(strict_server)
    start(strict_server)
    third = Browser(strict_server).post("/try", {}, token_from="/try")
    assert third.status_code == 429 and third.headers["retry-after"] == "3600"
    assert "too many sandboxes" in third.text
