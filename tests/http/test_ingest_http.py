"""`POST /ingest` over real HTTP against a real uvicorn server."""

from __future__ import annotations

import gzip
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from bench_core.domain.models import AgentRef

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events


def new_login() -> str:
    return "u" + uuid.uuid4().hex[:10]


def post(server: RunningServer, body: object, key: str | None, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    if key is not None:
        headers["X-Bench-Key"] = key
    return httpx.post(server.url + "/ingest", content=content, timeout=30,
                      headers={"Content-Type": "application/json", **headers})


@pytest.fixture
def owner(bench_server: RunningServer) -> tuple[str, str]:
    login = new_login()
    return login, bench_server.create_key(login)


def test_a_batch_is_accepted_and_the_profile_json_has_its_numbers(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    events = task_events("t1", cost=0.004, duration_ms=412) + task_events(
        "t2", status="failed", output="boom", duration_ms=100)
    r = post(bench_server, batch("my-agent", events, display_name="My Agent",
                                 model="llama", tools=["search"]), key)
    assert r.status_code == 200, r.text
    assert r.json() == {"accepted": 5, "duplicates": 0, "agent": f"{login}/my-agent",
                        "url": f"{bench_server.url}/u/{login}/my-agent"}
    profile = bench_server.get(f"/api/agents/{login}/my-agent")
    assert profile["display_name"] == "My Agent" and profile["tools"] == ["search"]
    assert (profile["runs"], profile["successes"], profile["failures"]) == (2, 1, 1)
    assert profile["success_rate"] == 0.5 and profile["cost_usd_total"] == 0.004
    assert profile["cost_usd_per_run"] == 0.002
    assert 380 < profile["latency_ms"]["p99"] < 450
    assert [t["task_id"] for t in profile["recent_tasks"]] == ["t2", "t1"]


def test_the_same_batch_twice_counts_once(bench_server: RunningServer,
                                          owner: tuple[str, str]) -> None:
    login, key = owner
    body = batch("dup", task_events("t1", cost=1.0))
    assert post(bench_server, body, key).json()["accepted"] == 3
    again = post(bench_server, body, key).json()
    assert (again["accepted"], again["duplicates"]) == (0, 3)
    assert bench_server.get(f"/api/agents/{login}/dup")["runs"] == 1


def test_eight_concurrent_senders_count_once(bench_server: RunningServer,
                                             owner: tuple[str, str]) -> None:
    login, key = owner
    body = batch("busy", [e for i in range(20) for e in task_events(f"t{i}", cost=0.5)])
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: post(bench_server, body, key).json(), range(8)))
    assert sum(r["accepted"] for r in results) == 60
    assert sum(r["duplicates"] for r in results) == 7 * 60
    profile = bench_server.get(f"/api/agents/{login}/busy")
    assert profile["runs"] == 20 and profile["cost_usd_total"] == 10.0


