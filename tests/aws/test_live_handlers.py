"""The live feed and accounts as Lambda runs them: API Gateway's WebSocket events for
LiveFunction, HTTP API events for DashboardFunction and IngestFunction, the push they hand to
LivePushFunction (Lambda's asynchronous invoke, queued here and run when the test says, as
Lambda runs it after the ingest answer), the template's environment (the session secret from
SSM, through Powertools), moto's DynamoDB -- and post_to_connection through botocore's Stubber,
since moto never answers 410 Gone."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.client
import pytest
from aws_lambda_powertools.utilities import parameters
from bench_core.accounts import csrf, sessions
from bench_core.accounts.live_tokens import issue
from bench_core.domain.live import Channel
from bench_core.domain.models import Agent, iso
from bench_core.live import apigw as live_apigw
from botocore.stub import ANY, Stubber

from tests.aws import cfn
from tests.aws.lambda_runtime import LambdaContext, fresh_function_module, websocket_event
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.factories import batch, task_events

SECRET = "session-secret-for-the-live-tests-0123456789"
API_GATEWAY_LIMIT = 128 * 1024


@dataclass
class Posted:
    """What the push sent, per connection id (read off the stubbed client's calls)."""

    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)

    def record(self, params: dict[str, Any], **_: Any) -> None:
        if "Data" in params:
            self.sizes.append(len(params["Data"]))
            self.messages.setdefault(params["ConnectionId"], []).append(json.loads(params["Data"]))


@dataclass
class HandedOff:
    """Lambda's asynchronous invocation queue: the Invoke calls (InvocationType Event) the
    functions made, answered 202 as Lambda answers them before the function runs."""

    site: Deployment
    queued: list[dict[str, Any]] = field(default_factory=list)

    def wrap(self, make_call: Any) -> Any:
        def invoke_or_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if client.meta.service_model.service_name != "lambda" or operation != "Invoke":
                return make_call(client, operation, params)
            self.site.aws.calls.append((self.site.aws.current, "lambda", operation, params))
            assert params["InvocationType"] == "Event", params
            self.queued.append(params)
            return {"StatusCode": 202, "Payload": b""}
        return invoke_or_call


@dataclass
class LiveSite:
    site: Deployment
    transformed: dict[str, Any]
    stub: Stubber
    posted: Posted
    handed_off: HandedOff
    live: Any = None
    push: Any = None

    @property
    def store(self) -> Any:
        return self.site.store

    def websocket(self, route: str, connection_id: str, *, query: dict[str, str] | None = None,
                  body: str | None = None) -> dict[str, Any]:
        """Invoke LiveFunction as API Gateway does, in the environment the template gives it."""
        from unittest import mock

        event = websocket_event(route, connection_id=connection_id, body=body)
        if query is not None:
            event["queryStringParameters"] = query
            event["multiValueQueryStringParameters"] = {k: [v] for k, v in query.items()}
        environment = cfn.environment(self.transformed, "LiveFunction", self.site.refs)
        self.site.aws.current = "LiveFunction"
        try:
            with mock.patch.dict("os.environ", environment):
                if self.live is None:
                    self.live = fresh_function_module(
                        cfn.functions(self.transformed)["LiveFunction"].code_dir)
                return self.live.handler(event, LambdaContext("LiveFunction"))
        finally:
            self.site.aws.current = "test"

    def connect(self, connection_id: str, channel: str, viewer: str | None = None,
                token: str | None = None) -> int:
        query = {"channel": channel}
        if viewer is not None or token is not None:
            query["token"] = token or issue(SECRET.encode(), Channel.parse(channel), viewer,
                                           now=self.store.clock.now())
        return self.websocket("$connect", connection_id, query=query)["statusCode"]

    def run_pushes(self) -> int:
        """Run LivePushFunction on each event handed to it, in order, in the environment the
        template gives it; how many ran."""
        from unittest import mock

        function = cfn.functions(self.transformed)["LivePushFunction"]
        environment = cfn.environment(self.transformed, "LivePushFunction", self.site.refs)
        ran = 0
        while self.handed_off.queued:
            params = self.handed_off.queued.pop(0)
            assert params["FunctionName"] == self.site.refs["LivePushFunction"]
            self.site.aws.current = "LivePushFunction"
            try:
                with mock.patch.dict("os.environ", environment):
                    if self.push is None:
                        self.push = fresh_function_module(function.code_dir)
                    self.push.handler(json.loads(params["Payload"]),
                                      LambdaContext("LivePushFunction"))
            finally:
                self.site.aws.current = "test"
            ran += 1
        return ran

    def connected(self, login: str) -> list[str]:
        return [c.connection_id for c in self.store.accounts.live_connections(login, iso(self.store.clock.now()))]


