"""The LiveFeed port's adapters (the port: `ports/live.py`): `local.py` in one process, `apigw.py`
over API Gateway WebSockets."""
