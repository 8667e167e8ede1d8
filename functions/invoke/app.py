"""Lambda entry point for calls to published agents through Bench (HTTP API, 2.0):
`POST /api/agents/{login}/{slug}/invoke`; the one function that calls out to the internet."""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import create_app, reuse
    from mangum import Mangum

    app = create_app(reuse.invoke_router)
handler = instrument(Mangum(app, lifespan="off"))
