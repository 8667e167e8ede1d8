"""The run diff in a real browser (Debian's headless Chromium via Playwright), at desktop and
phone widths: reached from a run's page ("Compare with previous"), the two runs' headers and
deltas, the spans marked, the first divergence followed by its link, a span opened in its
run; nothing scrolls sideways. Screenshots go to artifacts/screenshots/run-diff-*.png."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import CHROMIUM, WIDTHS, Watched
from tests.e2e.test_runs_browser import browser  # noqa: F401  (the module's Chromium)
from tests.http.run_diff_data import TwoRuns, seed_two_runs
from tests.http.surfaces_data import show_content

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")]


@pytest.fixture(scope="module")
def two_runs(bench_server: RunningServer) -> TwoRuns:
    runs = seed_two_runs(bench_server, slug="diff-browser")
    show_content(bench_server, runs.login, runs.slug)
    return runs


@pytest.mark.parametrize("width", WIDTHS)
def test_the_diff_is_reached_from_a_run_and_leads_to_the_first_divergence_and_back(
        browser: Any, bench_server: RunningServer, two_runs: TwoRuns,  # noqa: F811
        width: int) -> None:
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{two_runs.path}/runs/{two_runs.b}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"run-diff-from-run-page-light-{width}")
        page.locator("a[data-compare-previous]").click()
        page.wait_for_load_state("networkidle")
        assert page.url.endswith(f"/runs/{two_runs.a}/vs/{two_runs.b}")
        assert page.locator("li.diff-row").count() == 9
        assert page.locator('li.diff-row[data-kind="added"]').inner_text().count("fetch page 3")
        assert page.locator("[data-delta=duration_ms]").inner_text() == "+1 s"
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"run-diff-light-{width}")
        page.locator("a[data-first-divergence]").click()
        assert page.url.endswith("#d-5")
        target = page.locator("#d-5")
        assert target.get_attribute("data-name") == "parse" and target.is_visible()
        box = target.bounding_box()
        assert box is not None and 0 <= box["y"] < 900, "the first divergence is scrolled to"
        assert "status" in target.inner_text()
        watched.shot(f"run-diff-first-divergence-light-{width}")
        target.locator(".diff-facts").nth(1).click()  # B's parse, in its run
        page.wait_for_load_state("networkidle")
        assert page.url.endswith(f"/runs/{two_runs.b}?span=run-b-parse#span-run-b-parse")
        assert page.locator(".span-detail").is_visible()
        assert watched.problems == []
    finally:
        watched.close()
