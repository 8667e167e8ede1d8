"""Lambda entry point for the public pages (HTTP API, payload format 2.0): the landing page,
profiles and their OG images, run pages and the runs list, the leaderboard and its JSON twin,
compare pages, embeds, the benchmark pages, the static files they use, and the SDK's package
index (`/simple/`, its wheel from the core layer). Unknown addresses
a browser asks this function for get the HTML 404 page."""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import (
        benchmarks,
        create_app,
        embed,
        leaderboard,
        og,
        pages,
        runs,
        sessions,
        simple,
        static,
    )
    from mangum import Mangum

    app = create_app(pages.router, leaderboard.router, leaderboard.api_router, embed.router,
                     og.router, static.router, benchmarks.router, runs.router, simple.router,
                     sessions.router)
    pages.install_error_pages(app)
handler = instrument(Mangum(app, lifespan="off"))
