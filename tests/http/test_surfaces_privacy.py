"""Privacy and injection on every public surface: a private agent is not there for anyone but
its owner, hidden inputs and outputs appear nowhere, and hostile names and outputs are text."""

from __future__ import annotations

import struct
import uuid
import xml.etree.ElementTree as ET

import httpx
import pytest
from markupsafe import escape

from tests.conftest import RunningServer
from tests.factories import batch, day_old, task_events
from tests.http.surfaces_data import HOSTILE, Seeded, fetch, seed_agent, set_agent
from tests.http.test_ingest_http import new_login, post

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def public(bench_server: RunningServer) -> Seeded:
    return seed_agent(bench_server, runs=12, failures=2, display_name="Plain Public Agent")


@pytest.fixture(scope="module")
def private(bench_server: RunningServer) -> tuple[Seeded, str]:
    tag = "priv-" + uuid.uuid4().hex[:8]
    agent = seed_agent(bench_server, runs=12, failures=2, display_name="Secret Zebra Agent",
                       framework=tag)
    set_agent(bench_server, agent, visibility="private")
    return agent, tag


def surfaces(agent: Seeded, other: Seeded) -> list[str]:
    """Every address that shows one agent, or this agent beside another."""
    return [f"/u/{agent.path}", f"/embed/{agent.path}", f"/embed/{agent.path}?size=lg",
            f"/og/{agent.path}.png", f"/api/agents/{agent.path}",
            f"/vs/@{agent.login}/{agent.slug}/@{other.login}/{other.slug}",
            f"/vs/@{other.login}/{other.slug}/@{agent.login}/{agent.slug}"]


def test_a_private_agent_is_not_found_on_any_surface(bench_server: RunningServer, private,
                                                     public: Seeded) -> None:
    agent, _ = private
    stranger = bench_server.create_key(new_login())
    for path in surfaces(agent, public):
        for key in (None, stranger):
            r = fetch(bench_server, path, key=key)
            assert r.status_code == 404, path
            assert "Secret Zebra" not in r.text and "secret-output" not in r.text, path


def test_its_owner_still_sees_its_pages(bench_server: RunningServer, private,
                                        public: Seeded) -> None:
    agent, _ = private
    for path in (f"/u/{agent.path}", f"/vs/@{agent.login}/{agent.slug}/@{public.login}/{public.slug}"):
        r = fetch(bench_server, path, key=agent.key)
        assert r.status_code == 200 and "Secret Zebra Agent" in r.text, path
        assert r.headers["cache-control"] == "private, no-store"
    page = fetch(bench_server, f"/u/{agent.path}", key=agent.key).text
    assert "only you see this" in page and 'name="robots" content="noindex"' in page
    assert "og:image" not in page


def test_shared_surfaces_stay_anonymous_even_for_the_owner(bench_server: RunningServer,
                                                          private) -> None:
    """Badges, embeds and OG images are cached publicly: an owner's key must not fill them."""
    agent, _ = private
    for path in (f"/badge/{agent.path}.svg", f"/embed/{agent.path}", f"/og/{agent.path}.png"):
        assert fetch(bench_server, path, key=agent.key).status_code == 404, path


def test_a_private_badge_is_the_same_as_a_missing_one(bench_server: RunningServer,
                                                      private) -> None:
    agent, _ = private
    private_badge = fetch(bench_server, f"/badge/{agent.path}.svg")
    missing = fetch(bench_server, f"/badge/{new_login()}/nothing.svg")
    assert private_badge.status_code == missing.status_code == 404
    assert private_badge.content == missing.content
    assert private_badge.headers["content-type"] == "image/svg+xml; charset=utf-8"
    texts = {el.text for el in ET.fromstring(private_badge.content).iter(f"{SVG}text")}
    assert texts == {"bench", "not found"}


def test_a_private_agent_is_never_listed(bench_server: RunningServer, private) -> None:
    agent, tag = private
    for sort in ("runs", "success", "latency", "cost"):
        data = httpx.get(f"{bench_server.url}/api/leaderboard", params={"sort": sort, "q": tag},
                         headers={"X-Bench-Key": agent.key}).json()
        assert data["agents"] == [], sort
        page = fetch(bench_server, f"/leaderboard?sort={sort}&q={tag}", key=agent.key)
        assert "Secret Zebra" not in page.text
    assert "Secret Zebra" not in fetch(bench_server, "/").text


