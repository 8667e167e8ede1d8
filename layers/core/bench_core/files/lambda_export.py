"""The export function's hand-off (`ports/files.py` `ExportHandOff`): Lambda's asynchronous
invoke (`Event`), which queues the job and answers at once; the export function
(`lambdas/export.py`) makes the export."""

from __future__ import annotations

import json
from typing import Any

import boto3


class LambdaExport:
    def __init__(self, function_name: str, client: Any = None) -> None:
        self.function_name = function_name
        self._client = client

    def hand_off(self, job: dict[str, Any]) -> None:
        if self._client is None:  # made by the first hand-off, not at every cold start
            self._client = boto3.client("lambda")
        self._client.invoke(FunctionName=self.function_name, InvocationType="Event",
                            Payload=json.dumps(job).encode())
