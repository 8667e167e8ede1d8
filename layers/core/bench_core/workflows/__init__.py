"""The Workflows port's adapters (the port: `ports/workflows.py`): `local.py` in process,
`stepfunctions.py` on AWS, `none.py` where nothing runs in the background."""