def test_going_public_and_private_again_updates_the_leaderboard(bench_server: RunningServer
                                                                ) -> None:
    tag = "flip-" + uuid.uuid4().hex[:8]
    agent = seed_agent(bench_server, runs=10, failures=0, framework=tag)

    def listed() -> list[str]:
        data = httpx.get(f"{bench_server.url}/api/leaderboard",
                         params={"sort": "success", "q": tag}).json()
        return [a["slug"] for a in data["agents"]]

    assert listed() == ["agent"]
    set_agent(bench_server, agent, visibility="private")
    assert listed() == []
    set_agent(bench_server, agent, visibility="public", display_name="Renamed " + tag)
    assert listed() == ["agent"]


def test_hidden_inputs_and_outputs_appear_on_no_page(bench_server: RunningServer,
                                                     public: Seeded) -> None:
    agent = seed_agent(bench_server, runs=12, failures=3, display_name="Quiet Agent")
    set_agent(bench_server, agent, hide_inputs=True, hide_outputs=True)
    for path in (f"/u/{agent.path}", f"/embed/{agent.path}?size=lg", "/leaderboard",
                 f"/vs/@{agent.login}/{agent.slug}/@{public.login}/{public.slug}",
                 f"/api/agents/{agent.path}", f"/api/agents/{agent.path}/tasks"):
        body = fetch(bench_server, path).text
        assert "secret_input" not in body and "in-11" not in body, path
        assert "secret-output" not in body, path
    page = fetch(bench_server, f"/u/{agent.path}").text
    assert "Hidden by the owner" in page
    owner = fetch(bench_server, f"/u/{agent.path}", key=agent.key).text
    assert "secret-output-11" in owner and "in-11" in owner


@pytest.fixture(scope="module")
def hostile(bench_server: RunningServer) -> Seeded:
    """An agent whose every name is hostile, a day old with its runs, so it ranks too."""
    login = new_login()
    key = bench_server.create_key(login)
    bench_server.store.agents.create_agent(day_old(login, "evil"))
    events = []
    for i in range(12):
        events += task_events(f"x{i}", HOSTILE, output={"text": HOSTILE}, input={"q": HOSTILE},
                              status="failed" if i == 0 else "success", duration_ms=100)
    r = post(bench_server, batch("evil", events, display_name=HOSTILE, model=HOSTILE,
                                 framework=HOSTILE, architecture=HOSTILE, tools=[HOSTILE]), key)
    assert r.status_code == 200, r.text
    return Seeded(login, "evil", key)


def test_hostile_text_is_escaped_in_every_page(bench_server: RunningServer, hostile: Seeded,
                                               public: Seeded) -> None:
    escaped = str(escape(HOSTILE))  # as Jinja's autoescape writes it
    for path in (f"/u/{hostile.path}", f"/embed/{hostile.path}?size=lg",
                 f"/leaderboard?q={hostile.login}", f"/leaderboard?sort=success&q={hostile.login}",
                 f"/vs/@{hostile.login}/{hostile.slug}/@{public.login}/{public.slug}"):
        body = fetch(bench_server, path).text
        assert "<script>alert" not in body and "<svg onload" not in body, path
        assert escaped in body, path
    assert "<script>alert" not in fetch(bench_server, "/").text


def test_hostile_text_is_escaped_in_badges(bench_server: RunningServer, hostile: Seeded) -> None:
    for style in ("flat", "flat-square", "for-the-badge"):
        r = fetch(bench_server, f"/badge/{hostile.path}.svg?style={style}")
        root = ET.fromstring(r.content)  # raises on anything that is not well-formed XML
        assert root.tag == f"{SVG}svg"
        assert [el.tag for el in root.iter() if el.tag.endswith("script")] == []
        title = root.find(f"{SVG}title")
        assert title is not None and HOSTILE in title.text
        assert root.get("aria-label") == title.text


def test_control_characters_cannot_break_a_badge(bench_server: RunningServer) -> None:
    agent = seed_agent(bench_server, runs=1, failures=0, display_name="bell\x07 and\x1b esc")
    r = fetch(bench_server, f"/badge/{agent.path}.svg")
    title = ET.fromstring(r.content).find(f"{SVG}title")
    assert title is not None and "bell and esc" in title.text


def test_control_characters_cannot_break_an_og_card(bench_server: RunningServer) -> None:
    from bench_core.render.og_card import render_og

    agent = seed_agent(bench_server, runs=2, failures=0, display_name="two\nlines\r\x00",
                       model="gpt-4o\n\u2028mini", framework="tab\tand\x1b[31mansi\x7f")
    r = fetch(bench_server, f"/og/{agent.path}.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert struct.unpack(">II", r.content[16:24]) == (1200, 630)
    summary = httpx.get(f"{bench_server.url}/api/agents/{agent.path}").json()
    spaced = {**summary, "display_name": "two lines", "model": "gpt-4o mini",
              "framework": "tab and [31mansi"}
    assert r.content == render_og(spaced), "each run of control characters reads as a space"
