"""A session's page in a real browser (headless Chromium): its runs in order as one
conversation through the chat view, its numbers in the header and the user as a pseudonym, at
desktop and phone widths with no sideways scroll; the sessions list links to it. Screenshots go
to artifacts/screenshots/session-{width}.png."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import CHROMIUM, SHOTS, WIDTHS, Watched, browser  # noqa: F401
from tests.factories import batch
from tests.http.surfaces_data import new_login, post
from tests.http.test_sessions_http import turn

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")]

SESSION = "support-chat-2026-12-05-a-rather-long-conversation-id-0042"

ONE_LINE = """(selector) => {
  const problems = [];
  for (const row of document.querySelectorAll(selector)) {
    const parts = [...row.children].map(c => c.getBoundingClientRect()).filter(r => r.width > 0);
    const top = Math.min(...parts.map(r => r.top)), bottom = Math.max(...parts.map(r => r.bottom));
    parts.forEach((r, i) => {
      if (r.top > top + (bottom - top) / 2) problems.push(`part ${i} wrapped below the row`);
      parts.slice(i + 1).forEach((s, j) => {
        if (r.left < s.right - 1 && s.left < r.right - 1 && r.top < s.bottom - 1 && s.top < r.bottom - 1)
          problems.push(`parts ${i} and ${i + j + 1} overlap`);
      });
    });
  }
  return problems;
}"""
"""The parts of each row (dot, name, numbers) side by side on one line: none overlaps another
or wraps below the row's middle."""


@pytest.fixture(scope="module")
def conversation(bench_server: RunningServer) -> str:
    """A support chat of three turns (the last failed) with a long session id and a user."""
    login = new_login()
    key = bench_server.create_key(login)
    bench_server.showing_content(login, "support-bot")
    events = []
    for i in range(3):
        events += turn(f"turn-{i}", i, SESSION, "customer@example.com",
                       status="failed" if i == 2 else "success")
    assert post(bench_server, batch("support-bot", events), key).status_code == 200
    return f"{login}/support-bot"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_session_page_reads_as_one_conversation_at_every_width(
        browser: Any, bench_server: RunningServer, conversation: str,  # noqa: F811
        width: int) -> None:
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{conversation}/sessions/{SESSION}")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"session-{width}.png"), full_page=True)
        assert watched.problems == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        turns = page.locator("[data-turn]")
        assert [turns.nth(i).get_attribute("data-turn") for i in range(turns.count())] == [
            "turn-0", "turn-1", "turn-2"]
        first = turns.nth(0).locator(".chat-msg")
        assert first.nth(0).get_attribute("data-role") == "user"
        assert "Where is Lisbon?" in first.nth(0).inner_text()
        assert "In Portugal." in first.nth(1).inner_text()
        assert turns.nth(2).locator(".dot").get_attribute("aria-label") == "failed"
        user = page.locator("[data-session-user]").inner_text()
        assert "customer" not in user and "u-" in user
        assert page.locator("[data-session-runs]").inner_text().endswith("3")
        listing = watched.open(f"{bench_server.url}/u/{conversation}/sessions")
        assert listing.evaluate("document.documentElement.scrollWidth") <= width
        assert listing.evaluate(ONE_LINE, "[data-sessions] .session-link") == [], \
            "a sessions row's parts are drawn over each other or wrapped under the name"
        listing.locator("[data-sessions] a").first.click()
        listing.wait_for_url(f"**/sessions/{SESSION}")
    finally:
        watched.close()


def test_the_session_page_grows_while_the_conversation_goes_on(
        browser: Any, bench_server: RunningServer) -> None:  # noqa: F811
    login = new_login()
    key = bench_server.create_key(login)
    bench_server.showing_content(login, "live-bot")
    assert post(bench_server, batch("live-bot", turn("live-0", 0, "live-chat", "who")),
                key).status_code == 200
    watched = Watched(browser, 1280, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{login}/live-bot/sessions/live-chat")
        page.wait_for_selector("[data-live-state][data-state='live']", timeout=10_000)
        assert page.locator("[data-turn]").count() == 1
        assert post(bench_server, batch("live-bot", turn("live-1", 1, "live-chat", "who")),
                    key).status_code == 200
        page.wait_for_selector("[data-turn='live-1']", timeout=10_000)
        assert "The Tagus." in page.locator("[data-turn='live-1']").inner_text()
        assert page.locator("[data-session-runs]").inner_text().endswith("2")
        assert watched.problems == []
    finally:
        watched.close()
