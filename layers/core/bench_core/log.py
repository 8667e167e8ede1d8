"""The Powertools logger every module shares: JSON lines, with a correlation id per request."""

from __future__ import annotations

from aws_lambda_powertools import Logger

logger = Logger(service="bench")
