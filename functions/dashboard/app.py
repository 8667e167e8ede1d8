"""Lambda entry point for accounts (HTTP API, 2.0): sign-in and out, the owner's dashboard,
`bench login`'s device flow, the /try sandbox (its demo ingests and pushes live, as
functions/ingest does), and `/live-token` for pages connecting to the WebSocket API."""

from bench_core.http import auth, create_app, dashboard, device, live, try_
from bench_core.telemetry import instrument
from mangum import Mangum

app = create_app(auth.router, device.api_router, device.router, dashboard.router, try_.router,
                 live.router)
handler = instrument(Mangum(app, lifespan="off"))
