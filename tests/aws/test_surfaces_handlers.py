"""WebFunction and BadgeFunction as Lambda runs them: API Gateway's events, the template's
routes and environment, moto's DynamoDB; what their roles must grant; the badge's small import."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest

from tests.aws import cfn
from tests.aws.test_handlers import Deployment, _granted, _needed, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.conftest import RunningServer
from tests.factories import batch, day_old, task_events


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto (tests/aws/test_handlers.py's `deployment`)."""
    return request.getfixturevalue("_deployment")


def agent_batch(slug: str = "shown", runs: int = 12) -> dict[str, Any]:
    """`runs` tasks, the first one failed, with costs, latencies and outputs."""
    events = [e for i in range(runs)
              for e in task_events(f"t{i}", status="failed" if i == 0 else "success",
                                   duration_ms=200 + i, cost=0.01, output=f"secret-{i}")]
    return batch(slug, events, display_name="Lambda Agent", framework="on-lambda")


def seed(site: Deployment, slug: str = "shown", runs: int = 12) -> tuple[str, str]:
    """An agent made two days ago (so its runs rank it) with `runs` runs."""
    login = new_login()
    key = site.create_key(login)
    site.store.agents.create_agent(day_old(login, slug))
    r = site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                     json_body=agent_batch(slug, runs))
    assert r.status == 200, r.body
    return login, key


def test_badges_are_served_by_the_badge_function(site: Deployment) -> None:
    login, _ = seed(site)
    first = site.request("GET", f"/badge/{login}/shown.svg", query="style=for-the-badge")
    assert first.status == 200, first.body
    assert first.headers["content-type"] == "image/svg+xml; charset=utf-8"
    assert first.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    texts = [t.text for t in ET.fromstring(first.body).iter("{http://www.w3.org/2000/svg}text")
             if t.get("aria-hidden") != "true"]
    assert texts == ["SUCCESS", "91.7%"]
    again = site.request("GET", f"/badge/{login}/shown.svg", query="style=for-the-badge",
                               headers={"If-None-Match": first.headers["etag"]})
    assert again.status == 304 and again.body == b""
    missing = site.request("GET", "/badge/nobody/nothing.svg")
    assert missing.status == 404 and b"not found" in missing.body
    bad = site.request("GET", f"/badge/{login}/shown.svg", query="metric=speed")
    assert bad.status == 400 and bad.json()["detail"][0]["loc"] == ["query", "metric"]
    assert set(site.api.invocations) == {"IngestFunction", "BadgeFunction"}


# What a cache or a browser acts on; the local server adds only `x-request-id` and lengths.
BADGE_HEADERS = ("content-type", "cache-control", "etag", "content-security-policy",
                 "x-content-type-options", "retry-after")


def test_the_badge_function_answers_every_request_as_the_local_server_does(
        site: Deployment, bench_server: RunningServer) -> None:
    """The same agent on both; every kind of badge request gets the same status, caching and
    security headers and body from the Lambda handler as from the local FastAPI server."""
    login = new_login()
    body = agent_batch()
    r = httpx.post(f"{bench_server.url}/ingest", json=body, timeout=30,
                   headers={"X-Bench-Key": bench_server.create_key(login)})
    assert r.status_code == 200, r.text
    r = site.request("POST", "/ingest", json_body=body,
                     headers={"X-Bench-Key": site.create_key(login)})
    assert r.status == 200, r.body
    requests = [(f"{login}/shown.svg", "")] + [
        (f"{login}/shown.svg", f"metric={metric}&style={style}")
        for metric in ("success", "runs", "cost", "latency")
        for style in ("flat", "flat-square", "for-the-badge")] + [
        (f"{login.upper()}/Shown.svg", "metric=runs&metric=cost"),  # case, the last value wins
        (f"{login}/shown.svg", "metric=&style="),  # empty means the default
        (f"{login}/shown.svg", "metric=speed"), (f"{login}/shown.svg", "style=plastic"),
        ("nobody-at-all/nothing.svg", "style=for-the-badge"), (f"{login}/shown.png", ""),
        (f"{login}/.svg", "")]
    statuses = set()
    for path, query in requests:
        local = httpx.get(f"{bench_server.url}/badge/{path}" + (f"?{query}" if query else ""),
                          timeout=10)
        on_lambda = site.request("GET", f"/badge/{path}", query=query)
        case = f"{path}?{query}"
        assert on_lambda.status == local.status_code, case
        assert ({h: on_lambda.headers.get(h) for h in BADGE_HEADERS}
                == {h: local.headers.get(h) for h in BADGE_HEADERS}), case
        assert on_lambda.body == local.content, case
        statuses.add(local.status_code)
        if local.status_code == 200:
            conditional = {"If-None-Match": f'W/{local.headers["etag"]}'}
            again = httpx.get(f"{bench_server.url}/badge/{path}", params=query, headers=conditional,
                              timeout=10)
            again_lambda = site.request("GET", f"/badge/{path}", query=query, headers=conditional)
            assert again.status_code == again_lambda.status == 304, case
            assert again_lambda.body == again.content == b""
            assert ({h: again_lambda.headers.get(h) for h in BADGE_HEADERS}
                    == {h: again.headers.get(h) for h in BADGE_HEADERS}), case
    assert statuses == {200, 400, 404}


