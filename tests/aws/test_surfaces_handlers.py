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

import pytest

from tests.aws import cfn
from tests.aws.test_handlers import Deployment, _granted, _needed, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.factories import batch, task_events


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto (tests/aws/test_handlers.py's `deployment`)."""
    return request.getfixturevalue("_deployment")


def seed(site: Deployment, slug: str = "shown", runs: int = 12) -> tuple[str, str]:
    login = new_login()
    key = site.create_key(login)
    events = [e for i in range(runs)
              for e in task_events(f"t{i}", status="failed" if i == 0 else "success",
                                   duration_ms=200 + i, cost=0.01, output=f"secret-{i}")]
    r = site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                           json_body=batch(slug, events, display_name="Lambda Agent",
                                           framework="on-lambda"))
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


def test_the_badge_function_imports_neither_fastapi_nor_the_store() -> None:
    """Its cold start is Starlette, Powertools and the renderer; pydantic models and boto3
    load on the first request."""
    script = ("import json, sys, app\n"
              "print(json.dumps(sorted(m for m in ('fastapi', 'pydantic', 'boto3', 'jinja2')"
              " if m in sys.modules)))")
    code_dir = cfn.FUNCTIONS_DIR / "badge"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code_dir),
                                                         str(cfn.REPO / "layers" / "core")]),
           "BENCH_STORE": "dynamodb", "BENCH_TABLE_NAME": "bench-import-check"}
    done = subprocess.run([sys.executable, "-c", script], cwd=code_dir, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
