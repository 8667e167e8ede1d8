"""The Store port's adapters (the port: `ports/store.py`): `sqlite/` and `dynamodb/`."""