@pytest.fixture
def live(request: pytest.FixtureRequest, transformed: dict[str, Any],
         monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveSite]:
    site: Deployment = request.getfixturevalue("_deployment")
    parameters.clear_caches()  # each test reads the secret from its own moto SSM
    name = cfn.environment(transformed, "LiveFunction", site.refs)["BENCH_SESSION_SECRET_PARAMETER"]
    boto3.client("ssm").put_parameter(Name=name, Value=SECRET, Type="SecureString")
    endpoint = cfn.environment(transformed, "IngestFunction", site.refs)["BENCH_LIVE_ENDPOINT"]
    client = boto3.client("apigatewaymanagementapi", endpoint_url=endpoint)
    posted = Posted()
    client.meta.events.register("provide-client-params.apigatewaymanagementapi.PostToConnection",
                                posted.record)
    monkeypatch.setattr(live_apigw, "management_client", lambda url: client)
    monkeypatch.setattr(live_apigw, "MAX_PARALLEL_POSTS", 1)  # the Stubber answers in order
    handed_off = HandedOff(site)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call",
                        handed_off.wrap(botocore.client.BaseClient._make_api_call))
    with Stubber(client) as stub:
        yield LiveSite(site, transformed, stub, posted, handed_off)


def make_agent(live: LiveSite, login: str, slug: str, **settings: Any) -> None:
    live.store.agents.create_agent(Agent(login=login, slug=slug, created_at=iso(live.store.clock.now()), **settings))


# ---- $connect, $disconnect, $default ----------------------------------------------------------------


def test_connect_lets_the_owner_watch_a_private_agent_and_no_one_else(live: LiveSite) -> None:
    owner, other = new_login(), new_login()
    make_agent(live, owner, "secret", visibility="private")
    channel = f"{owner}/secret"
    assert live.connect("anon", channel) == 403
    assert live.connect("other", channel, viewer=other) == 403
    assert live.connect("forged", channel, token="e30.9999999999.forged") == 403
    assert live.connect("elsewhere", channel,
                        token=issue(SECRET.encode(), Channel(owner, "other"), owner,
                                    now=live.store.clock.now())) == 403
    assert live.connect("owner-conn", channel, viewer=owner) == 200
    assert live.connect("owner-all", owner, viewer=owner) == 200
    assert live.connect("other-all", owner, viewer=other) == 403
    assert live.connect("bad", "not a channel!", token="x") == 403
    (own, everything) = sorted(live.store.accounts.live_connections(owner, iso(live.store.clock.now())),
                               key=lambda c: c.connection_id)
    assert (own.connection_id, own.slug, own.viewer) == ("owner-all", None, owner)
    assert (everything.connection_id, everything.slug) == ("owner-conn", "secret")
    assert own.expires_at > iso(live.store.clock.now())


def test_a_public_agents_feed_is_open_to_anyone(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "open")
    assert live.connect("anyone", f"{owner}/open") == 200
    assert live.connected(owner) == ["anyone"]


def test_disconnect_forgets_the_connection(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "open")
    live.connect("c1", f"{owner}/open")
    assert live.websocket("$disconnect", "c1")["statusCode"] == 200
    assert live.connected(owner) == []


def test_default_answers_pings_and_explains_anything_else(live: LiveSite) -> None:
    pong = live.websocket("$default", "c1", body='{"action": "ping"}')
    assert pong == {"statusCode": 200, "body": '{"type": "pong"}'}
    other = live.websocket("$default", "c1", body='{"action": "subscribe"}')
    assert other["statusCode"] == 400 and "ping" in json.loads(other["body"])["error"]


