"""Powertools Metrics and Tracer for the Lambda entry points, inert everywhere else.

In Lambda, `instrument` wraps each handler: log lines carry the invocation's context, the
metrics counted during the invocation go out as one CloudWatch EMF line (namespace `Bench`) when
it ends, and X-Ray traces the handler and its DynamoDB calls.

Outside Lambda (the local server, the CLI, tests) `count` records nothing -- Powertools would
otherwise keep every data point and print EMF JSON to stdout every 100 of them -- and the
tracer is never built, so the X-Ray SDK is neither imported nor needed there (in Lambda it is
built on the first invocation, not at import). Metrics also honour
`POWERTOOLS_METRICS_DISABLED`, tracing `POWERTOOLS_TRACE_DISABLED`.

Entry points also import their modules inside `loading()`, which keeps the garbage collector
out of the cold start. Example, a Lambda entry point::

    with loading():
        from bench_core.http import create_app, health
        from mangum import Mangum

        app = create_app(health.router)
    handler = instrument(Mangum(app, lifespan="off"))
"""

from __future__ import annotations

import functools
import gc
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from ..log import logger
from . import collector, snapstart

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

NAMESPACE = "Bench"
SERVICE = "bench"

Handler = TypeVar("Handler", bound=Callable[..., Any])

metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def in_lambda() -> bool:
    """True inside a Lambda execution environment, whose runtime sets this variable."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def metrics_enabled() -> bool:
    """In Lambda, unless POWERTOOLS_METRICS_DISABLED (or POWERTOOLS_DEV) says otherwise."""
    return in_lambda() and not is_metrics_disabled()


def tracing_enabled() -> bool:
    """In Lambda, unless POWERTOOLS_TRACE_DISABLED says otherwise."""
    disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower()
    return in_lambda() and disabled not in ("1", "true", "yes", "on")


def count(name: str, value: int = 1) -> None:
    """Add `value` to the count metric `name` for this invocation (nothing outside Lambda).

    A zero is recorded too: "a batch arrived and held nothing new" is worth seeing."""
    if metrics_enabled():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


@cache
def tracer() -> Tracer:
    """The X-Ray tracer, built on first use. It patches botocore only, the one client Bench's
    handlers call: patching all would also import and wrap sqlite3, http.client, httpx, ..."""
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE, patch_modules=("botocore",))


@contextmanager
def loading() -> Iterator[None]:
    """Around a Lambda entry point's imports: the garbage collector paused, and in Lambda what
    was loaded frozen (`gc.freeze`) when done. Modules, routes and models live as long as the
    process, so collecting while they load, or scanning them again in every later full
    collection, only costs time: about 60 ms of an HTTP handler's import here. Elsewhere (tests
    importing a handler) nothing is frozen, so their objects stay collectable."""
    with collector.paused():
        yield
        if in_lambda():
            gc.freeze()


def instrument(handler: Handler) -> Handler:
    """`handler` wrapped in Powertools' Lambda decorators: log context, metrics, tracing.

    Responses are not copied into traces: they can hold private task data and X-Ray segments
    are capped at 64 KB."""
    # An invocation that counted nothing (a read) is normal, not worth a warning each time.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    stage = os.environ.get("BENCH_STAGE")
    if stage:
        metrics.set_default_dimensions(stage=stage)
    snapstart.install()
    wrapped = metrics.log_metrics(_as_function(handler))
    if tracing_enabled():
        wrapped = _traced_from_first_call(wrapped)
    # the decorators keep the handler's signature; their stubs say only Callable
    return cast(Handler, logger.inject_lambda_context(wrapped, clear_state=True))


def _traced_from_first_call(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` traced by X-Ray, the tracer built when the first invocation starts, not at
    import: building it loads the X-Ray SDK and patches botocore (about 150 ms), which would
    put the badge's import over its budget. The first request imports botocore for the store
    anyway, and patching happens before any client is made, so every DynamoDB call is traced."""
    traced: Callable[..., Any] | None = None

    @functools.wraps(handler)
    def handler_(event: Any, context: Any) -> Any:
        nonlocal traced
        if traced is None:
            traced = tracer().capture_lambda_handler(handler, capture_response=False)
        return traced(event, context)

    return handler_


def _as_function(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` as a plain function called `handler`: Powertools names the X-Ray subsegment
    after `__name__`, which an adapter object such as Mangum does not have."""
    if hasattr(handler, "__name__"):
        return handler

    def handler_(event: Any, context: Any) -> Any:
        return handler(event, context)

    handler_.__name__ = handler_.__qualname__ = "handler"
    return handler_
