"""An agent's versions over real HTTP on each store: `/ingest`'s `version`, each version's numbers
on the API and the profile, the newest against the one before it with the compare page's tests,
the badge's `?version=`, and bad versions refused with a JSON error."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import httpx
import pytest

from tests.conftest import RunningServer
from tests.factories import batch, task_events
from tests.http.surfaces_data import new_login, post, seed_agent

SVG = "{http://www.w3.org/2000/svg}"


def badge_texts(response: httpx.Response) -> list[str]:
    root = ET.fromstring(response.content)
    return [el.text or "" for el in root.iter(f"{SVG}text") if el.get("aria-hidden") != "true"]


def two_releases(server: RunningServer) -> str:
    """30 runs of 1.0.0 (6 failed), then 30 of 1.1.0 (none failed), of one agent; its path."""
    login = new_login()
    key = server.create_key(login)
    seed_agent(server, login=login, key=key, slug="agent", runs=30, failures=6, version="1.0.0")
    seed_agent(server, login=login, key=key, slug="agent", runs=30, failures=0, version="1.1.0")
    return f"{login}/agent"


def test_each_version_has_its_numbers_and_the_newest_is_compared_with_the_one_before(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    path = two_releases(server)
    answer = server.get(f"/api/agents/{path}/versions")
    newer, older = answer["versions"]
    assert (newer["version"], older["version"]) == ("1.1.0", "1.0.0"), "the newest first"
    assert (older["runs"], older["successes"], older["failures"]) == (30, 24, 6)
    assert older["success_rate"] == pytest.approx(0.8)
    low, high = older["success_rate_ci95"]
    assert low < 0.8 < high
    assert older["headline_cost_usd_per_run"] == pytest.approx(0.004)
    assert older["headline_cost_usd_per_success"] == pytest.approx(0.004 * 30 / 24)
    assert older["headline_cost_source"] == "owner-reported"
    assert older["latency_ms"]["p95"] is not None
    assert newer["success_rate"] == 1.0 and newer["eval_count"] <= 30, "judged in the background"
    comparison = answer["comparison"]
    assert (comparison["newer"], comparison["older"]) == ("1.1.0", "1.0.0")
    lines = {line["key"]: line for line in comparison["lines"]}
    # by hand: pooled 54/60 = 0.9, se = sqrt(0.9 * 0.1 * (1/30 + 1/30)), z = 0.2 / se
    z = 0.2 / math.sqrt(0.9 * 0.1 * (2 / 30))
    assert lines["success"]["p_value"] == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert lines["success"]["says"] == "better, p = 0.0098"
    assert lines["success"]["better"] == "newer"
    assert lines["p50"]["says"] == "within noise", "the same durations in both releases"
    assert server.get(f"/api/agents/{path}")["runs"] == 60, "the agent counts both"


def test_a_runs_json_and_its_tasks_carry_its_version(server_on_each_store: RunningServer
                                                      ) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    start, *rest = task_events("r1")
    assert post(server, batch("agent", [start], version="1.0.0"), key).status_code == 200
    assert post(server, batch("agent", rest + task_events("c1", parent="r1"), version="2.0.0"),
                key).status_code == 200
    assert server.get(f"/api/agents/{login}/agent/runs/r1")["version"] == "1.0.0"
    assert server.get(f"/api/agents/{login}/agent/tasks/r1")["version"] == "1.0.0"
    (only,) = server.get(f"/api/agents/{login}/agent/versions")["versions"]
    assert (only["version"], only["runs"]) == ("1.0.0", 1)


def test_the_profile_shows_the_versions_section(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    path = two_releases(server)
    page = httpx.get(f"{server.url}/u/{path}", timeout=10)
    assert page.status_code == 200
    section = page.text[page.text.index('id="versions"'):]
    section = section[:section.index("</section>")]
    assert "1.1.0 against 1.0.0" in section
    assert "better, p = 0.0098" in section and "within noise" in section
    assert 'data-version="1.1.0"' in section and 'data-version="1.0.0"' in section


def test_the_badge_shows_a_versions_numbers(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    path = two_releases(server)
    whole = httpx.get(f"{server.url}/badge/{path}.svg", timeout=10)
    assert badge_texts(whole) == ["success", "90%"]
    older = httpx.get(f"{server.url}/badge/{path}.svg", params={"version": "1.0.0"}, timeout=10)
    assert older.status_code == 200 and badge_texts(older) == ["success 1.0.0", "80%"]
    runs = httpx.get(f"{server.url}/badge/{path}.svg?metric=runs&version=1.1.0", timeout=10)
    assert badge_texts(runs) == ["runs 1.1.0", "30"]
    unknown = httpx.get(f"{server.url}/badge/{path}.svg?version=9.9", timeout=10)
    assert unknown.status_code == 200 and badge_texts(unknown) == ["success 9.9", "no runs"]
    bad = httpx.get(f"{server.url}/badge/{path}.svg", params={"version": "1.0 beta"}, timeout=10)
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("bad version '1.0 beta'")
    assert bad.json()["detail"][0]["loc"] == ["query", "version"]


@pytest.mark.parametrize("version", ["1.0 beta", "a#b", "-leading", "v" * 65, ""])
def test_a_batch_with_a_bad_version_is_refused_whole(server_on_each_store: RunningServer,
                                                     version: str) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    response = post(server, batch("agent", task_events("r1"), version=version), key)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid ingest batch"
    assert body["detail"][0]["loc"] == ["version"]
    assert "a version is 1 to 64 characters" in body["detail"][0]["msg"]
    assert httpx.get(f"{server.url}/api/agents/{login}/agent", timeout=10).status_code == 404


def test_batches_without_a_version_count_for_the_agent_only(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    agent = seed_agent(server, runs=12, failures=2)
    answer = server.get(f"/api/agents/{agent.login}/{agent.slug}/versions")
    assert answer == {"versions": [], "version_count": 0, "comparison": None}
    page = httpx.get(f"{server.url}/u/{agent.login}/{agent.slug}", timeout=10)
    assert "No versions yet" in page.text
    assert server.get(f"/api/agents/{agent.login}/{agent.slug}")["runs"] == 12


def test_a_private_agents_versions_are_not_found(server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    path = two_releases(server)
    login, slug = path.split("/")
    from bench_core.domain.models import AgentRef

    server.store.agents.update_agent(AgentRef(login, slug), {"visibility": "private"})
    assert httpx.get(f"{server.url}/api/agents/{path}/versions", timeout=10).status_code == 404
    owner = server.create_key(login)
    mine = httpx.get(f"{server.url}/api/agents/{path}/versions",
                     headers={"X-Bench-Key": owner}, timeout=10)
    assert mine.status_code == 200 and len(mine.json()["versions"]) == 2
    badge = httpx.get(f"{server.url}/badge/{path}.svg?version=1.0.0", timeout=10)
    assert badge.status_code == 404 and badge_texts(badge) == ["bench", "not found"]