# ---- ingest pushes ----------------------------------------------------------------------------------


def expect_posts(live: LiveSite, *connections: tuple[str, bool]) -> None:
    """The Stubber's answers, in the order the push makes its calls: (id, still there)."""
    for connection_id, there in connections:
        if there:
            live.stub.add_response("post_to_connection", {},
                                   {"ConnectionId": connection_id, "Data": ANY})
        else:
            live.stub.add_client_error("post_to_connection", service_error_code="GoneException",
                                       http_status_code=410,
                                       expected_params={"ConnectionId": connection_id, "Data": ANY})


def test_ingest_pushes_summaries_and_forgets_gone_connections(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "pushed", hide_inputs=True)
    for connection_id, viewer in (("c1-public", None), ("c2-gone", None), ("c3-owner", owner)):
        assert live.connect(connection_id, f"{owner}/pushed", viewer=viewer) == 200
    expect_posts(live, ("c1-public", True), ("c2-gone", False), ("c3-owner", True))
    key = live.site.create_key(owner, "pushed")
    events = task_events("t1", input={"secret": "question"}, output="answer")
    sent = live.site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                             json_body=batch("pushed", events))
    assert sent.status == 200, sent.body
    assert live.posted.messages == {}, "the answer came before any post"
    assert live.run_pushes() == 1
    live.stub.assert_no_pending_responses()
    assert live.connected(owner) == ["c1-public", "c3-owner"]
    (public,), (own,) = live.posted.messages["c1-public"], live.posted.messages["c3-owner"]
    assert [e["kind"] for e in public["events"]] == ["task.start", "task.end"]
    assert "question" not in json.dumps(public) and "answer" in json.dumps(public)
    assert "question" in json.dumps(own)
    assert own["stats"]["runs"] == 1


def test_a_batch_nobody_watches_is_handed_to_no_one(live: LiveSite) -> None:
    """Idle costs one look at the owner's connections: no invoke, no push function run."""
    owner = new_login()
    make_agent(live, owner, "alone")
    assert live.connect("elsewhere", f"{owner}/other", viewer=owner) == 200
    key = live.site.create_key(owner, "alone")
    sent = live.site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                             json_body=batch("alone", task_events("t1")))
    assert sent.status == 200, sent.body
    assert live.handed_off.queued == []
    assert not [c for c in live.site.aws.calls if c[1] == "lambda"]


def test_an_otlp_export_is_pushed_like_a_batch(live: LiveSite) -> None:
    from tests.http.test_otlp_http import Trace, body

    owner = new_login()
    make_agent(live, owner, "traced")
    assert live.connect("c1-owner", f"{owner}/traced", viewer=owner) == 200
    expect_posts(live, ("c1-owner", True))
    trace = Trace()
    sent = live.site.request(
        "POST", "/v1/traces", json_body=json.loads(body(trace.span("agent"), trace.span("tool"))),
        headers={"X-Bench-Key": live.site.create_key(owner, "traced"),
                 "X-Bench-Agent": "traced"})
    assert sent.status == 200, sent.body
    assert live.run_pushes() == 1
    live.stub.assert_no_pending_responses()
    (message,) = live.posted.messages["c1-owner"]
    ends = {e["task_id"]: e["status"] for e in message["events"] if e["kind"] == "task.end"}
    assert ends == {trace.task("agent"): "success", trace.task("tool"): "failed"}


def test_a_big_batch_is_pushed_in_messages_under_the_limit(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "big")
    live.connect("only", f"{owner}/big", viewer=owner)
    for _ in range(20):
        live.stub.add_response("post_to_connection", {}, {"ConnectionId": "only", "Data": ANY})
    events = [{"id": f"e{i}", "kind": "custom", "ts": "2026-12-02T16:00:00Z",
               "data": {"blob": "é" * 500, "n": i}} for i in range(800)]
    key = live.site.create_key(owner)
    assert live.site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                             json_body=batch("big", events)).status == 200
    assert live.run_pushes() >= 1
    received = [e["id"] for m in live.posted.messages["only"] for e in m["events"]]
    assert received == [e["id"] for e in events]
    assert len(live.posted.sizes) > 1 and max(live.posted.sizes) < API_GATEWAY_LIMIT


