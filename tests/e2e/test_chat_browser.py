"""The chat view in a real browser (Debian's headless Chromium via Playwright) at desktop and
phone widths: the model call of an OpenTelemetry GenAI run (openai-v2, content as log events),
an OpenInference run and a LangChain run, each sent by its real client to the SQLite server,
opens, in light and dark, as messages by role with the tool call's arguments, folds nothing short, fits the width,
and shows the raw JSON when its toggle is clicked. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import (
    BROWSER_TESTS,
    SCHEMES,
    WIDTHS,
    Watched,
    browser,  # noqa: F401 - the fixture
)
from tests.http.chat_data import (
    EARLIER,
    QUESTION,
    SYSTEM,
    ChatRun,
    langchain_run,
    openinference_run,
    otel_genai_run,
)

pytestmark = BROWSER_TESTS

SENDERS: dict[str, Callable[[RunningServer], ChatRun]] = {
    "otel-genai": otel_genai_run, "openinference": openinference_run, "langchain": langchain_run}


@pytest.fixture(scope="module")
def runs(bench_server: RunningServer) -> dict[str, ChatRun]:
    return {name: send(bench_server) for name, send in SENDERS.items()}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("convention", SENDERS)
def test_a_model_call_reads_as_a_chat(browser: Any, bench_server: RunningServer,  # noqa: F811
                                      runs: dict[str, ChatRun], convention: str,
                                      scheme: str, width: int) -> None:
    watched = Watched(browser, width, scheme)
    try:
        page = watched.open(bench_server.url + runs[convention].page)
        chat = page.locator("ol.chat[data-chat]")
        assert chat.is_visible()
        roles = chat.locator("li.chat-msg")
        assert [roles.nth(i).get_attribute("data-role") for i in range(roles.count())] == [
            "system", "user", "assistant", "tool", "assistant"]
        assert SYSTEM in roles.nth(0).inner_text() and QUESTION in roles.nth(1).inner_text()
        assert EARLIER in roles.nth(3).inner_text()
        call = roles.nth(4).locator("[data-tool-call]")
        assert call.is_visible()
        assert "get_weather" in call.inner_text() and '"city": "Lisbon"' in call.inner_text()
        raw = page.locator("details[data-raw-json]")
        assert raw.locator(".detail-grid").is_hidden(), "the raw JSON starts folded"
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"chat-{convention}-{scheme}-{width}")
        raw.locator("> summary").click()
        assert raw.locator(".detail-grid").is_visible()
        assert SYSTEM in raw.locator(".detail-grid").inner_text()
        assert watched.problems == []
    finally:
        watched.close()
