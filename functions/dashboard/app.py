"""Lambda entry point for accounts (HTTP API, 2.0): sign-in and out, the owner's dashboard,
`bench login`'s device flow, the /try sandbox (its demo ingests and pushes live, as
functions/ingest does), `/live-token` for pages connecting to the WebSocket API, and the
owner's page of grants to call an agent (`/dashboard/agents/{slug}/reuse`), and the run
page's feedback form (`/dashboard/agents/{slug}/runs/{run}/feedback`), and an agent's alerts
(`/dashboard/agents/{slug}/alerts`)."""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import (
        alerts_dashboard,
        auth,
        create_app,
        dashboard,
        device,
        feedback,
        live,
        reuse_dashboard,
        trial,
    )
    from mangum import Mangum

    app = create_app(auth.router, device.api_router, device.router, dashboard.router,
                     reuse_dashboard.router, trial.router, live.router, feedback.form_router,
                     alerts_dashboard.router)
handler = instrument(Mangum(app, lifespan="off"))