def test_gzip_bodies_are_accepted(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    body = gzip.compress(json.dumps(batch("zipped", task_events("t1"))).encode())
    r = post(bench_server, body, key, **{"Content-Encoding": "gzip"})
    assert r.status_code == 200 and r.json()["accepted"] == 2


def test_bearer_authorization_works_too(bench_server: RunningServer,
                                        owner: tuple[str, str]) -> None:
    _, key = owner
    r = post(bench_server, batch("bearer", [ev("custom")]), None,
             Authorization=f"Bearer {key}")
    assert r.status_code == 200


def test_oversized_values_are_truncated_not_refused(bench_server: RunningServer,
                                                    owner: tuple[str, str]) -> None:
    login, key = owner
    r = post(bench_server, batch("big", task_events("t1", output="y" * 200_000)), key)
    assert r.status_code == 200
    task = bench_server.get(f"/api/agents/{login}/big/tasks/t1", key)
    assert task["output"]["_bench_truncated"] is True
    assert task["output"]["original_bytes"] > 200_000


# ---- refused batches: a clear error, and nothing stored --------------------------------------


def assert_nothing_stored(server: RunningServer, login: str, slug: str) -> None:
    assert server.store.agents.get_agent(AgentRef(login, slug)) is None


@pytest.mark.parametrize("headers, status, message", [
    ({}, 401, "missing API key"),
    ({"X-Bench-Key": "bk_" + "x" * 40}, 401, "invalid or revoked"),
    ({"X-Bench-Key": "not-a-key"}, 401, "invalid or revoked"),
    ({"Authorization": "Basic abc"}, 401, "missing API key"),
])
def test_missing_and_unknown_keys_are_401(bench_server: RunningServer, headers: dict,
                                          status: int, message: str) -> None:
    r = httpx.post(bench_server.url + "/ingest", json=batch("nokey", [ev("custom")]),
                   headers=headers)
    assert r.status_code == status and message in r.json()["error"]


def test_a_revoked_key_is_401(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    record = bench_server.store.accounts.list_keys(login)[0]
    bench_server.store.accounts.revoke_key(record.key_hash, "2026-12-02T00:00:00.000Z")
    r = post(bench_server, batch("revoked", [ev("custom")]), key)
    assert r.status_code == 401
    assert_nothing_stored(bench_server, login, "revoked")


def test_an_agent_key_may_not_write_another_agent(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login, "mine")
    assert post(bench_server, batch("mine", [ev("custom")]), key).status_code == 200
    r = post(bench_server, batch("other", [ev("custom")]), key)
    assert r.status_code == 403 and "may not write" in r.json()["error"]
    assert_nothing_stored(bench_server, login, "other")


@pytest.mark.parametrize("body, status, loc", [
    (b"{not json", 400, None),
    (b"[]", 422, []),
    (json.dumps({"agent_slug": "bad", "events": {"a": 1}}).encode(), 422, ["events"]),
    (json.dumps(batch("bad", [ev("task.end", "t1", status="maybe")])).encode(), 422,
     ["events", 0, "status"]),
    (json.dumps(batch("bad", [ev("custom", ts="not a time")])).encode(), 422,
     ["events", 0, "ts"]),
    (json.dumps(batch("bad", [ev("task.start", "t1", duration_ms="x")])).encode(), 422,
     ["events", 0, "duration_ms"]),
    (json.dumps(batch("bad", [ev("task.end", "t1", status="success", cost_breakdown=[])])
                ).encode(), 422, ["events", 0, "cost_breakdown"]),
    (json.dumps({"events": []}).encode(), 422, ["agent_slug"]),
    (json.dumps(batch("bad", [*task_events("t1")[:1], ev("task.end", "t1", status="success",
                                                         cost_usd=-0.5)])).encode(), 422,
     ["events", 1, "cost_usd"]),
    (json.dumps(batch("bad", [ev("task.end", "t1", status="success", cost_usd=2e6)])).encode(),
     422, ["events", 0, "cost_usd"]),
    (json.dumps(batch("bad", [ev("task.end", "t1", status="success", duration_ms=4e9)])
                ).encode(), 422, ["events", 0, "duration_ms"]),
    (json.dumps(batch("bad", [ev("task.log", "t1", data={"label": "cost", "cost_usd": 1e20})])
                ).encode(), 422, ["events", 0, "data"]),
])
def test_malformed_batches_name_the_field_and_store_nothing(
        bench_server: RunningServer, owner: tuple[str, str], body: bytes, status: int,
        loc: list | None) -> None:
    login, key = owner
    good_then_bad = body
    r = post(bench_server, good_then_bad, key)
    assert r.status_code == status, r.text
    payload = r.json()
    assert payload["error"] and isinstance(payload["detail"], list)
    if loc:
        assert any(d["loc"][: len(loc)] == loc for d in payload["detail"]), payload
    assert_nothing_stored(bench_server, login, "bad")


def test_one_bad_event_rejects_the_whole_batch(bench_server: RunningServer,
                                               owner: tuple[str, str]) -> None:
    login, key = owner
    events = task_events("t1") + [ev("task.end", "t2", status="bogus")]
    r = post(bench_server, batch("half", events), key)
    assert r.status_code == 422
    assert_nothing_stored(bench_server, login, "half")


def test_too_many_events_is_413(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    r = post(bench_server, batch("many", [ev("custom") for _ in range(1001)]), key)
    assert r.status_code == 413 and "1000" in r.json()["error"]
    assert_nothing_stored(bench_server, login, "many")


def test_a_body_over_five_megabytes_is_413(bench_server: RunningServer,
                                            owner: tuple[str, str]) -> None:
    login, key = owner
    body = json.dumps(batch("huge", [ev("custom", data="z" * (6 * 1024 * 1024))])).encode()
    r = post(bench_server, body, key)
    assert r.status_code == 413
    assert_nothing_stored(bench_server, login, "huge")


def test_a_gzip_bomb_is_413(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    inner = json.dumps(batch("bomb", [ev("custom", data=" " * (8 * 1024 * 1024))])).encode()
    r = post(bench_server, gzip.compress(inner), key, **{"Content-Encoding": "gzip"})
    assert r.status_code == 413
    assert_nothing_stored(bench_server, login, "bomb")


def test_broken_gzip_and_unknown_encodings_are_400(bench_server: RunningServer,
                                                   owner: tuple[str, str]) -> None:
    _, key = owner
    r = post(bench_server, b"not gzip", key, **{"Content-Encoding": "gzip"})
    assert r.status_code == 400 and "gzip" in r.json()["error"]
    r = post(bench_server, b"{}", key, **{"Content-Encoding": "br"})
    assert r.status_code == 400 and "Content-Encoding" in r.json()["error"]


def test_every_response_carries_a_request_id(bench_server: RunningServer) -> None:
    r = httpx.get(bench_server.url + "/healthz", headers={"X-Request-Id": "abc123"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "abc123"
    assert r.json()["status"] == "ok"
    assert httpx.get(bench_server.url + "/healthz").headers["x-request-id"]
