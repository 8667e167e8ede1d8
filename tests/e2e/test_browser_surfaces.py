"""The public pages in a real browser (Debian's headless Chromium, driven by Playwright): no
console errors, no failed requests, the light and the dark theme, desktop and phone widths.
Screenshots go to artifacts/screenshots/ (kept out of git) for people to look at."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.domain.ranking import Qualification
from bench_core.http.pages import EMBED_SIZES

from tests.benchmark_support import SUITE, graded_run, run_body
from tests.conftest import RunningServer
from tests.factories import batch, day_old, task_events
from tests.http.accounts_support import signin_link
from tests.http.surfaces_data import Seeded, seed_agent
from tests.http.test_ingest_http import new_login, post

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")

BROWSER_TESTS = [pytest.mark.browser,
                 pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")]
"""What marks a module of browser tests (`pytestmark`): skipped where there is no Chromium."""
pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def agents(bench_server: RunningServer) -> tuple[Seeded, Seeded]:
    tag = "browser-" + uuid.uuid4().hex[:6]
    first = seed_agent(bench_server, runs=40, failures=5, duration_ms=320,
                       display_name="Research <b>Agent</b> \"quoted\"", model="llama-3.3-70b",
                       framework=tag, tools=["web_search", "fetch"])
    second = seed_agent(bench_server, runs=25, failures=9, duration_ms=1400, cost=0.02,
                        display_name="Coder", model="gpt-4o", framework=tag)
    return first, second


@pytest.fixture(scope="module")
def benchmark_run(bench_server: RunningServer, agents: tuple[Seeded, Seeded]) -> str:
    """A benchmark run by the first agent, so its profile and the benchmark pages show one."""
    response = httpx.post(f"{bench_server.url}/api/benchmarks/{SUITE}/runs", json=run_body(agents[0].slug),
                          headers={"X-Bench-Key": agents[0].key}, timeout=60)
    return str(graded_run(bench_server.url, response, agents[0].key)["run_id"])


@dataclass
class HostSite:
    """Somebody else's web site (another origin, on loopback) that embeds our widget."""

    url: str
    pages: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def host_site() -> Iterator[HostSite]:
    site = HostSite("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = site.pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.url = f"http://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site
    server.shutdown()
    thread.join(timeout=10)


class Watched:
    """A page with everything that can go wrong in it recorded."""

    def __init__(self, browser: Any, width: int, scheme: str, height: int = 900) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height},
                                           color_scheme=scheme)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url}"))
        self.page.on("response", lambda r: self.problems.append(f"{r.status}: {r.url}")
                     if r.status >= 400 else None)

    def open(self, url: str) -> Any:
        self.page.goto(url, wait_until="networkidle")
        return self.page

    def sign_in(self, server: Any, login: str) -> Any:
        """Sign in as `login` through the console's one-time link, as the owner would."""
        page = self.open(signin_link(server))
        page.fill("#login", login)
        page.click("form[action='/signin/local'] button")
        page.wait_for_load_state("networkidle")
        return page

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


def background_is_dark(page: Any, selector: str = "body") -> bool:
    rgb = page.evaluate(f"getComputedStyle(document.querySelector({selector!r}))"
                        ".backgroundColor.match(/\\d+/g).slice(0, 3).map(Number)")
    return sum(rgb) / 3 < 128


def page_paths(agents: tuple[Seeded, Seeded], run_id: str) -> dict[str, str]:
    first, second = agents
    return {"profile": f"/u/{first.path}",
            "leaderboard": "/leaderboard?sort=success",
            "compare": f"/vs/@{first.login}/{first.slug}/@{second.login}/{second.slug}",
            "landing": "/",
            "benchmarks": "/benchmarks",
            "suite": f"/benchmarks/{SUITE}",
            "benchmark-run": f"/benchmarks/{SUITE}/runs/{run_id}"}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", ["profile", "leaderboard", "compare", "landing", "benchmarks", "suite",
                                  "benchmark-run"])
def test_page_renders_cleanly(browser: Any, bench_server: RunningServer, agents, benchmark_run: str,
                              name: str, scheme: str, width: int) -> None:
    watched = Watched(browser, width, scheme)
    try:
        page = watched.open(bench_server.url + page_paths(agents, benchmark_run)[name])
        watched.shot(f"{name}-{scheme}-{width}")
        assert watched.problems == []
        assert background_is_dark(page) == (scheme == "dark")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        assert page.locator("h1").first.is_visible()
    finally:
        watched.close()


