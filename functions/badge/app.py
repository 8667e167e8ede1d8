"""Lambda entry point for `GET /badge/{login}/{slug}.svg` (HTTP API, payload format 2.0).

No FastAPI, Starlette or Mangum: the handler reads API Gateway's event itself
(`bench_core.lambdas.badge`), which keeps the import within the badge's 150 ms cold-start goal; the
store loads on the first request."""

from bench_core.lambdas.badge import ROUTES, lambda_handler
from bench_core.runtime.lambda_instrumentation import instrument

__all__ = ["ROUTES", "handler"]

handler = instrument(lambda_handler())
