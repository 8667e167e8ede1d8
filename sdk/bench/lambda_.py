"""AWS Lambda: deliver a handler's events before it returns.

Lambda freezes the container as soon as the handler returns, and a frozen sender thread sends
nothing (the events would wait, maybe forever, for the next invocation). Wrap the handler::

    agent = bench.observe(agent="my-agent")

    @lambda_handler(agent)
    def handler(event, context):
        with agent.span("answer", event) as t:
            ...
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from bench._client import DEFAULT_FLUSH_TIMEOUT, BenchAgent

H = TypeVar("H", bound=Callable[..., Any])


def lambda_handler(agent: BenchAgent, *, timeout: float = DEFAULT_FLUSH_TIMEOUT) -> Callable[[H], H]:
    """Decorate a Lambda handler so it flushes ``agent`` (up to ``timeout`` s) before returning,
    also when it raises. The handler's result and exceptions are unchanged."""

    def decorate(handler: H) -> H:
        @functools.wraps(handler)
        def flushed(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                agent.flush_sync(timeout)

        return flushed  # type: ignore[return-value]

    return decorate
