"""The mapping of OTLP `gen_ai.evaluation.result` events to verdicts on spans."""

from __future__ import annotations

from typing import Any

from bench_core.ingest.otlp.evaluations import (
    EVALUATION_EVENT,
    NO_NAME,
    NO_SPAN,
    OFF_SCALE,
    evaluation_verdicts,
)
from bench_core.ingest.otlp.log_decode import LogRecord

TRACE, SPAN = "a" * 32, "b" * 16


def record(attributes: dict[str, Any], *, span_id: str = SPAN, time_ns: int = 1,
           event_name: str = EVALUATION_EVENT) -> LogRecord:
    return LogRecord(trace_id=TRACE, span_id=span_id, time_ns=time_ns, event_name=event_name,
                     body=None, attributes=attributes, resource={})


def test_scores_labels_and_refusals() -> None:
    verdicts, refused = evaluation_verdicts([
        record({"gen_ai.evaluation.name": "Relevance", "gen_ai.evaluation.score.value": 1}),
        record({"gen_ai.evaluation.name": "tone check!", "gen_ai.evaluation.score.label": "Pass",
                "gen_ai.evaluation.score.value": 7}),
        record({"gen_ai.evaluation.name": "x", "gen_ai.evaluation.score.value": True}),
        record({"gen_ai.evaluation.score.value": 0.5}),
        record({"gen_ai.evaluation.name": "x", "gen_ai.evaluation.score.value": 0.5}, span_id=""),
        record({"gen_ai.evaluation.name": "x"}, event_name="gen_ai.choice"),  # not ours: skipped
    ])
    assert [(v.task_id, v.score, v.thumbs, v.label) for v in verdicts] == [
        (f"{TRACE}-{SPAN}", 1.0, None, "Relevance"),
        (f"{TRACE}-{SPAN}", None, "up", None)]  # "tone check!" is no label
    assert refused == {OFF_SCALE: 1, NO_NAME: 1, NO_SPAN: 1}


def test_the_feedback_id_is_the_events_own() -> None:
    attributes = {"gen_ai.evaluation.name": "Relevance", "gen_ai.evaluation.score.value": 0.2}
    first, again, later = (evaluation_verdicts([record(attributes, time_ns=t)])[0][0]
                           for t in (5, 5, 6))
    assert first.feedback_id == again.feedback_id != later.feedback_id
    assert first.feedback_id.startswith("otlp-") and len(first.feedback_id) <= 128
