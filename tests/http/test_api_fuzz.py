"""Schemathesis against the server's own `/api/openapi.json`, with a real owner key and a real
agent: whatever the schema allows (and a little it does not), the answer is never a 500.

Bounded so it stays quick on two cores: a handful of examples per operation, no shrinking
deadline. `POST .../invoke` is left out: an owner may call its own published agent, which
would send requests to whatever endpoint the fuzzer published.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.conftest import RunningServer, start_server
from tests.factories import batch, task_events
from tests.http.test_ingest_http import new_login, post

EXAMPLES = 8


@dataclass
class Target:
    server: RunningServer
    login: str
    key: str


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    running, server, thread = start_server(Path(tmp_path_factory.mktemp("fuzz")), store="memory")
    login = new_login()
    key = running.create_key(login)
    events = task_events("t1", cost=0.01) + task_events("t2", status="failed", output="x")
    assert post(running, batch("agent", events), key).status_code == 200
    yield Target(running, login, key)
    server.should_exit = True
    thread.join(timeout=10)


def fuzz(operation: schemathesis.APIOperation, mode: GenerationMode, target: Target,
         failures: list[str]) -> None:
    """EXAMPLES cases of `operation`, each sent with the owner's key; 500s noted in `failures`."""
    path = {"login": target.login, "slug": "agent"} if "{login}/{slug}" in operation.path else None

    @given(operation.as_strategy(mode, path_parameters=path))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    def run(case: schemathesis.Case) -> None:
        response = case.call(base_url=target.server.url, timeout=30,
                             headers={**(case.headers or {}), "X-Bench-Key": target.key})
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path} {case.query} "
                            f"{str(case.body)[:200]} -> {response.status_code}")

    try:
        run()
    except Unsatisfiable:  # nothing in the schema to violate (negative mode)
        assert mode is GenerationMode.NEGATIVE


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_input_makes_a_500(target: Target, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(f"{target.server.url}/api/openapi.json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.exclude(path_regex=r"/invoke$")
                  .get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        fuzz(operation, mode, target, failures)
    assert not failures, "\n".join(failures)
