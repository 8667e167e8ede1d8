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
from typing import TYPE_CHECKING, Callable, TypeVar

from bench._client import DEFAULT_FLUSH_TIMEOUT, BenchAgent

if TYPE_CHECKING:  # typing.ParamSpec is 3.10+; annotations are never evaluated at run time
    from typing import ParamSpec

    P = ParamSpec("P")
R = TypeVar("R")


def lambda_handler(agent: BenchAgent, *, timeout: float = DEFAULT_FLUSH_TIMEOUT
                   ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a Lambda handler so it flushes ``agent`` (up to ``timeout`` s) before returning,
    also when it raises. The handler's result and exceptions are unchanged."""

    def decorate(handler: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(handler)
        def flushed(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return handler(*args, **kwargs)
            finally:
                agent.flush_sync(timeout)

        return flushed

    return decorate
