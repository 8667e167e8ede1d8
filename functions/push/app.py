"""Lambda entry point for the live push: a batch an ingesting function handed off (an
asynchronous invoke), posted to the WebSocket connections watching its agent."""

from bench_core.lambdas.live_push import LivePush
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(LivePush())
