"""Lambda entry point for `POST /ingest` and OTLP's `POST /v1/traces` (HTTP API, payload 2.0).

Mounts only the two ingest routers, so the function imports nothing it does not serve.
"""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import create_app, ingest, otlp
    from mangum import Mangum

    app = create_app(ingest.router, otlp.router)
handler = instrument(Mangum(app, lifespan="off"))
