"""Issue 18's surfaces on Lambda, as API Gateway delivers requests: `POST /v1/logs` against
DynamoDB (moto), content that arrives before its span parked in the table and joined to the
span the trace export brings, every AWS call granted to the ingest function's role; and the
SDK's package index from the web function."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.aws.test_handlers import Deployment, assert_granted, deployment, new_login  # noqa: F401
from tests.contract.store.test_otlp_content import TASK, logs_body, traces_body
from tests.e2e.test_sdk_index import build_wheel


def test_logs_before_spans_join_them_on_dynamodb(transformed: dict[str, Any],
                                                 deployment: Deployment) -> None:  # noqa: F811
    login = new_login()
    key = deployment.create_key(login)
    headers = {"X-Bench-Key": key, "X-Bench-Agent": "chatty", "content-type": "application/json"}
    for path, body in (("/v1/logs", logs_body()), ("/v1/traces", traces_body()),
                       ("/v1/logs", logs_body())):
        reply = deployment.request("POST", path, body=body, headers=headers, gzip=True)
        assert reply.status == 200 and reply.json() == {}, (path, reply.body)
    task = deployment.request("GET", f"/api/agents/{login}/chatty/tasks/{TASK}",
                              headers={"X-Bench-Key": key}).json()
    assert task["input"] == [{"role": "user", "content": "Capital of Portugal?"}]
    assert task["output"] == [{"message": {"role": "assistant", "content": "Lisbon."}}]
    assert task["evidence"]["input_tokens"] == 10
    assert "IngestFunction" in assert_granted(transformed, deployment.aws.calls)


def test_the_web_function_serves_the_sdk_index_and_wheel(
        deployment: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """What the core layer carries in bench_core/sdk_dist/ (layers/core/Makefile), here from a
    directory named by BENCH_SDK_DIST: the index and the wheel's bytes through API Gateway."""
    wheels = build_wheel(tmp_path)
    [wheel] = list(wheels.glob("*.whl"))
    monkeypatch.setenv("BENCH_SDK_DIST", str(wheels))
    index = deployment.request("GET", "/simple/bench-observe/",
                               headers={"accept": "application/vnd.pypi.simple.v1+json"})
    assert index.status == 200, index.body
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert index.json()["files"][0]["hashes"] == {"sha256": digest}
    download = deployment.request("GET", f"/simple/bench-observe/{wheel.name}")
    assert download.status == 200 and hashlib.sha256(download.body).hexdigest() == digest
    assert deployment.api.invocations == ["WebFunction", "WebFunction"]
