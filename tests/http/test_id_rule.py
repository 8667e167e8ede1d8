"""One rule for ids, over real HTTP: an event, task or run id is a path segment of its pages, so
one that could not be (a '/', a control character, '.' or '..') is refused naming it, and every
other id, odd characters and all, is listed and answered by its page and JSON twin
(`bench_core.domain.field_limits.ID_RULE`)."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import quote

import httpx
import pytest
from bench_core.domain.field_limits import ID_RULE
from bench_core.domain.models import AgentRef

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch


@pytest.fixture
def owner(bench_server: RunningServer) -> tuple[str, str]:
    login = new_login()
    return login, bench_server.create_key(login)


@pytest.mark.parametrize(("events", "loc"), [
    (task_events("runs/1"), ["events", 0, "task_id"]),
    (task_events("line\nbreak"), ["events", 0, "task_id"]),
    (task_events(".."), ["events", 0, "task_id"]),
    (task_events("."), ["events", 0, "task_id"]),
    (task_events("child", parent="a/b"), ["events", 0, "parent_task_id"]),
    ([{**ev("custom"), "id": "e/1"}], ["events", 0, "id"]),
    ([{**ev("custom"), "id": "tab\there"}], ["events", 0, "id"]),
    ([{**ev("custom"), "id": "x" * 129}], ["events", 0, "id"]),
])
def test_an_id_that_cannot_name_a_page_is_422_and_nothing_stored(
        bench_server: RunningServer, owner: tuple[str, str], events: list[dict[str, object]],
        loc: list[object]) -> None:
    login, key = owner
    r = post_batch(bench_server, batch("ids", events), key)
    assert r.status_code == 422, r.text
    (problem, *_) = r.json()["detail"]
    assert problem["loc"] == loc and ID_RULE in problem["msg"]
    assert bench_server.store.agents.get_agent(AgentRef(login, "ids")) is None


def test_a_run_id_with_odd_characters_is_listed_and_its_page_and_json_answer(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    run_id = "run #1?a=b&c=d %25 é+ü\\x"
    r = post_batch(bench_server, batch("odd-ids", task_events(run_id)), key)
    assert r.status_code == 200, r.text
    (listed,) = bench_server.get(f"/api/agents/{login}/odd-ids/runs", key)["runs"]
    assert listed["run_id"] == run_id
    base = f"{bench_server.url}/u/{login}/odd-ids"
    page = httpx.get(f"{base}/runs/{quote(run_id, safe='')}", timeout=30)
    assert page.status_code == 200, page.text
    twin = httpx.get(f"{bench_server.url}/api/agents/{login}/odd-ids/runs/"
                     f"{quote(run_id, safe='')}", timeout=30)
    assert twin.status_code == 200 and twin.json()["run_id"] == run_id
    for listing in (base, f"{base}/runs"):
        links = {unescape(href) for href in re.findall(r'href="([^"]*/runs/[^"]+)"',
                                                      httpx.get(listing, timeout=30).text)}
        assert links, listing
        for href in links:
            assert httpx.get(bench_server.url + href, timeout=30).status_code == 200, href
