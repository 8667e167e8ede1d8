"""The one definition of Bench's DynamoDB table, in CloudFormation `Properties` form.

`template.yaml` declares the same properties (a test checks they are equal) and the DynamoDB
tests create their moto table from the template, so store, tests and deployment cannot drift.

The key design (which item lives under which keys) is in each concern's docstring
(`ingest.py`, `agents.py`, ...).

Indexes, each projecting only what its queries read (an index write costs a write unit per
entry, so an entry that nothing reads, or that changes whenever its item does, is paid for on
every batch):

- `gsi1`, `gsi2` (ALL): the cold listings that read whole items: API keys, an owner's agents,
  live connections, benchmark suites, benchmark runs and their rankings.
- `tasks` (`tlpk`, `tlsk`) and `tstatus` (`tspk`, `tssk`), KEYS_ONLY: an agent's runs (its
  root tasks), all and by status, newest first; the page's tasks are then read by key. A
  subtask is in neither: a task's subtasks are read from its run's `spans` (each row names
  its parent), so the write of a span makes one index entry, not three. Updating a task
  (its cost, its eval) touches no index unless its listing keys move.
  `tasks` also holds, under partitions of their own (`SESSIONQ#{n}`), the sessions awaiting
  the session judge (`codec/sessions.py`): keys only, so their counters' updates on every
  batch write no entry.
- `lb_runs`, `lb_success`, `lb_score`, `lb_cost`, `lb_latency`: the leaderboard, sparse (the
  sort key exists only while an agent qualifies) and spread over `leaderboard.SHARDS`
  partitions `lbpk` = LB#{n} (absent while the agent is unlisted); they carry only `lb_text`,
  what `q=` filters on, and the page's agents are then read by key.
- `spans` (`spk` = RUN#{login}#{slug}#{run_id}, `ssk` = {sort_ts}#{task_id}), INCLUDE `row` and
  `moved_at`: every task below a run's root, by start, with the one small text the run page
  draws of it (`codec/spans.py`), so the page of a 1,000-span run reads some 300 KB of
  entries whatever the spans hold; content is read by key, only what is shown (a pack of a
  trace's spans has one entry holding their rows, `codec/packs.py`). Sparse: roots
  stay out (their evals and costs change after they end; they are read by key), and so do
  placeholders.
- `runs` (`gsi3pk`, `gsi3sk`), ALL: what `spans` replaces, which copied every span's content
  into the index (a read of the run page billed it all; every write of a span rewrote it).
  No longer written: the table's migration moves its entries to `spans`, reads take those it
  has not reached yet, and the next deployment drops it (CloudFormation adds or drops one
  index per update).

`expires_at` (epoch seconds) is the TTL attribute for anything temporary.
"""

from __future__ import annotations

from typing import Any

LEADERBOARD_KEYS = ("lb_runs", "lb_success", "lb_score", "lb_cost", "lb_latency")
TASK_INDEXES = (("spans", "spk", "ssk"), ("runs", "gsi3pk", "gsi3sk"), ("tasks", "tlpk", "tlsk"),
                ("tstatus", "tspk", "tssk"))
"""The indexes of task items: a run's spans (INCLUDE their rows; `runs`, ALL, as older code
wrote them), listings and listings by status (KEYS_ONLY)."""
SPAN_ROW = ("row", "moved_at")
"""What `spans` projects besides the keys (`codec/spans.py`)."""
_PROJECTIONS = {"spans": ("INCLUDE", SPAN_ROW), "runs": ("ALL", ())}


def _index(name: str, pk: str, sk: str, projection: str = "ALL",
           included: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"ProjectionType": projection}
    if included:
        spec["NonKeyAttributes"] = list(included)
    return {"IndexName": name,
            "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"},
                          {"AttributeName": sk, "KeyType": "RANGE"}],
            "Projection": spec}


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
        *({"AttributeName": k, "AttributeType": "S"} for _, pk, sk in TASK_INDEXES
          for k in (pk, sk)),
        {"AttributeName": "lbpk", "AttributeType": "S"},
        *({"AttributeName": k, "AttributeType": "N"} for k in LEADERBOARD_KEYS),
    ],
    "GlobalSecondaryIndexes": [
        _index("gsi1", "gsi1pk", "gsi1sk"),
        _index("gsi2", "gsi2pk", "gsi2sk"),
        *(_index(name, pk, sk, *_PROJECTIONS.get(name, ("KEYS_ONLY", ())))
          for name, pk, sk in TASK_INDEXES),
        *(_index(k, "lbpk", k, "INCLUDE", ("lb_text",)) for k in LEADERBOARD_KEYS),
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
