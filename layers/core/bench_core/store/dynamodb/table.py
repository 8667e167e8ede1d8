"""The one definition of Bench's DynamoDB table, in CloudFormation `Properties` form.

`template.yaml` declares the same properties (a test checks they are equal) and the DynamoDB
tests create their moto table from the template, so store, tests and deployment cannot drift.

The key design (which item lives under which keys) is in each concern's docstring
(`ingest.py`, `agents.py`, ...).

Leaderboard: sparse GSIs whose partition key `lbpk` ("PUBLIC") is set only on public agents and
whose sort keys (`lb_runs`, `lb_success`, `lb_score`, `lb_cost`, `lb_latency`) are set only once
an agent qualifies for that ranking, so each sort mode is one Query, never a Scan.
Runs: `gsi3` holds every task under `RUN#{login}#{slug}#{run_id}` (`gsi3pk`), so all spans of a
run come back from one Query (`dynamodb_runs`).
`expires_at` (epoch seconds) is the TTL attribute for anything temporary.
"""

from __future__ import annotations

from typing import Any

LEADERBOARD_KEYS = ("lb_runs", "lb_success", "lb_score", "lb_cost", "lb_latency")


def _index(name: str, pk: str, sk: str) -> dict[str, Any]:
    return {"IndexName": name,
            "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"},
                          {"AttributeName": sk, "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"}}


TABLE_PROPERTIES: dict[str, Any] = {
    "BillingMode": "PAY_PER_REQUEST",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                  {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
        {"AttributeName": "gsi1pk", "AttributeType": "S"},
        {"AttributeName": "gsi1sk", "AttributeType": "S"},
        {"AttributeName": "gsi2pk", "AttributeType": "S"},
        {"AttributeName": "gsi2sk", "AttributeType": "S"},
        {"AttributeName": "gsi3pk", "AttributeType": "S"},
        {"AttributeName": "gsi3sk", "AttributeType": "S"},
        {"AttributeName": "lbpk", "AttributeType": "S"},
        *({"AttributeName": k, "AttributeType": "N"} for k in LEADERBOARD_KEYS),
    ],
    "GlobalSecondaryIndexes": [
        _index("gsi1", "gsi1pk", "gsi1sk"),
        _index("gsi2", "gsi2pk", "gsi2sk"),
        _index("gsi3", "gsi3pk", "gsi3sk"),
        *(_index(k, "lbpk", k) for k in LEADERBOARD_KEYS),
    ],
    "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
}


def create_table_kwargs(table_name: str, properties: dict[str, Any] | None = None
                        ) -> dict[str, Any]:
    """`CreateTable` arguments for boto3 from CloudFormation properties (tests, local setup)."""
    props = properties or TABLE_PROPERTIES
    return {"TableName": table_name, "BillingMode": props["BillingMode"],
            "KeySchema": props["KeySchema"], "AttributeDefinitions": props["AttributeDefinitions"],
            "GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"]}
