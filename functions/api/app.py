"""Lambda entry point for the JSON read API (`/api/...`, failure insights, runs with their spans,
feedback on runs and the owner's annotation queue, benchmark runs, capability cards, grants
and usage, an agent's alerts included) and
`GET /healthz` (HTTP API, 2.0)."""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import (
        alerts,
        annotation_queue,
        api,
        benchmarks,
        create_app,
        feedback,
        health,
        insights,
        reuse,
        runs,
        sessions,
    )
    from mangum import Mangum

    app = create_app(api.router, insights.router, benchmarks.api_router, reuse.router,
                     runs.api_router, feedback.api_router, alerts.router,
                     annotation_queue.router, sessions.api_router, health.router)
handler = instrument(Mangum(app, lifespan="off"))
