"""Regression alerts: running an agent's monitors (`monitor.py`) and telling its owner
(`delivery.py`: signed webhooks and Slack)."""
