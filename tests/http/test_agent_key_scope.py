"""An agent key (`bka_`) against the owner-only routes, over real HTTP: it owns its one agent and
learns nothing of the rest of its account. Another agent of the account, public or private,
answers exactly as one that does not exist (404), so a key handed to a CI job or a teammate
cannot list its owner's private agents; its own agent says an owner key is needed (403); and
`/api/usage` shows the calls made with that agent's keys, not the account's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import Agent, iso

from tests.conftest import RunningServer
from tests.http.accounts_support import new_login
from tests.http.reuse_support import AgentEndpoint, card, published, serve_bench, serve_endpoint

ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("PATCH", "/api/agents/{agent}", {"visibility": "public"}),
    ("PUT", "/api/agents/{agent}/capability", card("https://agent.example.com/bench")),
    ("POST", "/api/agents/{agent}/capability/secret", None),
    ("GET", "/api/agents/{agent}/grants", None),
    ("POST", "/api/agents/{agent}/grants", {"caller": "someone", "calls_per_day": 1}),
    ("DELETE", "/api/agents/{agent}/grants/someone", None),
    ("POST", "/api/agents/{agent}/insights/refresh", None),
]
"""Every route only an agent's owner may use with a key (the dashboard's need a session)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from serve_bench(tmp_path_factory.mktemp("agent-key-scope"))


@pytest.fixture(scope="module")
def endpoint() -> Iterator[AgentEndpoint]:
    yield from serve_endpoint()


@dataclass
class Account:
    login: str
    owner_key: str
    agent_key: str
    """Bound to `mine`; the account also has `sibling` (public) and `secret` (private)."""


@pytest.fixture(scope="module")
def account(server: RunningServer) -> Account:
    login = new_login()
    for slug, visibility in (("mine", "public"), ("sibling", "public"), ("secret", "private")):
        server.store.agents.create_agent(Agent(login=login, slug=slug, visibility=visibility,
                                               created_at=iso(SYSTEM_CLOCK.now())))
    return Account(login, server.create_key(login), server.create_key(login, "mine"))


def send(server: RunningServer, method: str, path: str, body: dict[str, Any] | None,
         key: str) -> httpx.Response:
    return httpx.request(method, server.url + path, json=body, headers={"X-Bench-Key": key},
                         timeout=30)


@pytest.mark.parametrize(("method", "path", "body"), ROUTES,
                         ids=[f"{m} {p.removeprefix('/api/agents/{agent}')}" for m, p, _ in ROUTES])
def test_an_agent_key_cannot_tell_its_accounts_other_agents_from_none(
        server: RunningServer, account: Account, method: str, path: str,
        body: dict[str, Any] | None) -> None:
    answers = {slug: send(server, method, path.format(agent=f"{account.login}/{slug}"), body,
                          account.agent_key)
               for slug in ("sibling", "secret", "never-made")}
    assert {slug: (r.status_code, r.json()) for slug, r in answers.items()} == {
        slug: (404, {"error": "agent not found", "detail": []}) for slug in answers}
    own = send(server, method, path.format(agent=f"{account.login}/mine"), body,
               account.agent_key)
    assert own.status_code == 403 and "owner key" in own.json()["error"]
    owner = send(server, method, path.format(agent=f"{account.login}/secret"), body,
                 account.owner_key)
    assert owner.json().get("error") != "agent not found", "the owner key reaches it"


def test_usage_for_an_agent_key_is_that_agents_calls_only(server: RunningServer,
                                                          endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(server, endpoint)
    caller = new_login()
    keys = {"account": server.create_key(caller), "mine": server.create_key(caller, "mine"),
            "other": server.create_key(caller, "other")}
    assert httpx.post(f"{server.url}/api/agents/{owner}/{slug}/grants",
                      headers={"X-Bench-Key": owner_key},
                      json={"caller": caller, "calls_per_day": 100}).status_code == 201
    made = {}
    for name, key in keys.items():
        answer = httpx.post(f"{server.url}/api/agents/{owner}/{slug}/invoke",
                            headers={"X-Bench-Key": key}, json={"input": {"q": name}},
                            timeout=30)
        assert answer.status_code == 200, answer.text
        made[name] = answer.json()["call_id"]

    def calls(key: str) -> set[str]:
        return {u["call_id"] for u in server.get("/api/usage", key)["usage"]}

    assert calls(keys["mine"]) == {made["mine"]}
    assert calls(keys["other"]) == {made["other"]}
    assert calls(keys["account"]) == set(made.values()), "an owner key sees the account's"
