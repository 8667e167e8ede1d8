"""The `Custom::SessionSecret` resource of template.yaml: on Create and Update it makes sure
the SSM parameter it names exists (`runtime.session_secret`); on Delete it does nothing, so the
secret, and every session it signed, outlives the stack.

CloudFormation waits for an answer PUT to the request's pre-signed `ResponseURL`; a handler
that raised without answering would leave the stack waiting for an hour, so every failure is
answered as FAILED with its reason. The secret's value never appears in the answer.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from ..log import logger
from ..runtime.session_secret import ensure_secure_string

ANSWER_TIMEOUT_S = 10


def handle(event: dict[str, Any], context: Any, *, client: Any = None) -> dict[str, Any]:
    """Answer one CloudFormation custom-resource request; returns the answer it sent."""
    name = str(event.get("ResourceProperties", {}).get("ParameterName") or "")
    answer: dict[str, Any] = {"Status": "SUCCESS", "PhysicalResourceId": name or "session-secret",
              "StackId": event.get("StackId"), "RequestId": event.get("RequestId"),
              "LogicalResourceId": event.get("LogicalResourceId"), "Data": {}}
    try:
        if event.get("RequestType") in ("Create", "Update"):
            if not name.startswith("/"):
                raise ValueError(f"ParameterName must be an SSM path such as /bench/session-secret, not {name!r}")
            created = ensure_secure_string(name, client=client)
            answer["Data"] = {"Created": str(created).lower()}
            logger.info("session secret", extra={"parameter": name, "parameter_created": created})
    except Exception as exc:  # answered, never raised: CloudFormation would wait an hour
        logger.exception("session secret not ensured", extra={"parameter": name})
        answer.update(Status="FAILED", Reason=f"{type(exc).__name__}: {exc}"[:900])
    send_answer(event["ResponseURL"], answer)
    return answer


def send_answer(url: str, answer: dict[str, Any]) -> None:
    """PUT the answer with no Content-Type: the pre-signed URL was signed without one."""
    body = json.dumps(answer).encode()
    request = urllib.request.Request(url, data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:  # noqa: S310
        response.read()
