"""Lambda entry point for `/mcp`, the public read-only MCP server (HTTP API, payload 2.0).

Mangum's lifespan stays off: the MCP transport and its session manager are made per request
(bench_core.mcp.transport), so a warm instance serves any number of invocations."""

from bench_core.runtime.lambda_instrumentation import instrument, loading

with loading():
    from bench_core.http import create_app, mcp
    from mangum import Mangum

    app = create_app(mcp.router)
handler = instrument(Mangum(app, lifespan="off"))
