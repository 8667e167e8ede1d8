"""Lambda entry point for the WebSocket API's `$connect`, `$disconnect` and `$default` routes
(the live feed): `$connect` authorises and records the connection, `$disconnect` forgets it,
`$default` answers pings. Ingest pushes to the recorded connections."""

from bench_core.lambdas.websocket import WebSocketRoutes
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(WebSocketRoutes())
