"""Verdicts sent as OpenTelemetry GenAI evaluation events (`gen_ai.evaluation.result` log
events, parented to the span they judge) through the real OTel SDK and its OTLP/HTTP exporters
become feedback on the span's run, once however often the export is sent; an event Bench cannot
put on its 0-1 scale is refused in the answer's partial success."""

from __future__ import annotations

from typing import Any

import httpx
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

from tests.conftest import RunningServer, poll
from tests.e2e.test_otlp_logs import providers
from tests.http.chat_data import export
from tests.http.test_ingest_http import new_login

EVALUATIONS: list[dict[str, Any]] = [
    {"gen_ai.evaluation.name": "Relevance", "gen_ai.evaluation.score.value": 0.9,
     "gen_ai.evaluation.explanation": "Answers the question asked"},
    {"gen_ai.evaluation.name": "correctness", "gen_ai.evaluation.score.label": "incorrect"},
    {"gen_ai.evaluation.name": "Stars", "gen_ai.evaluation.score.value": 4.0},  # off scale
]


def judged_run() -> tuple[Any, list[Any]]:
    """An agent span with a model call under it, each model call judged by evaluation events
    emitted inside it (so parented to it): the finished spans and log records."""
    tracer_provider, spans, logger_provider, logs = providers("evaluated")
    tracer = tracer_provider.get_tracer("agent")
    logger = logger_provider.get_logger("evaluator")
    with tracer.start_as_current_span("invoke_agent helper"), \
            tracer.start_as_current_span("chat gpt-4.1-mini"):
        for attributes in EVALUATIONS:
            logger.emit(LogRecord(event_name="gen_ai.evaluation.result", attributes=attributes))
    return spans.get_finished_spans(), list(logs.get_finished_logs())


def test_evaluation_events_become_feedback_on_the_run_once(bench_server: RunningServer) -> None:
    login, slug = new_login(), "evaluated"
    key = bench_server.create_key(login)
    spans, logs = judged_run()
    export(bench_server, key, slug, spans)
    export(bench_server, key, slug, [], logs)
    root = next(s for s in spans if s.parent is None)
    run_id = f"{root.context.trace_id:032x}-{root.context.span_id:016x}"
    path = f"/api/agents/{login}/{slug}/runs/{run_id}"
    feedback = poll(lambda: bench_server.get(path, key)["feedback"],
                    lambda shown: shown["count"] == 2)
    kept = sorted((f["label"], f["kind"], f["score"], f["thumbs"], f["comment"], f["source"])
                  for f in feedback["items"])
    assert kept == [("Relevance", "score", 0.9, None, "Answers the question asked", "owner"),
                    ("correctness", "thumbs", 0.0, "down", None, "owner")]

    answer = httpx.post(f"{bench_server.url}/v1/logs", timeout=30,
                        content=encode_logs(logs).SerializeToString(),
                        headers={"Content-Type": "application/x-protobuf", "X-Bench-Key": key,
                                 "X-Bench-Agent": slug})
    assert answer.status_code == 200
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1
    assert "neither scores from 0 to 1 nor labels a pass or fail" in partial.error_message
    assert bench_server.get(path, key)["feedback"]["count"] == 2  # sent again: kept once


def test_evaluation_span_events_become_feedback_too(bench_server: RunningServer) -> None:
    """Older instrumentations add the evaluation to the judged span as a span event."""
    login, slug = new_login(), "span-evaluated"
    key = bench_server.create_key(login)
    tracer_provider, spans, _, _ = providers("evaluated")
    with tracer_provider.get_tracer("agent").start_as_current_span("invoke_agent helper") as span:
        for attributes in EVALUATIONS:
            span.add_event("gen_ai.evaluation.result", attributes=attributes)
    finished = spans.get_finished_spans()
    for _ in range(2):  # sent again: kept once
        export(bench_server, key, slug, finished)
    root = finished[0]
    path = f"/api/agents/{login}/{slug}/runs/{root.context.trace_id:032x}-{root.context.span_id:016x}"
    feedback = poll(lambda: bench_server.get(path, key)["feedback"],
                    lambda shown: shown["count"] >= 2)
    assert sorted((f["label"], f["score"]) for f in feedback["items"]) == \
        [("Relevance", 0.9), ("correctness", 0.0)]