def test_a_feed_made_private_disconnects_its_other_watchers(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "closing")
    live.connect("a-stranger", f"{owner}/closing")
    live.connect("b-owner", f"{owner}/closing", viewer=owner)
    live.store.agents.update_agent(Agent(login=owner, slug="closing").ref, {"visibility": "private"})
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "a-stranger"})
    expect_posts(live, ("b-owner", True))
    key = live.site.create_key(owner)
    assert live.site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                             json_body=batch("closing", task_events("t1"))).status == 200
    assert live.run_pushes() == 1
    live.stub.assert_no_pending_responses()
    assert live.connected(owner) == ["b-owner"]
    assert "a-stranger" not in live.posted.messages


# ---- DashboardFunction --------------------------------------------------------------------------------


def session_cookie(live: LiveSite, login: str, *, sandbox: bool = False) -> str:
    _, cookie = sessions.start(live.store, SECRET.encode(), login, sandbox=sandbox)
    return f"{sessions.COOKIE}={cookie}"


def test_a_page_gets_a_token_that_connect_accepts(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "watched", visibility="private")
    headers = {"Cookie": session_cookie(live, owner)}
    answer = live.site.request("GET", "/live-token", query=f"channel={owner}/watched",
                               headers=headers)
    assert answer.status == 200, answer.body
    url = answer.json()["url"]
    assert url.startswith("wss://liveapi-stand-in.execute-api.us-east-1.amazonaws.com/prod?")
    token = re.search(r"token=([^&]+)", url).group(1)
    assert live.connect("from-page", f"{owner}/watched", token=token) == 200
    refused = live.site.request("GET", "/live-token", query=f"channel={owner}/watched")
    assert refused.status == 404


def test_the_dashboard_and_a_sandbox_demo_run_on_lambda(live: LiveSite) -> None:
    owner = new_login()
    page = live.site.request("GET", "/dashboard", headers={"Cookie": session_cookie(live, owner)})
    assert page.status == 200 and f"@{owner}" in page.body.decode()
    assert live.site.request("GET", "/dashboard").status == 303
    binding = "b" * 32
    started = live.site.request(
        "POST", "/try", body=f"csrf={csrf.token(SECRET.encode(), binding)}".encode(),
        headers={"Cookie": f"{csrf.ANON_COOKIE}={binding}",
                 "Content-Type": "application/x-www-form-urlencoded"})
    assert started.status == 200, started.body
    sandbox_login = re.search(r"@(try--[0-9a-f]+)/", started.body.decode()).group(1)
    live.connect("demo-watcher", f"{sandbox_login}/demo-agent", viewer=sandbox_login)
    expect_posts(live, ("demo-watcher", True))
    cookie = session_cookie(live, sandbox_login, sandbox=True)
    session_id = sessions.load(live.store, SECRET.encode(), cookie.split("=", 1)[1]).session_id
    demo = live.site.request("POST", "/try/demo", body=b"step=0", headers={
        "Cookie": cookie, "X-CSRF-Token": csrf.token(SECRET.encode(), session_id),
        "Content-Type": "application/x-www-form-urlencoded"})
    assert demo.status == 200, demo.body
    assert live.run_pushes() == 1
    live.stub.assert_no_pending_responses()
    (message,) = live.posted.messages["demo-watcher"]
    assert message["stats"]["runs"] == 1
    code = live.site.request("POST", "/api/cli/device/code", json_body={})
    assert code.status == 200 and code.json()["verification_uri"].endswith("/device")


# ---- permissions ------------------------------------------------------------------------------------


