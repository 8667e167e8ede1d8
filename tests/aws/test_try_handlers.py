"""The /try sandbox on Lambda: the runs its demo finishes are sent to the eval queue, as
ingest's are, and DashboardFunction's role may send them."""

from __future__ import annotations

import json

import pytest

from tests.aws import test_live_handlers as live_feed
from tests.aws.test_handlers import assert_granted
from tests.aws.test_live_handlers import _deployment  # noqa: F401 - the fixtures
from tests.aws.test_live_handlers import live as _live  # noqa: F401


def test_a_sandbox_demo_run_is_sent_to_the_eval_queue(request: pytest.FixtureRequest) -> None:
    live: live_feed.LiveSite = request.getfixturevalue("_live")
    live_feed.test_the_dashboard_and_a_sandbox_demo_run_on_lambda(live)
    sent = [params for who, _, operation, params in live.site.aws.calls
            if (who, operation) == ("DashboardFunction", "SendMessage")]
    assert sent, "the demo's finished run was never handed to an eval"
    assert {p["QueueUrl"] for p in sent} == {live.site.refs["EvalQueue"]}
    assert all(json.loads(p["MessageBody"])["agent"].startswith("try--") for p in sent)
    assert "DashboardFunction" in assert_granted(live.transformed, live.site.aws.calls,
                                                  ["DashboardFunction"])
