"""The run explorer in a real browser (Debian's headless Chromium via Playwright), at desktop
and phone widths: open a profile, click a run, see its tree and waterfall, select the failed
span three levels down and read its error; a run in progress updates itself; the dashboard
grows live runs as a tree. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import BROWSER_TESTS, CHROMIUM, SCHEMES, WIDTHS, Watched, background_is_dark
from tests.factories import batch, ts
from tests.http.runs_data import (
    ERROR,
    SeededRun,
    seed_research_run,
    tree_run_events,
    wide_and_deep_events,
)
from tests.http.test_ingest_http import new_login, post

pytestmark = BROWSER_TESTS


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
        started = page.locator("[data-run-head] .chips .chip").first.bounding_box()
        assert started is not None and started["height"] < 40, "the header's chips are squeezed"
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
def test_a_big_deep_run_draws_collapsed_and_opens_in_place(
        browser: Any, bench_server: RunningServer, width: int) -> None:
    login, prefix = new_login(), uuid.uuid4().hex[:6]
    key = bench_server.create_key(login)
    events = wide_and_deep_events(prefix, children=5000, depth=50)
    for i in range(0, len(events), 500):
        assert post(bench_server, batch("big", events[i:i + 500]), key).status_code == 200
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{login}/big/runs/{prefix}-root"
                            f"?span={prefix}-root")  # from the top, not on its failure
        assert page.locator("li.span-row[data-span]").count() <= 300
        more = page.locator("a[data-more]")
        assert "more spans under big run" in more.inner_text()
        watched.shot(f"run-big-light-{width}")
        unloaded(page)
        assert page.locator(f'[data-span="{prefix}-deep12"]').count() == 0
        page.locator("a", has_text="deeper spans").first.click()  # opens in place
        page.wait_for_selector(f'[data-span="{prefix}-deep12"]')
        assert stayed(page) and page.locator("a", has_text="deeper spans").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        watched.shot(f"run-deep-open-light-{width}")
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
        page.keyboard.press("j")  # the keys move over the rows drawn again
        page.keyboard.press("j")
        assert page.evaluate("document.activeElement.closest('li').dataset.span") == \
            f"{run}-child"
        assert watched.problems == []
    finally:
        watched.close()


def test_the_dashboard_grows_live_runs_as_a_tree(browser: Any, bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    seed_research_run(bench_server, login=login, key=key, slug="watched")
    watched = Watched(browser, 1280, "light")
    try:
        page = watched.sign_in(bench_server, login)
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


@contextmanager
def watching(browser: Any, width: int) -> Iterator[Watched]:
    """A light page at `width`, closed after: nothing may have gone wrong in it."""
    watched = Watched(browser, width, "light")
    try:
        yield watched
        assert watched.problems == []
    finally:
        watched.close()


def send_run(server: RunningServer, events: list[dict[str, Any]], slug: str) -> tuple[str, str]:
    """A new login's run under `slug`, sent in batches of 500; (login, key)."""
    login = new_login()
    key = server.create_key(login)
    for i in range(0, len(events), 500):
        assert post(server, batch(slug, events[i:i + 500]), key).status_code == 200
    return login, key


def unloaded(page: Any) -> None:
    """Mark the document, so that a test can tell the page was not loaded again."""
    page.evaluate("window.benchStayed = true")


def stayed(page: Any) -> bool:
    return bool(page.evaluate("window.benchStayed === true"))


def shown_spans(page: Any) -> list[str]:
    """The ids of the span rows one sees, in order."""
    visible = page.locator("li.span-row[data-span]:visible")
    return [visible.nth(i).get_attribute("data-span") for i in range(visible.count())]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_failed_span_of_a_5000_span_run_is_reached_by_clicking_only(
        browser: Any, bench_server: RunningServer, width: int) -> None:
    """From the top of a 5,051-span run, the header's "first at …" link opens the failure 50
    levels down, its details shown; and a collapsed row opens in place, leading on again."""
    prefix = uuid.uuid4().hex[:6]
    login, _ = send_run(bench_server, wide_and_deep_events(prefix, children=5000, depth=50), "big")
    with watching(browser, width) as watched:
        page = watched.open(f"{bench_server.url}/u/{login}/big/runs/{prefix}-root"
                            f"?span={prefix}-root")
        failed = page.locator(f'[data-span="{prefix}-deep49"]')
        assert failed.count() == 0  # 50 levels down: not drawn from the top
        page.locator("[data-first-failed]").click()
        page.wait_for_load_state("networkidle")
        assert failed.is_visible() and "selected" in (failed.get_attribute("class") or "")
        assert ERROR in page.locator(".span-detail").inner_text() or \
            "Hidden by the owner" in page.locator(".span-detail").inner_text()
        watched.shot(f"run-big-failure-light-{width}")
        page.locator("[data-from-top]").click()
        page.wait_for_load_state("networkidle")
        unloaded(page)
        page.locator("a[data-more]", has_text="more spans under big run").click()
        page.wait_for_selector(f'li.span-row[data-span="{prefix}-c60"]')
        assert stayed(page), "the collapsed row opened in place"
        assert page.locator(f'[data-span="{prefix}-c60"]').is_visible()
        page.locator("a[data-rest]").first.click()
        page.wait_for_selector(f'li.span-row[data-span="{prefix}-c349"]')
        assert stayed(page)
        page.locator("a[data-next-window]").click()
        page.wait_for_load_state("networkidle")
        assert "Spans 1,001–2,000 of 5,050" in page.locator("[data-window-trail]").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"