def test_every_aws_call_of_the_live_feed_and_accounts_is_granted(live: LiveSite) -> None:
    test_the_dashboard_and_a_sandbox_demo_run_on_lambda(live)
    test_a_feed_made_private_disconnects_its_other_watchers(live)
    calls = live.site.aws.calls
    assert any(c[1] == "ssm" for c in calls), "the secret came from SSM"
    assert {"LiveFunction", "DashboardFunction", "IngestFunction",
            "LivePushFunction"} <= assert_granted(live.transformed, calls)


# ---- connections close with what authorised them ----------------------------------------------------


def signed_in(live: LiveSite, login: str) -> tuple[str, str]:
    """A session cookie header and the CSRF token its forms carry."""
    cookie = session_cookie(live, login)
    session_id = sessions.load(live.store, SECRET.encode(), cookie.split("=", 1)[1]).session_id
    return cookie, csrf.token(SECRET.encode(), session_id)


def connect_from_page(live: LiveSite, connection_id: str, channel: str,
                      headers: dict[str, str]) -> None:
    answer = live.site.request("GET", "/live-token", query=f"channel={channel}", headers=headers)
    assert answer.status == 200, answer.body
    token = re.search(r"token=([^&]+)", answer.json()["url"]).group(1)
    assert live.connect(connection_id, channel, token=token) == 200


def form(live: LiveSite, path: str, cookie: str, token: str, **fields: str) -> int:
    from urllib.parse import urlencode

    return live.site.request("POST", path, body=urlencode({"csrf": token, **fields}).encode(),
                             headers={"Cookie": cookie,
                                      "Content-Type": "application/x-www-form-urlencoded"}).status


def test_signing_out_disconnects_the_sessions_connections(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "mine", visibility="private")
    cookie, token = signed_in(live, owner)
    other_cookie, _ = signed_in(live, owner)
    connect_from_page(live, "a-this-tab", f"{owner}/mine", {"Cookie": cookie})
    connect_from_page(live, "b-everything", owner, {"Cookie": cookie})
    connect_from_page(live, "c-other-tab", f"{owner}/mine", {"Cookie": other_cookie})
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "a-this-tab"})
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "b-everything"})
    assert form(live, "/logout", cookie, token) == 303
    live.stub.assert_no_pending_responses()
    assert live.connected(owner) == ["c-other-tab"]


def test_a_grant_ended_elsewhere_disconnects_at_the_next_push(live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "mine", visibility="private")
    owner_key = live.site.create_key(owner)
    connect_from_page(live, "by-key", f"{owner}/mine", {"X-Bench-Key": owner_key})
    (connection,) = live.store.accounts.live_connections(owner, iso(live.store.clock.now()))
    assert connection.grant and connection.grant.startswith("key:")
    record = next(k for k in live.store.accounts.list_keys(owner) if k.agent_slug is None)
    live.store.accounts.revoke_key(record.key_hash, iso(live.store.clock.now()))  # as `bench-server keys revoke` does
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "by-key"})
    sent = live.site.request("POST", "/ingest", json_body=batch("mine", task_events("t1")),
                             headers={"X-Bench-Key": live.site.create_key(owner, "mine")})
    assert sent.status == 200, sent.body
    assert live.run_pushes() == 1
    live.stub.assert_no_pending_responses()
    assert live.connected(owner) == [] and "by-key" not in live.posted.messages


def test_revoking_a_key_or_hiding_an_agent_on_the_dashboard_disconnects_at_once(
        live: LiveSite) -> None:
    owner = new_login()
    make_agent(live, owner, "shown")
    cookie, token = signed_in(live, owner)
    owner_key = live.site.create_key(owner)
    connect_from_page(live, "a-by-key", f"{owner}/shown", {"X-Bench-Key": owner_key})
    assert live.connect("b-stranger", f"{owner}/shown") == 200
    record = next(k for k in live.store.accounts.list_keys(owner) if k.agent_slug is None)
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "a-by-key"})
    assert form(live, "/dashboard/keys/revoke", cookie, token, key=record.key_hash) == 303
    live.stub.add_response("delete_connection", {}, {"ConnectionId": "b-stranger"})
    assert form(live, "/dashboard/agents/shown/settings", cookie, token,
                visibility="private") == 303
    live.stub.assert_no_pending_responses()
    assert live.connected(owner) == []
