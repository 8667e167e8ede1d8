"""OTLP events that judge a span → people's verdicts on its run (`domain.feedback`).

The OpenTelemetry GenAI semantic conventions define one such event, `gen_ai.evaluation.result`
(a log event parented to the span it judges; older instrumentations add it to the span as a
span event, read alike): `gen_ai.evaluation.name` (required, the metric:
`Relevance`), `gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label` (`pass`,
`incorrect`, ...) and `gen_ai.evaluation.explanation`. There is no convention for `feedback.*`
or `user_feedback` attributes, so Bench reads none.

A verdict is on Bench's 0-1 scale or it is not kept: a score value from 0 to 1 is a score;
otherwise a label that plainly passes or fails (`PASSING`, `FAILING`) is a thumbs up or down;
anything else (a 1-5 rating, an unknown label) is refused in the answer's partial success, as
is an event naming no span. The metric's name is the verdict's label where it reads as one
(`domain.feedback.LABEL_PATTERN`), the explanation its comment (content). The feedback id comes
from the event's trace, span, metric and time, so an export sent again keeps one.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ...domain.feedback import LABEL_PATTERN, MAX_COMMENT_CHARS, SpanVerdict
from .decode import INVALID_ID, Span
from .log_decode import LogRecord
from .mapping import task_id

EVALUATION_EVENT = "gen_ai.evaluation.result"
PASSING = frozenset({"pass", "passed", "correct", "relevant", "good", "positive", "yes", "true",
                     "up", "thumbs_up", "thumbs up", "thumbs-up", "helpful"})
FAILING = frozenset({"fail", "failed", "incorrect", "not_relevant", "irrelevant", "bad",
                     "negative", "no", "false", "down", "thumbs_down", "thumbs down",
                     "thumbs-down", "unhelpful", "not_helpful"})
_LABEL = re.compile(LABEL_PATTERN)
NO_SPAN = "gen_ai.evaluation.result names no span (traceId and spanId)"
NO_NAME = "gen_ai.evaluation.result without gen_ai.evaluation.name"
OFF_SCALE = ("gen_ai.evaluation.result neither scores from 0 to 1 nor labels a pass or fail "
             "(gen_ai.evaluation.score.value, gen_ai.evaluation.score.label)")


def evaluation_verdicts(records: list[LogRecord]) -> tuple[list[SpanVerdict], dict[str, int]]:
    """The verdicts of the evaluation events among `records` (others are skipped), and why
    events were refused: reason → count."""
    return _sorted(_verdict(r.trace_id, r.span_id, r.attributes, r.time_ns) for r in records
                   if r.event_name == EVALUATION_EVENT)


def span_verdicts(span: Span) -> tuple[list[SpanVerdict], dict[str, int]]:
    """The verdicts of the span's own evaluation events, as `evaluation_verdicts`."""
    return _sorted(_verdict(span.trace_id, span.span_id, e.attributes, e.time_ns)
                   for e in span.events if e.name == EVALUATION_EVENT)


def _sorted(found: Iterable[SpanVerdict | str]) -> tuple[list[SpanVerdict], dict[str, int]]:
    verdicts: list[SpanVerdict] = []
    refused: dict[str, int] = defaultdict(int)
    for verdict in found:
        if isinstance(verdict, str):
            refused[verdict] += 1
        else:
            verdicts.append(verdict)
    return verdicts, dict(refused)


def _verdict(trace_id: str, span_id: str, attrs: dict[str, Any], time_ns: int
             ) -> SpanVerdict | str:
    if not trace_id or not span_id or INVALID_ID in (trace_id, span_id):
        return NO_SPAN
    name = attrs.get("gen_ai.evaluation.name")
    if not isinstance(name, str) or not name.strip():
        return NO_NAME
    value, label = attrs.get("gen_ai.evaluation.score.value"), attrs.get(
        "gen_ai.evaluation.score.label")
    score = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and 0 <= value <= 1 else None
    said = label.strip().lower() if isinstance(label, str) else ""
    thumbs = None if score is not None else (
        "up" if said in PASSING else "down" if said in FAILING else None)
    if score is None and thumbs is None:
        return OFF_SCALE
    explanation = attrs.get("gen_ai.evaluation.explanation")
    digest = hashlib.sha256("\x1f".join((trace_id, span_id, name, str(time_ns))).encode()
                            ).hexdigest()
    return SpanVerdict(task_id=task_id(trace_id, span_id),
                       feedback_id="otlp-" + digest[:32], score=score, thumbs=thumbs,
                       label=name.strip() if _LABEL.match(name.strip()) else None,
                       comment=explanation[:MAX_COMMENT_CHARS] if isinstance(
                           explanation, str) and explanation.strip() else None)