@pytest.fixture(scope="module")
def failing(bench_server: RunningServer) -> tuple[str, str]:
    """A 40-span run (as `tree_run_events` builds one) whose spans 10, 20 and 30 failed."""
    run = f"errs-{uuid.uuid4().hex[:6]}"
    login, _ = send_run(bench_server, tree_run_events(run, 40, failed_every=10), "errs")
    return login, run


@pytest.mark.parametrize("width", WIDTHS)
def test_the_keyboard_walks_the_tree_and_goes_to_the_next_error_in_place(
        browser: Any, bench_server: RunningServer, failing: tuple[str, str], width: int) -> None:
    login, run = failing
    with watching(browser, width) as watched:
        page = watched.open(f"{bench_server.url}/u/{login}/errs/runs/{run}")
        selected = page.locator("li.span-row.selected[data-span]")
        assert selected.get_attribute("data-span") == f"{run}-10"  # opened on the first failure
        unloaded(page)
        page.keyboard.press("e")
        page.wait_for_selector(f'li.selected[data-span="{run}-20"] .span-detail')
        assert page.locator(f'[data-span="{run}-20"] .span-detail').is_visible()
        assert stayed(page) and f"span={run}-20" in page.url
        page.keyboard.press("e")
        page.wait_for_selector(f'li.selected[data-span="{run}-30"] .span-detail')
        page.keyboard.press("k")
        focused = "document.activeElement.closest('li').dataset.span"
        assert page.evaluate(focused) == f"{run}-29"
        page.keyboard.press("j")
        page.keyboard.press("j")
        assert page.evaluate(focused) == f"{run}-31"
        page.keyboard.press("Enter")
        page.wait_for_selector(f'li.selected[data-span="{run}-31"] .span-detail')
        root = page.locator(f'[data-span="{run}"] a.span-name')
        root.focus()
        page.keyboard.press("ArrowLeft")  # folds the root: only it stays
        assert shown_spans(page) == [run]
        page.keyboard.press("ArrowRight")
        assert len(shown_spans(page)) == 40
        assert stayed(page)
        watched.shot(f"run-keyboard-light-{width}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_search_box_filters_spans_by_name_and_finds_them_by_content(
        browser: Any, bench_server: RunningServer, seeded: SeededRun, width: int) -> None:
    with watching(browser, width) as watched:
        page = watched.open(f"{bench_server.url}/u/{seeded.path}/runs/{seeded.run_id}")
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.matches('[data-span-search]')")
        page.keyboard.type("pars")
        assert shown_spans(page) == [seeded.run_id, seeded.ids["search"], seeded.ids["fetch-2"],
                                     seeded.ids["parse"]]
        assert "1 of 7 drawn spans match" in page.locator("[data-search-state]").inner_text()
        watched.shot(f"run-search-light-{width}")
        page.keyboard.press("Escape")
        assert len(shown_spans(page)) == 7
        page.keyboard.press("/")
        page.keyboard.type("secret-answer")  # in no name: Enter asks the server for content
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert shown_spans(page) == [seeded.run_id, seeded.ids["answer"]]
        assert "1 span here holds" in page.locator("[data-search-state]").inner_text()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_span_opens_its_details_without_a_page_load(
        browser: Any, bench_server: RunningServer, seeded: SeededRun, width: int) -> None:
    with watching(browser, width) as watched:
        page = watched.open(f"{bench_server.url}/u/{seeded.path}/runs/{seeded.run_id}")
        unloaded(page)
        page.locator(f'[data-span="{seeded.ids["answer"]}"] a.span-name').click()
        detail = page.locator(f'[data-span="{seeded.ids["answer"]}"] .span-detail')
        detail.wait_for()
        assert "secret-answer" in detail.inner_text()
        assert page.locator(".span-detail").count() == 1 and stayed(page)
        assert page.url.endswith(f"?span={seeded.ids['answer']}#span-{seeded.ids['answer']}")
        watched.shot(f"run-detail-in-place-light-{width}")


def test_signed_in_pages_and_try_fit_a_phone(browser: Any, bench_server: RunningServer) -> None:
    """At 390 px nothing scrolls sideways and the theme button is whole: the dashboard and its
    pages (a new agent's setup, with its key and snippet, among them) and /try's sandbox."""
    login = new_login()
    run = seed_research_run(bench_server, login=login, slug="phone")

    def fits(page: Any, name: str) -> None:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
        right = page.evaluate("document.querySelector('[data-theme-toggle]')"
                              ".getBoundingClientRect().right")
        assert right <= 390, name

    with watching(browser, 390) as watched:
        page = watched.sign_in(bench_server, login)
        for path in ("/dashboard", "/dashboard/keys", "/dashboard/new", "/dashboard/agents/phone",
                     f"/u/{login}/phone", f"/u/{login}/phone/runs",
                     f"/u/{login}/phone/runs/{run.run_id}", "/leaderboard", "/"):
            fits(watched.open(bench_server.url + path), path)
        page = watched.open(bench_server.url + "/dashboard/new")
        page.fill("#slug", "an-agent-with-a-long-slug-for-a-phone")
        page.click("form[action='/dashboard/new'] button[type=submit]")
        page.wait_for_load_state("networkidle")
        fits(page, "setup")
        watched.shot("dashboard-setup-light-390")
    with watching(browser, 390) as watched:  # a visitor, not signed in
        page = watched.open(bench_server.url + "/try")
        fits(page, "/try")
        page.click("form[action='/try'] button")
        page.wait_for_load_state("networkidle")
        fits(page, "/try, started")
        watched.shot("try-started-light-390")
