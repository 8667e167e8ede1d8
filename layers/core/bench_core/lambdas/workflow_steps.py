"""The Lambda side of the state machines: a Task state invokes a function with
`{"step": <name>, "state": <the workflow state>}` and gets the step's new state back.

Errors propagate on purpose: Lambda reports the exception's class name as the error type
(`LLMUnavailable`, ...), which is what the state machines' Retry and Catch match on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ports.workflows import State
from ..runtime import snapstart
from ..runtime.adapters import Services
from ..settings import Settings

Step = Callable[[Services, State], State]
_services: Services | None = None


@snapstart.on_restore
def _forget_services() -> None:
    global _services
    _services = None


def services() -> Services:
    """Built on the first invocation and kept for the container's life (warm starts reuse it)."""
    global _services
    if _services is None:
        _services = Services.from_settings(Settings.from_env())
    return _services


def step_handler(steps: Mapping[str, Step]) -> Callable[[dict[str, Any], Any], State]:
    def handle(event: dict[str, Any], context: Any) -> State:
        step = steps.get(event.get("step", ""))
        if step is None:
            raise ValueError(f"unknown step {event.get('step')!r}: one of {', '.join(steps)}")
        return step(services(), event.get("state") or {})

    return handle
