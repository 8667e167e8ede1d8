"""Lambda entry point for `GET /badge/{login}/{slug}.svg` (HTTP API, payload format 2.0).

No FastAPI here: a bare Starlette app around the badge renderer (`bench_core.badge_app`) keeps
the import within the badge's 150 ms cold-start goal; the store loads on the first request."""

from bench_core.badge_app import create_badge_app
from bench_core.telemetry import instrument
from mangum import Mangum

app = create_badge_app()
handler = instrument(Mangum(app, lifespan="off"))
