"""The annotation queue in a real browser (Debian's headless Chromium via Playwright), at
desktop and phone widths, over SQLite: the signed-in owner works through the queue with the
keyboard alone (j/k to move, 0-9 a label from the agent's set, y/n for thumbs up/down, s to
skip), each verdict lands as feedback
on its run (read back from the store) and the selection moves on; the profile then shows the
judge's (low) agreement with people beside its score. Screenshots go to
artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bench_core.domain.agreement import AgreementTable
from bench_core.domain.models import AgentRef
from bench_core.settings import JudgeSettings

from tests.conftest import RunningServer, serving
from tests.e2e.test_browser_surfaces import (
    BROWSER_TESTS,
    WIDTHS,
    Watched,
    browser,  # noqa: F401 - the fixture
)
from tests.http.test_annotation_queue_http import seeded

pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """On SQLite, with a judge that samples nothing: the runs' scores are the test's."""
    with serving(tmp_path_factory.mktemp("queue-e2e"), judge=JudgeSettings(sample_rate=0.0)
                 ) as running:
        yield running


def current(page: Any) -> str:
    return page.locator("[data-queue-item][aria-current=true]").get_attribute("data-run")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_owner_gives_verdicts_with_one_keystroke_each(browser: Any,  # noqa: F811
                                                         server: RunningServer,
                                                         width: int) -> None:
    login, _ = seeded(server)
    server.store.feedback.set_label_set(AgentRef(login, "queued"), ["correct", "wrong-tool"])
    watched = Watched(browser, width, "light")
    try:
        page = watched.sign_in(server, login)
        page = watched.open(f"{server.url}/dashboard/agents/queued/queue")
        assert current(page) == "closest"
        watched.shot(f"annotation-queue-{width}")
        page.keyboard.press("j")
        assert current(page) == "close-above"
        page.keyboard.press("k")
        assert current(page) == "closest"

        page.keyboard.press("2")  # the label the next verdicts carry: the set's second
        assert page.locator("[data-queue-label]").input_value() == "wrong-tool"
        page.keyboard.press("y")  # thumbs up on "closest", on to the next
        page.wait_for_selector("[data-run=closest][data-queue-saved=up]")
        assert current(page) == "close-above"
        page.keyboard.press("s")
        assert current(page) == "clear-fail"
        page.keyboard.press("0")  # no label
        page.keyboard.press("n")
        page.wait_for_selector("[data-run=clear-fail][data-queue-saved=down]")
        assert current(page) == "disputed"  # the judge was sure of "sure-pass": it comes later
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"annotation-queue-verdicts-{width}")

        page = watched.open(f"{server.url}/u/{login}/queued")  # the judge measured, beside its score
        shown = page.locator("[data-agreement-level]")
        assert "agree 50%" in shown.inner_text() and ", 4 runs" in shown.inner_text()
        assert page.locator(".agreement-low").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        shown.scroll_into_view_if_needed()
        watched.shot(f"judge-agreement-profile-{width}")
        assert watched.problems == []
    finally:
        watched.close()

    ref = AgentRef(login, "queued")
    landed = {run: [(f.thumbs, f.label, f.source)
                    for f in server.store.feedback.run_feedback(ref, run, 10)]
              for run in ("closest", "close-above", "clear-fail")}
    assert landed == {"closest": [("up", "wrong-tool", "owner")], "close-above": [],
                      "clear-fail": [("down", None, "owner")]}
    # the judge failed "closest" (0.48), people passed it; both failed "clear-fail" and
    # "agreed"; the judge passed "disputed", people failed it
    assert server.store.feedback.agreement_tables([ref])[ref] == AgreementTable(pf=1, fp=1, ff=2)
