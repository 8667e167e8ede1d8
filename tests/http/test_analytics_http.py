"""An agent's analytics over time over real HTTP: batches sent to `/ingest` land in the JSON
twin's periods on each store (runs, rates, cost, tokens, latency, models, by version), the
profile and the owner's dashboard draw them, a private agent is a 404 to visitors, a visitor's
answer holds no content, and a bad parameter is a 400 naming it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from bench_core.domain.models import iso
from bench_core.domain.privacy import HIDDEN

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.surfaces_data import Seeded, fetch, new_login, post, set_agent, show_content

SECRET = "zebra-secret-" + uuid.uuid4().hex[:6]


def runs_an_hour_ago(server: RunningServer, n: int, failures: int, tag: str
                     ) -> list[dict[str, Any]]:
    """`n` runs ended an hour ago by the server's clock (the last `failures` failed), each
    with a model call and a tag; their content names `SECRET`."""
    start = server.store.clock.now() - timedelta(hours=1)
    events: list[dict[str, Any]] = []
    for i in range(n):
        task_id = f"r{i}-{uuid.uuid4().hex[:6]}"
        first, *rest = task_events(task_id, status="failed" if i >= n - failures else "success",
                                   cost=0.01, duration_ms=200 + i, input={"q": SECRET},
                                   output=SECRET)
        call = ev("task.log", task_id, data={"label": "evidence", "provider": "openai",
                                             "model": "gpt-4o", "input_tokens": 100,
                                             "output_tokens": 50})
        rest[-1]["data"] = {"tags": [tag]}
        events += [first, call, *rest]
    return [{**e, "ts": iso(start + timedelta(milliseconds=k))} for k, e in enumerate(events)]


def seeded(server: RunningServer) -> tuple[str, str, str]:
    """An agent of 10 runs (2 failed) of version 1.0.0 tagged with a secret tag; its path,
    key and tag."""
    login, tag = new_login(), "tag-" + SECRET
    key = server.create_key(login)
    response = post(server, batch("agent", runs_an_hour_ago(server, 10, 2, tag),
                                  version="1.0.0"), key)
    assert response.status_code == 200, response.text
    show_content(server, login, "agent")
    return f"{login}/agent", key, tag


def test_runs_sent_land_in_their_period_on_each_store(server_on_each_store: RunningServer
                                                      ) -> None:
    server = server_on_each_store
    path, key, tag = seeded(server)
    day = server.get(f"/api/agents/{path}/analytics", range="24h")
    assert (day["range"], day["grain"], len(day["buckets"])) == ("24h", "hour", 24)
    (hour,) = [b for b in day["buckets"] if b["runs"]]
    assert hour["start"] == iso(server.store.clock.now() - timedelta(hours=1))[:13]
    assert (hour["runs"], hour["successes"], hour["failures"]) == (10, 8, 2)
    assert hour["success_rate"] == pytest.approx(0.8) and hour["error_rate"] == pytest.approx(0.2)
    low, high = hour["success_rate_ci95"]
    assert low < 0.8 < high
    assert hour["cost_usd_per_run"] == pytest.approx(0.01)
    assert hour["cost_usd_per_success"] == pytest.approx(0.1 / 8), "what a success costs"
    assert hour["cost_usd_per_successful_run"] == pytest.approx(0.01)
    assert hour["cost_source"] == "owner-reported"
    assert (hour["input_tokens"], hour["output_tokens"]) == (1000, 500)
    assert hour["latency_ms"]["p50"] is not None and hour["latency_ms"]["p95"] is not None
    (model,) = hour["models"]
    assert (model["provider"], model["model"], model["calls"]) == ("openai", "gpt-4o", 10)
    for span, grain, count in (("30d", "day", 30), ("90d", "day", 90), ("1y", "week", None)):
        read = server.get(f"/api/agents/{path}/analytics", range=span)
        assert read["grain"] == grain and read["total"]["runs"] == 10
        assert count is None or len(read["buckets"]) == count
    assert server.get(f"/api/agents/{path}/analytics", version="1.0.0")["total"]["runs"] == 10
    assert server.get(f"/api/agents/{path}/analytics", version="2.0.0")["total"]["runs"] == 0
    assert server.get(f"/api/agents/{path}/analytics", key, tag=tag)["total"]["runs"] == 10
    assert server.get(f"/api/agents/{path}/analytics", key, tag="other")["total"]["runs"] == 0


def test_a_visitor_sees_numbers_and_no_content(bench_server: RunningServer) -> None:
    path, key, tag = seeded(bench_server)
    answer = httpx.get(f"{bench_server.url}/api/agents/{path}/analytics", timeout=10)
    assert answer.status_code == 200 and answer.json()["total"]["runs"] == 10
    assert SECRET not in answer.text, "no input, output or tag"
    refused = httpx.get(f"{bench_server.url}/api/agents/{path}/analytics",
                        params={"tag": tag}, timeout=10)
    assert refused.status_code == 400 and "tag" in refused.json()["error"]
    page = fetch(bench_server, f"/u/{path}?range=24h")
    assert page.status_code == 200
    section = page.text[page.text.index('id="analytics"'):]
    section = section[:section.index("</section>")]
    assert SECRET not in section and 'name="tag"' not in section, "no tag filter for visitors"
    assert 'data-chart="runs"' in section and "<svg" in section and "gpt-4o" in section


def test_a_private_agents_analytics_are_its_owners_alone(bench_server: RunningServer) -> None:
    path, key, _ = seeded(bench_server)
    login, slug = path.split("/")
    set_agent(bench_server, Seeded(login, slug, key), visibility="private")
    for address in (f"/api/agents/{path}/analytics", f"/u/{path}?range=24h"):
        assert fetch(bench_server, address).status_code == 404
    assert bench_server.get(f"/api/agents/{path}/analytics", key)["total"]["runs"] == 10
    assert fetch(bench_server, f"/u/{path}?range=24h", key).status_code == 200


@pytest.mark.parametrize(("params", "named"), [
    ({"range": "7x"}, "range"), ({"version": "not a version!"}, "version"),
    ({"version": "1.0.0", "tag": "x"}, "tag"), ({"range": "24h", "tag": "x"}, "range")])
def test_a_bad_parameter_is_a_400_naming_it(bench_server: RunningServer, params: dict[str, str],
                                            named: str) -> None:
    path, key, _ = seeded(bench_server)
    answer = httpx.get(f"{bench_server.url}/api/agents/{path}/analytics", params=params,
                       headers={"X-Bench-Key": key}, timeout=10)
    assert answer.status_code == 400, "the owner's own agent, so a tag may be asked for"
    body = answer.json()
    assert body["error"].startswith(f"{named}:")
    assert body["detail"][0]["loc"] == ["query", named]
    assert fetch(bench_server, f"/u/{path}", key).status_code == 200
    assert fetch(bench_server, f"/u/{path}?{urlencode(params)}", key).status_code == 400


def test_error_rate_by_failure_cluster_shows_numbers_to_all_and_labels_to_the_owner(
        server_on_each_store: RunningServer) -> None:
    """The cluster step counts the runs it assigns where they ended; the JSON twin and the
    profile's chart give each cluster's id and share of runs to anyone, its label (made of
    the failures' content, hidden by default) to the owner alone, on each store."""
    from bench_core.clustering.workflow import cluster_agent

    server = server_on_each_store

    login = new_login()
    key = server.create_key(login)
    assert post(server, batch("agent", runs_an_hour_ago(server, 10, 4, "t")),
                key).status_code == 200
    cluster_agent(server.services, {"agent": f"{login}/agent"})
    path = f"/api/agents/{login}/agent/analytics"
    visitor = httpx.get(server.url + path, params={"range": "24h"}, timeout=10)
    assert SECRET not in visitor.text
    (cluster,) = visitor.json()["failure_clusters"]
    assert cluster == {"id": "c1", "label": HIDDEN, "current": True, "failures": 4,
                       "error_rate": pytest.approx(0.4)}
    (hour,) = [b for b in visitor.json()["buckets"] if b["runs"]]
    assert hour["cluster_failures"] == {"c1": 4}
    (owned,) = server.get(path, key, range="24h")["failure_clusters"]
    assert SECRET.split("-")[0] in owned["label"], "the owner sees what the cluster says"
    assert server.get(path, key, version="2.0.0")["failure_clusters"] is None, \
        "counted for the agent as a whole"
    section = fetch(server, f"/u/{login}/agent?range=24h").text
    section = section[section.index('id="chart-clusters"'):]
    section = section[:section.index("</figure>")]
    assert "<svg" in section and 'data-cluster="c1"' in section and "40% of runs" in section
    assert SECRET not in section
    owners = fetch(server, f"/u/{login}/agent?range=24h", key).text
    assert SECRET.split("-")[0] in owners[owners.index('id="chart-clusters"'):]
