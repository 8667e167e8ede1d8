"""The runs list in a real browser (headless Chromium via Playwright) at desktop and phone
widths: filter by a model from the folded "More filters", search span names, sort by clicking a
column header (down, then up) and from the sort menu; every step is an address, and nothing
scrolls sideways. Screenshots go to artifacts/screenshots/run-list-*."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import WIDTHS, Watched
from tests.e2e.test_browser_surfaces import browser as browser  # the fixture, shared
from tests.e2e.test_browser_surfaces import pytestmark as pytestmark  # Chromium or a skip
from tests.http.test_run_list_http import Seeded


@pytest.fixture(scope="module")
def seeded(bench_server: RunningServer) -> Seeded:
    return Seeded(bench_server)


def names(page: Any) -> list[str]:
    return [n.strip() for n in page.locator("a.run-link .name").all_inner_texts()]


def fits(page: Any, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"


@pytest.mark.parametrize("width", WIDTHS)
def test_filter_search_and_sort_the_runs_list_by_clicking(
        browser: Any, bench_server: RunningServer, seeded: Seeded, width: int) -> None:
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{seeded.path}/runs")
        assert names(page) == ["search", "fetch", "plan"]
        fits(page, width)
        watched.shot(f"run-list-{width}")

        page.locator("details.more-filters summary").click()
        page.locator('input[name="model"]').fill("gpt-4o-mini")
        page.locator("form.filters button[type=submit]").click()
        page.wait_for_load_state("networkidle")
        assert "model=gpt-4o-mini" in page.url
        assert names(page) == ["plan"]
        assert page.locator('input[name="model"]').input_value() == "gpt-4o-mini"
        fits(page, width)
        watched.shot(f"run-list-filtered-{width}")

        page.locator("form.filters a", has_text="Clear").click()
        page.wait_for_load_state("networkidle")
        page.locator('input[name="q"]').fill("portugal")
        page.locator('input[name="q"]').press("Enter")
        page.wait_for_load_state("networkidle")
        assert names(page) == ["search"]

        page.goto(f"{bench_server.url}/u/{seeded.path}/runs")
        page.locator('.runs-head a[data-sort="duration"]').click()
        page.wait_for_load_state("networkidle")
        assert "sort=duration" in page.url and "order=desc" in page.url
        assert names(page) == ["search", "fetch", "plan"]
        page.locator('.runs-head a[data-sort="duration"]').click()
        page.wait_for_load_state("networkidle")
        assert "order=asc" in page.url
        assert names(page) == ["plan", "fetch", "search"]
        assert page.locator('.runs-head a[aria-current]').inner_text().strip() == "Duration ↑"
        fits(page, width)
        watched.shot(f"run-list-sorted-{width}")

        page.locator('select[name="sort"]').select_option("tokens")
        page.locator('select[name="order"]').select_option("desc")
        page.locator("form.filters button[type=submit]").click()
        page.wait_for_load_state("networkidle")
        assert "sort=tokens" in page.url
        assert names(page) == ["fetch", "plan", "search"]
        assert watched.problems == []
    finally:
        watched.close()