def test_profile_details_copy_and_theme_switch(browser: Any, bench_server: RunningServer,
                                               agents) -> None:
    watched = Watched(browser, 1280, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{agents[0].path}")
        assert page.locator("h1").first.inner_text().startswith('Research <b>Agent</b> "quoted"')
        task = page.locator("ul.tasks details").first
        assert not task.locator("pre").first.is_visible()
        task.locator("summary").click()
        assert task.locator("pre").first.is_visible()
        assert page.locator("[data-copy]").first.is_visible()  # shown once the script runs
        toggle = page.locator("[data-theme-toggle]")
        toggle.click()
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        assert background_is_dark(page)
        page.reload(wait_until="networkidle")
        assert background_is_dark(page), "the chosen theme is remembered"
        assert watched.problems == []
    finally:
        watched.close()


@pytest.mark.parametrize("width, sizes", [(1280, ("sm", "md", "lg")), (390, ("sm",))])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_embeds_render_in_an_iframe_on_another_site(browser: Any, bench_server: RunningServer,
                                                     host_site: HostSite, agents, scheme: str,
                                                     width: int, sizes: tuple[str, ...]) -> None:
    """A host page of another origin frames each size; the frame follows the reader's scheme
    (theme=auto) and shows the agent's numbers."""
    dims = EMBED_SIZES
    frames = "".join(
        f'<iframe id="{size}" src="{bench_server.url}/embed/{agents[0].path}?size={size}" '
        f'width="{dims[size][0]}" height="{dims[size][1]}" style="border:0;display:block;'
        f'margin:16px"></iframe>' for size in sizes)
    watched = Watched(browser, width, scheme)
    try:
        host_site.pages["/host"] = (f"<!doctype html><title>host</title><link rel=icon href=\"data:,\">"
                                    f"<body>{frames}</body>")
        watched.open(host_site.url + "/host")
        for size in sizes:
            frame = watched.page.frame_locator(f"#{size}")
            assert frame.locator("[data-metric=runs]").inner_text() == "40"
            assert frame.locator(".name").inner_text() == 'Research <b>Agent</b> "quoted"'
            handle = watched.page.locator(f"#{size}").element_handle().content_frame()
            assert background_is_dark(handle) == (scheme == "dark")
            assert handle.evaluate("document.documentElement.scrollWidth") <= dims[size][0]
            fits = "(m => m.scrollHeight <= m.clientHeight)(document.getElementById('panel'))"
            assert handle.evaluate(fits), f"{size}: the panel is taller than its frame"
        watched.shot(f"embed-{scheme}-{width}")
        assert watched.problems == []
    finally:
        watched.close()


def test_embed_refreshes_in_place(browser: Any, bench_server: RunningServer) -> None:
    from playwright.sync_api import expect

    agent = seed_agent(bench_server, runs=3, failures=0)
    width, height = EMBED_SIZES["md"]
    watched = Watched(browser, width, "light", height=height)
    try:
        page = watched.page
        page.clock.install()
        watched.open(f"{bench_server.url}/embed/{agent.path}?size=md&theme=light")
        page.evaluate("window.sameDocument = true")
        assert page.locator("[data-metric=runs]").inner_text() == "3"
        seed_agent(bench_server, runs=2, failures=2, login=agent.login, key=agent.key)
        page.clock.run_for(61_000)
        # Polled from outside the page: its CSP refuses the eval that `wait_for_function` uses.
        expect(page.locator("[data-metric=runs]")).to_have_text("5")
        assert page.locator("[data-metric=success_rate]").inner_text() == "60%"
        assert page.evaluate("window.sameDocument") is True, "updated without a reload"
        assert watched.problems == []
    finally:
        watched.close()


@pytest.fixture(scope="module")
def long_named_runs(bench_server: RunningServer) -> str:
    """An agent whose newest run and newest failure have long names (and a long display name),
    listed by the framework tag returned; a day old, with earlier runs, so it ranks."""
    tag = "lbrow-" + uuid.uuid4().hex[:6]
    login = new_login()
    bench_server.store.agents.create_agent(day_old(login, "long-named"))
    long = "summarise the quarterly incident reports and draft the follow-up emails " * 2
    events = [*(e for i in range(Qualification().min_runs - 2) for e in task_events(f"early-{i}")),
              *task_events("failed-1", "fetch every page of the vendor's API documentation",
                           status="failed", output="timeout"),
              *task_events("newest-2", long.strip())]
    response = post(bench_server, batch("long-named", events, framework=tag,
                                        display_name="An agent with a rather long display name"),
                    bench_server.create_key(login))
    assert response.status_code == 200, response.text
    return tag


@pytest.mark.parametrize("width", WIDTHS)
def test_a_leaderboard_row_opens_the_agents_newest_run(browser: Any, bench_server: RunningServer,
                                                       long_named_runs: str, width: int) -> None:
    """The row's links to the newest run and the newest failure stay on screen at phone width
    (long names are cut with an ellipsis) and open the run page."""
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/leaderboard?q={long_named_runs}")
        watched.shot(f"leaderboard-latest-runs-{width}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        for kind in ("run", "failure"):
            link = page.locator(f"[data-latest={kind}]")
            assert link.is_visible()
            box = link.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, kind
            assert box["height"] < 30, f"{kind}: the link wraps"
        name = page.locator("[data-latest=run] .name")
        assert name.evaluate("n => n.scrollWidth > n.clientWidth"), "a long name is cut"
        page.locator("[data-latest=run]").click()
        page.wait_for_load_state("networkidle")
        assert "/runs/newest-2" in page.url
        assert "summarise the quarterly" in page.locator("[data-run-head] h1").inner_text()
        assert watched.problems == []
    finally:
        watched.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_signed_in_pages_fit_the_screen_with_the_whole_header(browser: Any, bench_server: RunningServer,
                                                              width: int) -> None:
    """A signed-in visitor's header holds one more link than a stranger's: at phone width it
    wraps instead of pushing the page (and the theme button) past the screen's edge."""
    from tests.http.accounts_support import Browser

    cookie = Browser(bench_server).session_for(new_login())
    watched = Watched(browser, width, "light")
    try:
        watched.context.add_cookies([{"name": "bench_session", "value": cookie,
                                      "url": bench_server.url}])
        for path in ("/dashboard", "/dashboard/keys", "/try", "/leaderboard"):
            page = watched.open(bench_server.url + path)
            watched.shot(f"signed-in-{path.strip('/').replace('/', '-')}-{width}")
            assert page.evaluate("document.documentElement.scrollWidth") <= width, path
            toggle = page.locator("[data-theme-toggle]")
            assert toggle.is_visible(), path
            box = toggle.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, path
        assert watched.problems == []
    finally:
        watched.close()
