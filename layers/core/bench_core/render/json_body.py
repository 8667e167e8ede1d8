"""JSON answers built by Bench itself and too big for FastAPI's encoding (a run's thousand
spans, 1.3 MB): encoded by orjson, in a third of pydantic-core's time, as is each span an
answer measures to stay within its bytes (`reads.runs.ANSWER_BYTES`). What orjson
refuses (an integer beyond 64 bits or a key that is not a string, from an agent's own input)
is encoded by pydantic-core as everything stored is (`field_limits.dumps`)."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic_core import to_json


def json_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return to_json(value, serialize_unknown=True)