def test_a_failing_store_is_a_500_json_error_not_a_crashed_invocation(site: Deployment) -> None:
    """As the local server answers an unexpected error; API Gateway would otherwise turn the
    invocation's exception into its own bare 500."""
    site.api.environments["BadgeFunction"]["BENCH_TABLE_NAME"] = "no-such-table"
    r = site.request("GET", "/badge/someone/something.svg")
    assert (r.status, r.json()) == (500, {"error": "internal error", "detail": []})
    assert "cache-control" not in r.headers


def test_pages_are_served_by_the_web_function(site: Deployment) -> None:
    login, key = seed(site)
    html = {"Accept": "text/html"}
    for path in ("/", f"/u/{login}/shown", "/leaderboard", f"/embed/{login}/shown",
                 f"/vs/@{login}/shown/@{login}/shown"):
        r = site.request("GET", path, headers=html)
        assert r.status == 200, (path, r.body[:300])
        assert r.headers["content-type"] == "text/html; charset=utf-8", path
        assert b"Lambda Agent" in r.body or path in ("/",), path
    image = site.request("GET", f"/og/{login}/shown.png")
    assert image.status == 200 and struct.unpack(">II", image.body[16:24]) == (1200, 630)
    board = site.request("GET", "/api/leaderboard", query="sort=success&q=on-lambda")
    assert [a["slug"] for a in board.json()["agents"]] == ["shown"]
    css = site.request("GET", "/static/bench.css")
    assert css.status == 200 and css.headers["content-type"].startswith("text/css")
    assert site.request("GET", "/leaderboard", query="sort=fast", headers=html).status == 400
    patched = site.request("PATCH", f"/api/agents/{login}/shown",
                                 json_body={"visibility": "private"}, headers={"X-Bench-Key": key})
    assert patched.status == 200, patched.body
    for path in (f"/u/{login}/shown", f"/embed/{login}/shown", f"/og/{login}/shown.png",
                 f"/badge/{login}/shown.svg"):
        assert site.request("GET", path, headers=html).status == 404, path
    board = site.request("GET", "/api/leaderboard", query="q=on-lambda")
    assert board.json()["agents"] == []
    assert {"WebFunction", "BadgeFunction"} <= set(site.api.invocations)


def test_every_call_the_surfaces_make_is_granted_to_their_roles(
        transformed: dict[str, Any], site: Deployment) -> None:
    login, key = seed(site)
    owner = {"X-Bench-Key": key, "Accept": "text/html"}
    for path, query in ((f"/badge/{login}/shown.svg", "metric=latency"), ("/", ""),
                        (f"/u/{login}/shown", ""), ("/leaderboard", "sort=cost&q=lambda"),
                        ("/api/leaderboard", "sort=latency"), (f"/embed/{login}/shown", ""),
                        (f"/og/{login}/shown.png", ""), (f"/vs/@{login}/shown/@{login}/shown", "")):
        assert site.request("GET", path, query=query, headers=owner).status == 200, path
    for function_id in ("WebFunction", "BadgeFunction"):
        granted = _granted(transformed, function_id)
        calls = [c for c in site.aws.calls if c[0] == function_id]
        assert calls, function_id
        for _, service, operation, params in calls:
            missing = _needed(service, operation, params) - granted
            assert not missing, f"{function_id} calls {operation} without {missing}"


WEB_FRAMEWORK = ("fastapi", "starlette", "mangum", "jinja2")


@pytest.mark.parametrize("function, heavy", [
    # the badge's cold start is Powertools and the renderer; pydantic and boto3 load on the
    # first request
    ("badge", (*WEB_FRAMEWORK, "pydantic", "boto3", "botocore.client")),
    # the WebSocket routes are plain handlers too: no web framework at import
    ("live", WEB_FRAMEWORK),
])
def test_plain_handlers_import_no_web_framework(function: str, heavy: tuple[str, ...]) -> None:
    script = ("import json, sys, app\n"
              f"print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))")
    code_dir = cfn.FUNCTIONS_DIR / function
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code_dir),
                                                         str(cfn.REPO / "layers" / "core")]),
           "BENCH_STORE": "dynamodb", "BENCH_TABLE_NAME": "bench-import-check"}
    done = subprocess.run([sys.executable, "-c", script], cwd=code_dir, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_head_is_answered_wherever_get_is(site: Deployment) -> None:
    """Link checkers and caches ask HEAD first: badge, embed and OG image answer it as GET,
    without the body (the template routes HEAD to the same functions)."""
    login, _ = seed(site)
    for path in (f"/badge/{login}/shown.svg", f"/embed/{login}/shown", f"/og/{login}/shown.png"):
        got, head = site.request("GET", path), site.request("HEAD", path)
        assert head.status == got.status == 200, (path, head.status)
        assert head.body == b"" and head.headers["content-type"] == got.headers["content-type"]
        assert head.headers["x-content-type-options"] == "nosniff", path
