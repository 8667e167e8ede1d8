"""The real OpenTelemetry SDK and OTLP/HTTP exporter: the resource's `service.version` is the
agent's version, on every run it exports, counted per version; a label a version may not hold
is made to fit rather than refused (an exporter drops what a server refuses)."""

from __future__ import annotations

import uuid

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.conftest import RunningServer


def export_runs(server: RunningServer, key: str, version: str, runs: int, failures: int) -> None:
    provider = TracerProvider(resource=Resource.create({
        "service.name": "Versioned Agent", "service.version": version}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"X-Bench-Key": key})))
    tracer = provider.get_tracer("versioned")
    for i in range(runs):
        try:
            with tracer.start_as_current_span("invoke_agent answer", attributes={
                    "gen_ai.operation.name": "invoke_agent"}):
                if i < failures:
                    raise RuntimeError("tool failed")
        except RuntimeError:
            pass
    provider.shutdown()


def test_service_version_is_each_runs_version(bench_server: RunningServer) -> None:
    login = "x" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    export_runs(bench_server, key, "2.4.0", runs=10, failures=5)
    export_runs(bench_server, key, "2.4.1 (hotfix)", runs=10, failures=0)
    answer = bench_server.get(f"/api/agents/{login}/versioned-agent/versions")
    assert [(v["version"], v["runs"], v["successes"]) for v in answer["versions"]] == [
        ("2.4.1--hotfix-", 10, 10), ("2.4.0", 10, 5)]
    assert answer["comparison"]["older"] == "2.4.0"
    runs = bench_server.get(f"/api/agents/{login}/versioned-agent/tasks", limit=50)["tasks"]
    assert {t["version"] for t in runs} == {"2.4.0", "2.4.1--hotfix-"}
