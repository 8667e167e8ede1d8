"""The `Custom::TableMigration` resource of template.yaml: on Create and Update, the table's
migration (`store/dynamodb/migration.py`, through `runtime.adapters.migrate_store`); on Delete,
nothing.

A custom resource, because `sam deploy` is all a self-hoster runs: the resource's `Code`
property is the core layer's version, so every deployment that brings new code runs it (with
that code), and none needs a step to remember. Once the table is through, a deployment costs
it one GetItem.

It never fails the deployment. Reads take an older layout as it is and never write, so an
unfinished migration changes no answer; a FAILED answer would roll back the whole stack update
for work that can wait. A pass that runs out of the function's time (a very big table) or
fails answers SUCCESS with `done` "False" (the error logged and in `error`), and the next
deployment, or `bench-server migrate`, goes on where it stopped.
"""

from __future__ import annotations

import time
from typing import Any

from ..log import logger
from ..runtime.adapters import migrate_store
from ..settings import Settings
from .secret_resource import send_answer

MARGIN_S = 30
"""Time left for recording where the pass stopped and answering CloudFormation."""


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Answer one CloudFormation custom-resource request; returns the answer it sent."""
    answer: dict[str, Any] = {"Status": "SUCCESS", "PhysicalResourceId": "table-migration",
                              "StackId": event.get("StackId"), "RequestId": event.get("RequestId"),
                              "LogicalResourceId": event.get("LogicalResourceId"), "Data": {}}
    if event.get("RequestType") in ("Create", "Update"):
        budget = max(0.0, context.get_remaining_time_in_millis() / 1000 - MARGIN_S)
        try:
            report = migrate_store(Settings.from_env(), deadline=time.monotonic() + budget)
            answer["Data"] = {key: str(value) for key, value in report.items()}
            logger.info("table migration", extra={"migration": report})
        except Exception as exc:  # answered, never raised: see the module docstring
            logger.exception("table migration stopped")
            answer["Data"] = {"done": "False", "error": f"{type(exc).__name__}: {exc}"[:900]}
    send_answer(event["ResponseURL"], answer)
    return answer
