"""Feedback from people in a real browser (Debian's headless Chromium via Playwright), at
desktop and phone widths: the signed-in owner annotates a run on its page with the plain form
(a thumbs button with a label and a comment, then a score), sees it listed there, and a visitor
sees no form. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import (
    BROWSER_TESTS,
    WIDTHS,
    Watched,
    browser,  # noqa: F401 - the fixture
)
from tests.http.runs_data import seed_research_run
from tests.http.test_ingest_http import new_login

pytestmark = BROWSER_TESTS


@pytest.mark.parametrize("width", WIDTHS)
def test_the_owner_annotates_a_run_on_its_page(browser: Any, bench_server: RunningServer,  # noqa: F811
                                              width: int) -> None:
    login = new_login()
    seeded = seed_research_run(bench_server, login=login, slug="annotated")
    run_page = f"{bench_server.url}/u/{seeded.path}/runs/{seeded.run_id}"
    watched = Watched(browser, width, "light")
    try:
        page = watched.sign_in(bench_server, login)
        page = watched.open(run_page)
        form = page.locator("form[data-feedback-form]")
        assert form.is_visible()
        watched.shot(f"feedback-form-{width}")
        form.locator("input[name=label]").fill("wrong-tool")
        form.locator("textarea[name=comment]").fill("It <b>parsed</b> the wrong file")
        form.locator("button[value=down]").click()
        page.wait_for_load_state("networkidle")
        assert page.url == run_page + "#feedback"
        listed = page.locator("[data-feedback] li[data-feedback-id]")
        assert listed.count() == 1
        assert "thumbs down" in listed.first.inner_text()
        assert "wrong-tool" in listed.first.locator("[data-feedback-label]").inner_text()
        assert listed.first.locator("[data-feedback-comment]").inner_text() == \
            "It <b>parsed</b> the wrong file"  # text, not markup

        form = page.locator("form[data-feedback-form]")
        form.locator("input[name=score]").fill("0.8")
        form.locator("[data-feedback-save]").click()
        page.wait_for_load_state("networkidle")
        assert page.locator("[data-feedback] li[data-feedback-id]").count() == 2
        summary = page.locator("[data-feedback-summary]").inner_text()
        assert "2 verdicts" in summary and "0.40" in summary
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        page.locator("#feedback").scroll_into_view_if_needed()
        watched.shot(f"feedback-annotated-{width}")
        assert watched.problems == []
    finally:
        watched.close()

    visitor = Watched(browser, width, "light")
    try:
        page = visitor.open(run_page)
        assert page.locator("form[data-feedback-form]").count() == 0
        assert page.locator("[data-feedback] li[data-feedback-id]").count() == 2
        assert visitor.problems == []
    finally:
        visitor.close()
