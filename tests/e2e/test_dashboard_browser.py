"""The owner's first minutes in a real browser (Debian's headless Chromium, driven by Playwright):
local sign-in with the console's link, a new agent, its key copied with the copy button, the page's own first-task
template run by the SDK in a subprocess, the events arriving live, the profile link; the live
feed surviving a server restart; and /try's sandbox and demo run. No console errors allowed
(a Content-Security-Policy violation is one). Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from bench_core.local import create_local_app
from bench_core.settings import AccountSettings, Settings
from bench_core.trial import sandbox
from playwright.sync_api import expect

from tests.conftest import free_port
from tests.e2e.test_browser_surfaces import BROWSER_TESTS, SHOTS, browser  # noqa: F401
from tests.http.accounts_support import new_login, signin_link

WAIT_MS = 20_000
"""How long a step may take before the test gives up (a hang guard, not a measurement)."""

pytestmark = BROWSER_TESTS


@dataclass
class Server:
    """A local server that can be stopped and started again on the same port and data."""

    data_dir: Path
    port: int
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    store: Any = None
    """The running app's store (where the console's sign-in links are kept)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        app = create_local_app(Settings(data_dir=self.data_dir,
                                        accounts=AccountSettings(sandbox_per_hour=100)))
        self.store = app.state.services.store
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="error", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=20)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("browser-dashboard"), free_port())
    running.start()
    yield running
    running.stop()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:  # noqa: F811
    """A fresh browser profile whose console errors fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    context.close()
    assert [e for e in errors if "ERR_CONNECTION_REFUSED" not in e] == []


SECOND_TASK = """
import os

import bench

agent = bench.observe(api_key=os.environ["BENCH_KEY"], agent="first-agent",
                      endpoint=os.environ["BENCH_ENDPOINT"])
with agent.span("second-task", {"n": 2}) as t:
    t.set_output("done")
agent.shutdown_sync()
"""


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def state(page: Any) -> Any:
    """The live feed's connection state, as the page shows it."""
    return page.locator("[data-live-state]").first


def run_first_task(template: str, key: str, server: Server, tmp_path: Path) -> None:
    """The setup page's Python template, as the owner would run it."""
    script = tmp_path / "first_task.py"
    script.write_text(template)
    env = {**os.environ, "BENCH_KEY": key, "BENCH_ENDPOINT": server.url}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_sign_in_set_up_an_agent_and_watch_its_first_events_arrive(
        page: Any, server: Server, tmp_path: Path) -> None:
    login = new_login()
    page.goto(server.url + "/")
    page.click("text=Sign in")
    expect(page.locator("text=open the sign-in link")).to_be_visible()
    assert page.locator("#login").count() == 0, "a visitor without the link is offered a form"
    page.goto(signin_link(server))  # as the console of `bench-server serve` shows it
    page.fill("#login", login)
    page.click("form[action='/signin/local'] button")
    page.wait_for_url(server.url + "/dashboard")
    page.click("text=Set up your first agent")
    page.fill("#slug", "first-agent")
    page.fill("#display_name", "First Agent")
    page.click("form[action='/dashboard/new'] button")
    page.wait_for_selector("text=is ready for its first event")
    expect(state(page)).to_have_attribute("data-state", "live")
    page.click("[data-copy='key']")
    page.wait_for_selector("[data-copy='key']:has-text('Copied')")
    key = page.evaluate("navigator.clipboard.readText()")
    assert key.startswith("bka_") and key == page.inner_text("#key").strip()
    shot(page, "dashboard-setup-waiting")
    assert page.is_hidden("[data-first-arrived]")

    run_first_task(page.inner_text("#template"), key, server, tmp_path)
    page.wait_for_selector("[data-first-arrived]:not([hidden])")
    page.wait_for_selector("[data-live-runs] > li.live-node.success:has-text('first-task')")
    assert page.locator("[data-live-runs] > li.live-node").count() == 1  # one run, as a tree
    shot(page, "dashboard-setup-first-event")

    page.click("[data-profile-link]")
    page.wait_for_url(f"{server.url}/u/{login}/first-agent")
    assert page.inner_text("h1").startswith("First Agent")
    assert page.get_attribute("[data-metric='runs']", "data-value") == "1"
    shot(page, "profile-after-first-task")

    page.goto(server.url + "/dashboard")
    row = page.locator(f"[data-agent='{login}/first-agent'] [data-stat='runs']")
    assert row.inner_text() == "1"
    expect(state(page)).to_have_attribute("data-state", "live")
    run_first_task(SECOND_TASK, key, server, tmp_path)
    expect(row).to_have_text("2")
    shot(page, "dashboard-live-numbers")


def test_the_live_feed_reconnects_after_the_server_comes_back(page: Any, server: Server) -> None:
    page.goto(signin_link(server))
    page.fill("#login", new_login())
    page.click("form[action='/signin/local'] button")
    page.wait_for_url(server.url + "/dashboard")
    expect(state(page)).to_have_attribute("data-state", "live")
    server.stop()
    try:
        expect(state(page)).to_have_attribute("data-state", "waiting")
        expect(state(page)).to_contain_text("retrying")
        shot(page, "dashboard-reconnecting")
    finally:
        server.start()
    expect(state(page)).to_have_attribute("data-state", "live", timeout=60_000)
    expect(state(page)).to_have_text("Live")


def test_try_starts_a_sandbox_and_its_demo_arrives_live(page: Any, server: Server) -> None:
    page.goto(server.url + "/try")
    page.get_by_role("button", name="Start a sandbox").click()
    page.wait_for_selector("text=Your sandbox")
    assert page.inner_text("#try-snippet").count("bka_") == 1
    expect(state(page)).to_have_attribute("data-state", "live")
    page.click("form[data-demo] button")
    runs = page.locator("[data-live-runs] > li.live-node:is(.success, .failed)"
                        ":has(> .live-line a:text-is('answer_question'))")
    expect(runs).to_have_count(sandbox.DEMO_STEPS, timeout=WAIT_MS)
    page.wait_for_selector("form[data-demo] button:has-text('Run it again')")
    assert page.locator("[data-live-runs] > li.live-node.failed").count() == 1
    shot(page, "try-demo-live")
    page.click("[data-profile-link]")
    page.wait_for_selector("h1:has-text('Sandbox demo agent')")
    assert page.get_attribute("[data-metric='runs']", "data-value") == str(sandbox.DEMO_STEPS)
    shot(page, "try-profile")
