"""The run explorer in a real browser (Debian's headless Chromium via Playwright), at desktop
and phone widths: open a profile, click a run, see its tree and waterfall, select the failed
span three levels down and read its error; a run in progress updates itself; the dashboard
grows live runs as a tree. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import CHROMIUM, SCHEMES, WIDTHS, Watched, background_is_dark
from tests.factories import batch, ts
from tests.http.accounts_support import signin_link
from tests.http.runs_data import ERROR, SeededRun, seed_research_run, wide_and_deep_events
from tests.http.test_ingest_http import new_login, post

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")]


@pytest.fixture(scope="module")
def browser() -> Any:
    from playwright.sync_api import sync_playwright

    from tests.e2e.test_browser_surfaces import ARGS

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def seeded(bench_server: RunningServer) -> SeededRun:
    return seed_research_run(bench_server)


@pytest.mark.parametrize("width", WIDTHS)
def test_open_a_run_from_the_profile_and_read_the_error_three_levels_down(
        browser: Any, bench_server: RunningServer, seeded: SeededRun, width: int) -> None:
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{seeded.path}")
        page.locator("ul.tasks a[data-run-link]").first.click()
        page.wait_for_load_state("networkidle")
        assert page.url.endswith(f"/runs/{seeded.run_id}")
        rows = page.locator("li.span-row[data-span]")
        assert rows.count() == 7
        assert page.locator("svg.wf").count() == 7 and page.locator("svg.wf").first.is_visible()
        root = page.locator(f'[data-span="{seeded.run_id}"]')
        assert "failed below" in root.locator(".span-line").inner_text()
        watched.shot(f"run-tree-light-{width}")
        failed = page.locator(f'[data-span="{seeded.ids["parse"]}"] a.span-name')
        assert failed.is_visible()
        failed.click()
        page.wait_for_load_state("networkidle")
        detail = page.locator(".span-detail")
        assert detail.is_visible()
        assert ERROR in detail.inner_text()
        assert detail.locator("h3", has_text="Error").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"run-span-selected-light-{width}")
        assert watched.problems == []
    finally:
        watched.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_run_pages_render_cleanly(browser: Any, bench_server: RunningServer, seeded: SeededRun,
                                  scheme: str, width: int) -> None:
    watched = Watched(browser, width, scheme)
    try:
        for name, path in (("run", f"/u/{seeded.path}/runs/{seeded.run_id}"
                                   f"?span={seeded.ids['answer']}"),
                           ("runs", f"/u/{seeded.path}/runs")):
            page = watched.open(bench_server.url + path)
            watched.shot(f"{name}-{scheme}-{width}")
            assert background_is_dark(page) == (scheme == "dark")
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
            assert page.locator("h1").first.is_visible()
        assert watched.problems == []
    finally:
        watched.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_big_deep_run_draws_collapsed_and_opens_on_demand(
        browser: Any, bench_server: RunningServer, width: int) -> None:
    login, prefix = new_login(), uuid.uuid4().hex[:6]
    key = bench_server.create_key(login)
    events = wide_and_deep_events(prefix, children=5000, depth=50)
    for i in range(0, len(events), 500):
        assert post(bench_server, batch("big", events[i:i + 500]), key).status_code == 200
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{login}/big/runs/{prefix}-root")
        assert page.locator("li.span-row[data-span]").count() <= 300
        more = page.locator("a[data-more]")
        assert "more spans under big run" in more.inner_text()
        watched.shot(f"run-big-light-{width}")
        page.locator("a", has_text="deeper spans").first.click()
        page.wait_for_load_state("networkidle")
        assert page.locator(".focus-trail").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        watched.shot(f"run-deep-focus-light-{width}")
        assert watched.problems == []
    finally:
        watched.close()


def test_a_run_in_progress_updates_itself(browser: Any, bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    run = f"live-{uuid.uuid4().hex[:6]}"

    def send(events: list[dict[str, Any]]) -> None:
        assert post(bench_server, batch("live", events), key).status_code == 200

    def event(kind: str, task: str, parent: str | None = None, **fields: Any) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "kind": kind, "ts": ts(), "task_id": task,
                "parent_task_id": parent, "name": task.split("-")[-1], **fields}

    send([event("task.start", run)])
    watched = Watched(browser, 1280, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{login}/live/runs/{run}")
        page.wait_for_function("document.querySelector('[data-live-state]').dataset.state === 'live'")
        send([event("task.start", f"{run}-child", run)])
        page.wait_for_selector(f'[data-span="{run}-child"]', timeout=15_000)
        send([event("task.end", f"{run}-child", run, status="failed", output="nope",
                    duration_ms=5),
              event("task.end", run, status="success", output="ok", duration_ms=9)])
        page.wait_for_selector(f'[data-span="{run}-child"][data-status="failed"]', timeout=15_000)
        page.wait_for_selector(".run-head .pill.status-success", timeout=15_000)
        assert watched.problems == []
    finally:
        watched.close()


def test_the_dashboard_grows_live_runs_as_a_tree(browser: Any, bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    seed_research_run(bench_server, login=login, key=key, slug="watched")
    watched = Watched(browser, 1280, "light")
    try:
        page = watched.open(signin_link(bench_server))
        page.fill("#login", login)
        page.click("form[action='/signin/local'] button")
        page.wait_for_load_state("networkidle")
        page = watched.open(f"{bench_server.url}/dashboard/agents/watched")
        page.wait_for_function("document.querySelector('[data-live-state]').dataset.state === 'live'")
        tree = page.locator("[data-live-runs]")
        assert tree.is_visible()
        root = tree.locator("> li").first
        assert root.locator("> .live-line a").inner_text() == "research"
        assert root.locator("li.live-node").count() == 6
        fresh = seed_research_run(bench_server, login=login, key=key, slug="watched")
        page.wait_for_selector(f'[data-live-runs] > li[data-task="{fresh.run_id}"] '
                               f'li[data-task="{fresh.ids["parse"]}"].failed', timeout=15_000)
        link = page.locator(f'[data-live-runs] > li[data-task="{fresh.run_id}"] > .live-line a')
        assert link.get_attribute("href") == f"/u/{login}/watched/runs/{fresh.run_id}"
        watched.shot("dashboard-live-runs-light-1280")
        assert watched.problems == []
    finally:
        watched.close()
    assert httpx.get(f"{bench_server.url}/u/{login}/watched/runs/{fresh.ids['parse']}",
                     follow_redirects=False).status_code == 302
