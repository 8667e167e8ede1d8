"""`POST /v1/logs` on Lambda, as API Gateway delivers it, against DynamoDB (moto): content that
arrives before its span is parked in the table and joins the span the trace export brings, and
every AWS call the ingest function makes for it is granted to its role."""

from __future__ import annotations

from typing import Any

from tests.aws.test_handlers import Deployment, assert_granted, deployment, new_login  # noqa: F401
from tests.contract.store.test_otlp_content import TASK, logs_body, traces_body


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
