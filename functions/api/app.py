"""Lambda entry point for the JSON read API (`/api/...`, failure insights included) and
`GET /healthz` (HTTP API, 2.0)."""

from bench_core.http import api, create_app, health, insights
from bench_core.telemetry import instrument
from mangum import Mangum

app = create_app(api.router, insights.router, health.router)
handler = instrument(Mangum(app, lifespan="off"))
