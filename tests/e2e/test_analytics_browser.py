"""Analytics over time in a real browser (Debian's headless Chromium via Playwright), at desktop
and phone widths: a visitor reads the profile's charts and picks a range and a version with
plain links and a form; the signed-in owner reads them on the dashboard's agent page, with a
tag to filter by; neither page scrolls sideways. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from bench_core.clustering.workflow import cluster_agent
from bench_core.domain.models import iso
from bench_core.domain.privacy import HIDDEN

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import (
    BROWSER_TESTS,
    SHOTS,
    WIDTHS,
    Watched,
    browser,  # noqa: F401 - the fixture
)
from tests.factories import batch, ev, task_events
from tests.http.surfaces_data import post, show_content
from tests.http.test_ingest_http import new_login

pytestmark = BROWSER_TESTS
CHARTS = ("runs", "success", "errors", "score", "cost", "tokens", "latency", "clusters")
ERRORS = ("TimeoutError: request to the search API timed out after 30s",
          "JSONDecodeError: Expecting value while parsing the crm reply")


def a_month(server: RunningServer, login: str, slug: str) -> None:
    """30 days of runs through `/ingest`, a batch a day (more failures and slower on some
    days, a new version half-way, a new kind of failure in the last ten days), each run with
    a model call and tagged `nightly`; then the failures clustered."""
    key = server.create_key(login)
    show_content(server, login, slug)
    now = server.store.clock.now()
    for day in range(30, 0, -1):
        start = now - timedelta(days=day, hours=3)
        events: list[dict[str, Any]] = []
        for i in range(6 + day % 5):
            task_id = f"d{day}-{i}-{uuid.uuid4().hex[:4]}"
            failed = i < day % 3 or (day <= 10 and i >= 5)
            first, *rest = task_events(
                task_id, status="failed" if failed else "success",
                cost=0.002 + 0.0001 * (day % 7), duration_ms=300 + 40 * (day % 6) + 25 * i,
                output=ERRORS[i >= 5])
            model = "gpt-4o" if i % 3 else "claude-3-5-haiku-20241022"
            call = ev("task.log", task_id, data={"label": "evidence", "model": model,
                                                 "input_tokens": 900 + 10 * i,
                                                 "output_tokens": 200 + 5 * i})
            rest[-1]["data"] = {"tags": ["nightly"]}
            events += [first, call, *rest]
        stamped = [{**e, "ts": iso(start + timedelta(seconds=k))} for k, e in enumerate(events)]
        version = "1.0.0" if day > 15 else "1.1.0"
        assert post(server, batch(slug, stamped, version=version), key).status_code == 200
    cluster_agent(server.services, {"agent": f"{login}/{slug}"})


@pytest.fixture(scope="module")
def charted(bench_server: RunningServer) -> tuple[str, str]:
    login, slug = new_login(), "charted"
    a_month(bench_server, login, slug)
    return login, slug


def no_sideways_scroll(page: Any, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"


def every_chart_drawn(section: Any) -> None:
    for chart in CHARTS:
        assert section.locator(f'[data-chart="{chart}"] svg').count() == 1, chart


@pytest.mark.parametrize("width", WIDTHS)
def test_a_visitor_reads_the_profiles_charts_and_picks_a_range_and_version(
        browser: Any, bench_server: RunningServer, charted: tuple[str, str],  # noqa: F811
        width: int) -> None:
    login, slug = charted
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{login}/{slug}")
        section = page.locator("#analytics")
        assert section.get_attribute("data-analytics") == "30d"
        every_chart_drawn(section)
        assert section.locator('input[name="tag"]').count() == 0, "tags are the owner's"
        assert section.locator('tr[data-model="gpt-4o"]').count() == 1
        no_sideways_scroll(page, width)
        section.scroll_into_view_if_needed()
        section.screenshot(path=str(shot_path(f"analytics-profile-{width}")))
        clusters = section.locator("#chart-clusters")
        assert clusters.locator("li[data-cluster]").count() == 2
        assert set(clusters.locator(".cluster-label").all_inner_texts()) == {HIDDEN}, \
            "labels are content, hidden until the owner shows it"
        assert clusters.locator("svg").bounding_box()["width"] <= width
        clusters.screenshot(path=str(shot_path(f"analytics-clusters-{width}")))

        section.locator('nav a:has-text("90 days")').click()
        page.wait_for_load_state("networkidle")
        assert "range=90d" in page.url
        assert page.locator("#analytics").get_attribute("data-analytics") == "90d"
        form = page.locator("#analytics form")
        form.locator("select[name=version]").select_option("1.0.0")
        form.locator("button").click()
        page.wait_for_load_state("networkidle")
        assert "version=1.0.0" in page.url and "range=90d" in page.url
        summary = page.locator("#analytics .analytics-summary").inner_text()
        assert "of version 1.0.0" in summary
        no_sideways_scroll(page, width)
        assert watched.problems == []
    finally:
        watched.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_owner_reads_them_on_the_dashboard_and_filters_by_tag(
        browser: Any, bench_server: RunningServer, charted: tuple[str, str],  # noqa: F811
        width: int) -> None:
    login, slug = charted
    watched = Watched(browser, width, "light")
    try:
        page = watched.sign_in(bench_server, login)
        page = watched.open(f"{bench_server.url}/dashboard/agents/{slug}")
        section = page.locator("#analytics")
        every_chart_drawn(section)
        clusters = section.locator("#chart-clusters")
        said = " ".join(clusters.locator(".cluster-label").all_inner_texts())
        assert "jsondecodeerror" in said and "timeouterror" in said, "the owner reads them"
        clusters.screenshot(path=str(shot_path(f"analytics-clusters-owner-{width}")))
        section.locator("input[name=tag]").fill("nightly")
        section.locator("form button").click()
        page.wait_for_load_state("networkidle")
        assert "tag=nightly" in page.url
        assert "tagged nightly" in page.locator("#analytics .analytics-summary").inner_text()
        no_sideways_scroll(page, width)
        page.locator("#analytics").screenshot(path=str(shot_path(f"analytics-owner-{width}")))
        assert watched.problems == []
    finally:
        watched.close()


def shot_path(name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"
