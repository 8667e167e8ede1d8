"""Authorized reuse over real HTTP: a real Bench server (allowed, by the test-only setting, to
call loopback) calling a real agent endpoint on 127.0.0.1 -- publishing, deny by default,
grants, quotas under concurrency, outbound safety, signatures, and the record on both sides."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import bench
import httpx
import pytest
from bench_core.domain.models import AgentRef
from bench_core.domain.privacy import HIDDEN
from bench_core.reuse.capability import public_capability

from tests.conftest import RunningServer
from tests.http.accounts_support import Browser, new_login
from tests.http.reuse_support import (
    AgentEndpoint,
    card,
    published,
    resolver_with,
    serve_bench,
    serve_endpoint,
)
from tests.http.test_live import next_events, run, watch


@pytest.fixture(scope="module")
def endpoint() -> Iterator[AgentEndpoint]:
    yield from serve_endpoint()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from serve_bench(tmp_path_factory.mktemp("reuse"))


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def call(server: RunningServer, key: str, owner: str, slug: str = "helper",
         body: Any = None) -> httpx.Response:
    return httpx.post(f"{server.url}/api/agents/{owner}/{slug}/invoke",
                      headers={"X-Bench-Key": key},
                      json={"input": {"q": "hi"}} if body is None else body, timeout=30)


def grant(server: RunningServer, owner_key: str, owner: str, caller: str, slug: str = "helper",
          **quota: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/api/agents/{owner}/{slug}/grants",
                      headers={"X-Bench-Key": owner_key},
                      json={"caller": caller, "calls_per_day": 100, **quota}, timeout=10)


def granted_caller(server: RunningServer, owner_key: str, owner: str, **quota: Any
                   ) -> tuple[str, str]:
    """A new caller granted calls to `owner`'s helper (`grant`'s quota unless given), and its key."""
    caller = new_login()
    assert grant(server, owner_key, owner, caller, **quota).status_code == 201
    return caller, server.create_key(caller)


# ---- deny by default, grants, revocation, expiry ---------------------------------------------


def test_calls_are_denied_by_default_allowed_by_a_grant_and_denied_again_once_revoked(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller = new_login()
    caller_key = server.create_key(caller)
    denied = call(server, caller_key, owner)
    assert denied.status_code == 403
    assert denied.json()["error"] == (f"@{owner} has not granted @{caller} calls to {slug}; "
                                      "ask the owner for a grant")
    created = grant(server, owner_key, owner, caller.upper(), calls_per_minute=10)
    assert created.status_code == 201, created.text
    assert created.json() | {"created_at": None} == {
        "caller": caller, "calls_per_day": 100, "calls_per_minute": 10, "expires_at": None,
        "created_at": None}
    allowed = call(server, caller_key, owner, body={"input": {"q": "hi"}, "skill": "qa"})
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["output"] == {"caller": caller, "echo": {"q": "hi"}, "skill": "qa"}
    listed = httpx.get(f"{server.url}/api/agents/{owner}/{slug}/grants",
                       headers={"X-Bench-Key": owner_key}).json()
    assert [g["caller"] for g in listed["grants"]] == [caller]
    revoked = httpx.delete(f"{server.url}/api/agents/{owner}/{slug}/grants/{caller}",
                           headers={"X-Bench-Key": owner_key})
    assert revoked.json() == {"revoked": caller}
    assert call(server, caller_key, owner).status_code == 403
    again = httpx.delete(f"{server.url}/api/agents/{owner}/{slug}/grants/{caller}",
                         headers={"X-Bench-Key": owner_key})
    assert again.status_code == 404


def test_an_expired_grant_is_refused_and_no_grant_may_start_expired(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller = new_login()
    caller_key = server.create_key(caller)
    past = grant(server, owner_key, owner, caller, expires_at="2020-01-01T00:00:00Z")
    assert past.status_code == 422
    assert past.json()["detail"][0]["loc"] == ["body", "expires_at"]
    assert grant(server, owner_key, owner, caller,
                 expires_at="2099-01-01T00:00:00Z").status_code == 201
    assert call(server, caller_key, owner).status_code == 200
    stored = server.store.reuse.get_invocation_grant(AgentRef(owner, slug), caller)
    assert stored is not None and stored.expires_at == "2099-01-01T00:00:00.000Z"
    server.store.reuse.put_invocation_grant(replace(stored, expires_at="2021-06-01T00:00:00.000Z"))
    expired = call(server, caller_key, owner)
    assert expired.status_code == 403
    assert "expired at 2021-06-01T00:00:00.000Z" in expired.json()["error"]


def test_a_grant_to_everyone_lets_every_account_call_and_a_named_grant_wins(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, _ = published(server, endpoint)
    assert grant(server, owner_key, owner, "*").status_code == 201
    for _ in range(2):
        assert call(server, server.create_key(new_login()), owner).status_code == 200
    limited = new_login()
    limited_key = server.create_key(limited)
    assert grant(server, owner_key, owner, limited, calls_per_day=1).status_code == 201
    assert call(server, limited_key, owner).status_code == 200
    assert call(server, limited_key, owner).status_code == 429, "its own grant, not *'s"


def test_the_owner_calls_freely_and_a_callers_agent_key_calls_as_the_caller(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, _ = published(server, endpoint)
    assert call(server, owner_key, owner).json()["output"]["caller"] == owner
    caller = new_login()
    agent_key = server.create_key(caller, "their-agent")
    assert grant(server, owner_key, owner, caller).status_code == 201
    assert call(server, agent_key, owner).json()["output"]["caller"] == caller


def test_only_the_owner_manages_the_card_and_grants(server: RunningServer,
                                                    endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    stranger = server.create_key(new_login())
    own_agent_key = server.create_key(owner, slug)
    base = f"{server.url}/api/agents/{owner}/{slug}"
    for key, status in ((stranger, 404), (own_agent_key, 403)):
        headers = {"X-Bench-Key": key}
        assert httpx.get(base + "/grants", headers=headers).status_code == status
        assert httpx.post(base + "/grants", headers=headers,
                          json={"caller": "x", "calls_per_day": 1}).status_code == status
        assert httpx.put(base + "/capability", headers=headers,
                         json=card(endpoint.url + "/echo")).status_code == status
        assert httpx.post(base + "/capability/secret", headers=headers).status_code == status
    assert httpx.get(base + "/grants").status_code == 401


# ---- quotas --------------------------------------------------------------------------------


def test_the_daily_quota_is_exact_under_twenty_concurrent_calls(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller, caller_key = granted_caller(server, owner_key, owner, calls_per_day=7)
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda _: call(server, caller_key, owner), range(20)))
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [200] * 7 + [429] * 13
    refused = next(r for r in replies if r.status_code == 429)
    assert 1 <= int(refused.headers["retry-after"]) <= 86400
    assert refused.json()["error"].startswith(f"quota used up: 7 calls per day to {owner}/{slug}")
    agent = server.get(f"/api/agents/{owner}/{slug}")
    assert agent["runs"] == 7 and agent["successes"] == 7
    usage = server.get("/api/usage", caller_key)
    assert usage["login"] == caller and len(usage["usage"]) == 7


def test_a_per_minute_quota_answers_429_with_retry_after_within_the_minute(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, _ = published(server, endpoint)
    caller, caller_key = granted_caller(server, owner_key, owner, calls_per_minute=1)
    assert call(server, caller_key, owner).status_code == 200
    refused = call(server, caller_key, owner)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["detail"][0]["loc"] == ["quota", "minute"]


# ---- the record on both sides, and the signature -------------------------------------------


def test_a_call_is_recorded_as_a_task_of_the_agent_and_as_usage_of_the_caller(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller, caller_key = granted_caller(server, owner_key, owner)
    answer = call(server, caller_key, owner, body={"input": {"q": "what?"}, "skill": "qa"}).json()
    task = server.get(f"/api/agents/{owner}/{slug}/tasks/{answer['call_id']}")
    assert (task["name"], task["status"], task["input"]) == ("invoked", "success", {"q": "what?"})
    assert task["output"] == answer["output"]
    assert task["metadata"] == {"invoked_by": caller, "via": "bench", "skill": "qa"}
    assert task["duration_ms"] == answer["duration_ms"]
    (usage,) = server.get("/api/usage", caller_key)["usage"]
    assert usage | {"at": None, "duration_ms": None, "expires_at": None} == {
        "at": None, "call_id": answer["call_id"], "agent": f"{owner}/{slug}",
        "status": "success", "http_status": 200, "duration_ms": None, "error": None,
        "expires_at": None}
    kept = parse_iso(usage["expires_at"]) - parse_iso(usage["at"])
    assert kept == timedelta(days=server.services.settings.limits.event_retention_days)
    assert server.get("/api/usage", owner_key)["usage"] == [], "usage is the caller's"


@pytest.mark.parametrize(("path", "status"), [("/echo", "success"), ("/fail", "failed")])
def test_a_call_reaches_the_owners_live_feed_as_an_ingested_task_does(
        server: RunningServer, endpoint: AgentEndpoint, path: str, status: str) -> None:
    browser = Browser(server)
    owner, owner_key, slug = published(server, endpoint, path, owner=browser.sign_in())
    caller, caller_key = granted_caller(server, owner_key, owner)

    async def test() -> None:
        async with watch(server, f"{owner}/{slug}", browser) as feed:
            reply = await asyncio.to_thread(call, server, caller_key, owner)
            assert reply.status_code == (200 if status == "success" else 502), reply.text
            events = (await next_events(feed))["events"]
            assert [e["kind"] for e in events] == ["task.start", "task.end"]
            assert (events[1]["name"], events[1]["status"]) == ("invoked", status)
            (usage,) = server.get("/api/usage", caller_key)["usage"]
            assert {e["task_id"] for e in events} == {usage["call_id"]}

    run(test)


def test_the_agent_can_verify_that_a_call_came_through_bench_and_from_whom(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller = new_login()
    grant(server, owner_key, owner, caller)
    reply = call(server, server.create_key(caller), owner)
    seen = next(r for r in reversed(endpoint.requests)
                if r["headers"].get("X-Bench-Agent") == f"{owner}/{slug}")
    secret = endpoint.secrets[f"{owner}/{slug}"]
    headers, body = seen["headers"], seen["body"]
    assert headers["X-Bench-Caller"] == caller and headers["X-Bench-Call"] == reply.json()["call_id"]
    assert bench.verify_invocation(secret, headers, body, refuse_replays=False) == caller
    assert bench.verify_invocation(secret, headers, body + b" ") is None
    assert bench.verify_invocation(secret, {**headers, "X-Bench-Caller": "mallory"}, body) is None
    assert bench.verify_invocation("bis_wrong", headers, body) is None
    assert bench.verify_invocation(secret, headers, body,
                                   now=int(headers["X-Bench-Timestamp"]) + 3600) is None
    rotated = httpx.post(f"{server.url}/api/agents/{owner}/{slug}/capability/secret",
                         headers={"X-Bench-Key": owner_key}).json()["invocation_secret"]
    assert rotated != secret and rotated.startswith("bis_")
    assert call(server, server.create_key(caller), owner).status_code == 502, \
        "the endpoint still checks the old secret, so it refuses (401) the newly signed call"


# ---- the endpoint failing ------------------------------------------------------------------


@pytest.mark.parametrize(("path", "status", "error"), [
    ("/fail", 502, "the agent answered HTTP 500"),
    ("/slow", 504, "the agent did not answer"),
    ("/not-json", 502, "the agent's answer is not valid JSON"),
    ("/big", 502, "the agent's endpoint failed: the answer is over 65536 bytes"),
    ("/to-private", 502, "the agent's endpoint is refused: Bench calls endpoints on public "
                         "addresses only"),
    ("/to-metadata", 502, "the agent's endpoint is refused: Bench calls endpoints on public"),
    ("/missing", 502, "the agent answered HTTP 404"),
])
def test_endpoint_failures_are_502_or_504_and_still_recorded(
        server: RunningServer, endpoint: AgentEndpoint, path: str, status: int,
        error: str) -> None:
    owner, owner_key, slug = published(server, endpoint, path)
    caller, caller_key = granted_caller(server, owner_key, owner)
    reply = call(server, caller_key, owner)
    assert reply.status_code == status, reply.text
    assert error in reply.json()["error"]
    if path == "/fail":
        assert reply.json()["detail"] == [{"loc": ["agent"], "status": 500,
                                           "body": "kaboom: the model is down"}]
    (usage,) = server.get("/api/usage", caller_key)["usage"]
    assert (usage["status"], usage["http_status"]) == ("failed", status)
    assert error in usage["error"]
    task = server.get(f"/api/agents/{owner}/{slug}/tasks/{usage['call_id']}")
    assert task["status"] == "failed" and error in task["output"]
    assert server.get(f"/api/agents/{owner}/{slug}")["failures"] == 1


def test_answers_in_text_and_redirects_on_loopback_are_taken(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, _ = published(server, endpoint, "/text")
    assert call(server, owner_key, owner).json()["output"] == "a plain answer"
    owner, owner_key, _ = published(server, endpoint, "/to-get")
    assert call(server, owner_key, owner).json()["output"] == {"via": "GET"}, "303: a GET"
    owner, owner_key, _ = published(server, endpoint, "/to-echo")
    assert call(server, owner_key, owner).json()["output"]["caller"] == owner, \
        "a 307 keeps the body and its signature"


def test_a_name_that_rebinds_to_a_private_address_is_refused_at_call_time(
        server: RunningServer, endpoint: AgentEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    names = {"agent.invalid": ["127.0.0.1"]}
    monkeypatch.setattr(socket, "getaddrinfo", resolver_with(names))
    port = endpoint.url.rsplit(":", 1)[1]
    owner, owner_key, _ = published(server, endpoint, slug="rebind",
                                    url=f"http://agent.invalid:{port}/echo")
    assert call(server, owner_key, owner, "rebind").status_code == 200
    names["agent.invalid"] = ["10.0.0.5"]
    refused = call(server, owner_key, owner, "rebind")
    assert refused.status_code == 502
    assert refused.json()["error"] == ("the agent's endpoint is refused: Bench calls endpoints "
                                       "on public addresses only")


# ---- publishing ------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://10.0.0.1/call", "https://169.254.169.254/latest",
                                 "https://[fd00:ec2::254]/", "https://[::ffff:10.0.0.1]/",
                                 "https://100.64.0.1/", "https://224.0.0.1/", "ftp://127.0.0.1/"])
def test_publishing_refuses_endpoints_bench_may_not_call(server: RunningServer,
                                                        url: str) -> None:
    owner = new_login()
    key = server.create_key(owner)
    httpx.post(f"{server.url}/ingest", headers={"X-Bench-Key": key},
               json={"agent_slug": "a", "events": []})
    r = httpx.put(f"{server.url}/api/agents/{owner}/a/capability", headers={"X-Bench-Key": key},
                  json=card(url))
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "invocation", "url"]
    assert r.json()["error"].startswith("invocation.url is refused: ")
    assert server.store.reuse.get_capability(AgentRef(owner, "a")) is None


@pytest.mark.parametrize(("change", "loc"), [
    ({"capability": {"skills": []}}, ["body", "capability", "description"]),
    ({"invocation": {"mode": "http"}}, ["body", "invocation"]),
    ({"invocation": {"mode": "grpc", "url": "https://x.example"}}, ["body", "invocation", "mode"]),
    ({"capability": {"description": "d", "skils": []}}, ["body", "capability", "skils"]),
    ({"capability": {"description": "d", "skills": [{"id": "a b", "name": "x"}]}},
     ["body", "capability", "skills", 0, "id"]),
    ({"capability": {"description": "d", "skills": [{"id": "a", "name": "x"},
                                                    {"id": "a", "name": "y"}]}},
     ["body", "capability", "skills"]),
    ({"capability": {"description": "d", "skills": [{"id": "a", "name": "x",
                                                     "input_modes": ["json"]}]}},
     ["body", "capability", "skills", 0, "input_modes", 0]),
    ({"owner": "me"}, ["body", "owner"]),
])
def test_a_bad_card_is_a_422_naming_the_field(server: RunningServer, endpoint: AgentEndpoint,
                                              change: dict[str, Any], loc: list[Any]) -> None:
    owner, key, slug = published(server, endpoint)
    before = server.store.reuse.get_capability(AgentRef(owner, slug))
    r = httpx.put(f"{server.url}/api/agents/{owner}/{slug}/capability",
                  headers={"X-Bench-Key": key}, json={**card(endpoint.url + "/echo"), **change})
    assert r.status_code == 422, r.text
    assert loc in [d["loc"] for d in r.json()["detail"]]
    assert server.store.reuse.get_capability(AgentRef(owner, slug)) == before


def test_a_card_over_64_kb_is_refused(server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, key, slug = published(server, endpoint)
    examples = [{"text": "x" * 8000} for _ in range(10)]
    huge = card(endpoint.url + "/echo")
    huge["capability"]["skills"] = [{**huge["capability"]["skills"][0], "id": f"s{i}",
                                     "examples": examples} for i in range(2)]
    r = httpx.put(f"{server.url}/api/agents/{owner}/{slug}/capability",
                  headers={"X-Bench-Key": key}, json=huge)
    assert r.status_code == 413 and r.json()["detail"][0]["loc"] == ["body", "capability"]


def test_the_secret_is_shown_on_first_publish_only(server: RunningServer,
                                                   endpoint: AgentEndpoint) -> None:
    owner, key, slug = published(server, endpoint)
    again = httpx.put(f"{server.url}/api/agents/{owner}/{slug}/capability",
                      headers={"X-Bench-Key": key}, json=card(None))
    assert again.status_code == 200 and "invocation_secret" not in again.json()
    assert again.json()["callable"] is False
    shown = httpx.get(f"{server.url}/api/agents/{owner}/{slug}/capability",
                      headers={"X-Bench-Key": key}).json()
    assert "invocation_secret" not in json.dumps(shown)
    caller = new_login()
    grant(server, key, owner, caller)
    refused = call(server, server.create_key(caller), owner)
    assert refused.status_code == 403 and "published no invocation endpoint" in refused.json()["error"]


# ---- privacy ---------------------------------------------------------------------------------


def test_a_public_card_is_shown_to_everyone_without_its_endpoint(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, key, slug = published(server, endpoint)
    shown = httpx.get(f"{server.url}/api/agents/{owner}/{slug}/capability").json()
    assert shown["capability"]["skills"][0]["id"] == "qa" and shown["callable"] is True
    assert shown["invocation"] == {"mode": "http"}
    assert endpoint.url not in json.dumps(shown)
    own = httpx.get(f"{server.url}/api/agents/{owner}/{slug}/capability",
                    headers={"X-Bench-Key": key}).json()
    assert own["invocation"]["url"] == endpoint.url + "/echo"
    page = httpx.get(f"{server.url}/u/{owner}/{slug}")
    assert "What it can do" in page.text and "Question answering" in page.text
    assert endpoint.url not in page.text


def test_a_private_agents_card_and_calls_exist_for_nobody_but_its_owner(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, key, slug = published(server, endpoint, visibility="private")
    caller, caller_key = granted_caller(server, key, owner)
    path = f"{server.url}/api/agents/{owner}/{slug}/capability"
    assert httpx.get(path).status_code == 404
    assert httpx.get(path, headers={"X-Bench-Key": caller_key}).status_code == 404
    assert httpx.get(path, headers={"X-Bench-Key": key}).status_code == 200
    assert call(server, caller_key, owner).status_code == 404
    assert httpx.get(f"{server.url}/u/{owner}/{slug}").status_code == 404
    agent = server.store.agents.get_agent(AgentRef(owner, slug))
    assert agent is not None and public_capability(server.store, agent) is None
    owner_page = httpx.get(f"{server.url}/u/{owner}/{slug}", headers={"X-Bench-Key": key})
    assert "What it can do" in owner_page.text


# ---- bad calls -------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "status", "loc"), [
    ({}, 422, ["body", "input"]),
    ({"input": 1, "extra": 2}, 422, ["body", "extra"]),
    ({"input": 1, "skill": "no spaces"}, 422, ["body", "skill"]),
    ({"input": "x" * 300_000}, 413, None),
])
def test_a_bad_call_is_refused_before_it_counts(server: RunningServer, endpoint: AgentEndpoint,
                                                body: dict[str, Any], status: int,
                                                loc: list[str] | None) -> None:
    owner, owner_key, _ = published(server, endpoint)
    caller, caller_key = granted_caller(server, owner_key, owner, calls_per_day=1)
    reply = call(server, caller_key, owner, body=body)
    assert reply.status_code == status, reply.text
    if loc:
        assert reply.json()["detail"][0]["loc"] == loc
    assert call(server, caller_key, owner).status_code == 200, "the refused call did not count"


def test_calling_an_unknown_or_unpublished_agent(server: RunningServer) -> None:
    key = server.create_key(new_login())
    assert call(server, key, "nobody", "nothing").status_code == 404
    owner = new_login()
    owner_key = server.create_key(owner)
    httpx.post(f"{server.url}/ingest", headers={"X-Bench-Key": owner_key},
               json={"agent_slug": "quiet", "events": []})
    assert call(server, key, owner, "quiet").status_code == 403
    assert httpx.post(f"{server.url}/api/agents/{owner}/quiet/invoke",
                      json={"input": 1}).status_code == 401


# ---- the dashboard -----------------------------------------------------------------------------


def test_the_owner_manages_grants_from_the_dashboard(server: RunningServer,
                                                     endpoint: AgentEndpoint) -> None:
    browser = Browser(server)
    owner = browser.sign_in()
    owner, _, slug = published(server, endpoint, owner=owner)
    page = f"/dashboard/agents/{slug}/reuse"
    shown = browser.get(page)
    assert shown.status_code == 200 and "Nobody may call this agent" in shown.text
    assert endpoint.url + "/echo" in shown.text
    assert "/reuse" in browser.get(f"/dashboard/agents/{slug}").text
    caller = new_login()
    done = browser.post(page + "/grants", {"caller": caller, "calls_per_day": "5",
                                           "calls_per_minute": "", "expires_at": "2099-01-31"},
                        token_from=page)
    assert done.status_code == 303 and done.headers["location"] == page
    (stored,) = server.store.reuse.invocation_grants(AgentRef(owner, slug))
    assert (stored.caller, stored.calls_per_day, stored.calls_per_minute, stored.expires_at) == (
        caller, 5, None, "2099-01-31T00:00:00.000Z")
    assert f'data-grant="{caller}"' in browser.get(page).text
    bad = browser.post(page + "/grants", {"caller": "", "calls_per_day": "x"}, token_from=page)
    assert bad.status_code == 422 and "calls_per_day" in bad.text
    forged = browser.post(page + "/revoke", {"caller": caller}, token_from=None)
    assert forged.status_code == 403
    assert browser.post(page + "/revoke", {"caller": caller}, token_from=page).status_code == 303
    assert server.store.reuse.invocation_grants(AgentRef(owner, slug)) == []
    assert Browser(server).get(page).status_code == 303, "signed out: off to sign in"


def test_the_owner_rotates_the_invocation_secret_from_the_dashboard_and_sees_it_once(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    browser = Browser(server)
    owner, _, slug = published(server, endpoint, owner=browser.sign_in())
    ref = AgentRef(owner, slug)
    first = endpoint.secrets[f"{owner}/{slug}"]
    page = f"/dashboard/agents/{slug}/reuse"
    shown = browser.get(page).text
    assert f'action="{page}/secret"' in shown and "data-secret" not in shown
    assert first not in shown
    forged = browser.post(page + "/secret", {}, token_from=None)
    assert forged.status_code == 403
    assert server.store.reuse.get_capability(ref).secret == first
    rotated = browser.post(page + "/secret", {}, token_from=page)
    assert rotated.status_code == 200, rotated.text
    assert "no-store" in rotated.headers["cache-control"]
    found = re.search(r"data-secret>(bis_[A-Za-z0-9_-]+)<", rotated.text)
    assert found, "the new secret is shown"
    assert found.group(1) != first and server.store.reuse.get_capability(ref).secret == found.group(1)
    assert found.group(1) not in browser.get(page).text, "shown once"
    stranger = Browser(server)
    stranger.sign_in()
    assert stranger.post(page + "/secret", {}, token_from="/dashboard").status_code == 404
    assert server.store.reuse.get_capability(ref).secret == found.group(1)


def test_usage_needs_a_key(server: RunningServer) -> None:
    assert httpx.get(f"{server.url}/api/usage").status_code == 401
    assert httpx.get(f"{server.url}/api/usage", params={"limit": 0},
                     headers={"X-Bench-Key": server.create_key(new_login())}).status_code == 422



# ---- the signature: call id, path, replays; redirects; what is public -------------------------


def seen_request(endpoint: AgentEndpoint, call_id: str) -> dict[str, Any]:
    return next(r for r in endpoint.requests if r["headers"].get("X-Bench-Call") == call_id)


def test_the_signature_covers_call_id_and_path_and_a_replay_is_refused(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    reply = call(server, owner_key, owner)
    assert reply.status_code == 200, reply.text
    seen = seen_request(endpoint, reply.json()["call_id"])
    secret, headers, body = endpoint.secrets[f"{owner}/{slug}"], seen["headers"], seen["body"]
    assert headers["X-Bench-Path"] == "/echo" and headers["X-Bench-Signature"].startswith("v2=")
    assert bench.verify_invocation(secret, headers, body) is None, "the endpoint saw it: a replay"
    assert bench.verify_invocation(secret, headers, body, path="/echo",
                                   refuse_replays=False) == owner
    assert bench.verify_invocation(secret, headers, body, path="/admin",
                                   refuse_replays=False) is None
    for name, value in (("X-Bench-Call", "f" * 32), ("X-Bench-Path", "/admin")):
        assert bench.verify_invocation(secret, {**headers, name: value}, body) is None


def test_a_receiver_still_takes_an_older_servers_v1_signature() -> None:
    import hashlib
    import hmac
    import time

    stamp = str(int(time.time()))
    message = f"v1\n{stamp}\nalice\nbob/agent\n".encode() + b"{}"
    headers = {"X-Bench-Timestamp": stamp, "X-Bench-Caller": "alice", "X-Bench-Agent": "bob/agent",
               "X-Bench-Signature": "v1=" + hmac.new(b"bis_s", message, hashlib.sha256).hexdigest()}
    assert bench.verify_invocation("bis_s", headers, b"{}") == "alice"
    assert bench.verify_invocation("bis_s", headers, b"{ }") is None


def test_signature_headers_go_to_the_endpoints_own_host_only(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, _ = published(server, endpoint, "/to-other-host")
    before = len(endpoint.requests)
    assert call(server, owner_key, owner).status_code == 502, "the other host cannot verify it"
    first, redirected = endpoint.requests[before:before + 2]
    assert first["path"] == "/to-other-host" and "X-Bench-Signature" in first["headers"]
    assert redirected["headers"]["Host"].startswith("localhost:")
    assert not [h for h in redirected["headers"] if h.lower().startswith("x-bench-")]
    owner, owner_key, _ = published(server, endpoint, "/to-echo")
    reply = call(server, owner_key, owner)
    assert seen_request(endpoint, reply.json()["call_id"])["headers"]["X-Bench-Path"] == "/to-echo"
    assert reply.json()["output"]["caller"] == owner, "same host: signed again for /echo"


def test_a_refusal_names_no_address_and_the_invoked_task_keeps_the_hide_settings(
        server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint, "/to-private")
    reply = call(server, owner_key, owner)
    assert reply.status_code == 502 and "10.0.0.1" not in reply.text
    tasks = server.get(f"/api/agents/{owner}/{slug}/tasks")["tasks"]
    assert tasks and "10.0.0.1" not in json.dumps(tasks) and "127.0.0.1" not in json.dumps(tasks)
    owner2, key2, slug2 = published(server, endpoint, owner=owner, slug="quiet")
    httpx.patch(f"{server.url}/api/agents/{owner2}/{slug2}", headers={"X-Bench-Key": key2},
                json={"hide_inputs": True, "hide_outputs": True})
    answered = call(server, key2, owner2, slug2)
    assert answered.status_code == 200, answered.text
    public = server.get(f"/api/agents/{owner2}/{slug2}/tasks/{answered.json()['call_id']}")
    assert public["name"] == "invoked" and public["input"] == public["output"] == HIDDEN
    for path in (f"/api/agents/{owner2}/{slug2}", f"/u/{owner2}/{slug2}",
                 f"/api/agents/{owner2}/{slug2}/capability"):
        assert endpoint.url.split("//")[1] not in httpx.get(server.url + path).text, path
