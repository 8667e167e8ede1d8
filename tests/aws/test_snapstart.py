"""SnapStart, opt-in (the `SnapStart` parameter): the functions that gain most publish versions
behind an alias the API calls, and an environment resumed from a snapshot renews what must not
be shared between environments. The runtime's hook library (`snapshot_restore_py`, part of
Lambda's Python runtime, not of this tree) is stood in for by one that records the hooks and
runs them as Lambda does: before the snapshot, then after each restore."""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from bench_core.runtime import snapstart

from tests.aws import cfn
from tests.aws.test_handlers import Deployment
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.aws.test_mcp_handler import PROTOCOL, rpc

SNAPSTART_FUNCTIONS = ("McpFunction", "WebFunction")


class RuntimeHooks:
    """What Lambda's runtime does with registered hooks: before-snapshot hooks in reverse order
    of registration, after-restore hooks in order."""

    def __init__(self) -> None:
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def module(self) -> types.ModuleType:
        module = types.ModuleType("snapshot_restore_py")
        module.register_before_snapshot = self.before.append  # type: ignore[attr-defined]
        module.register_after_restore = self.after.append  # type: ignore[attr-defined]
        return module

    def snapshot(self) -> None:
        for hook in reversed(self.before):
            hook()

    def restore(self) -> None:
        for hook in self.after:
            hook()


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[RuntimeHooks]:
    runtime = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", runtime.module())
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    monkeypatch.setattr(snapstart, "_installed", False)
    monkeypatch.setattr(snapstart, "_resets", [])
    yield runtime


def test_a_restored_mcp_function_draws_fresh_randomness_and_builds_fresh_clients(
        hooks: RuntimeHooks, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    site: Deployment = request.getfixturevalue("_deployment")
    module = site.api.module("McpFunction")  # the init phase, snapshotted
    assert hooks.before and hooks.after, "the handler's init registers the hooks"
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # a fresh runtime's boto3
    hooks.snapshot()
    session = boto3.DEFAULT_SESSION
    assert session is not None and session._session._credentials is None, \
        "priming loads service models but resolves no credentials into the snapshot"
    in_snapshot = random.getstate()
    hello = {"protocolVersion": PROTOCOL, "capabilities": {},
             "clientInfo": {"name": "tests", "version": "1"}}
    assert rpc(site, "initialize", hello).status == 200
    before = module.app.state.services
    assert before is not None

    draws = []
    for _ in range(2):  # two environments resumed from the same snapshot
        random.setstate(in_snapshot)
        hooks.restore()
        draws.append(random.random())
        assert module.app.state.services is None, "clients made before the restore are dropped"
    assert draws[0] != draws[1], "each restored environment has its own random state"
    assert rpc(site, "initialize", hello).status == 200
    assert module.app.state.services is not None and module.app.state.services is not before


def test_outside_a_snapshot_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
    monkeypatch.setattr(snapstart, "_installed", False)
    monkeypatch.setattr(snapstart, "_resets", [])
    assert snapstart.install() is False
    snapstart.on_restore(lambda: None)
    assert snapstart._resets == []


def test_snapstart_is_opt_in_and_the_api_calls_the_published_alias(
        transformed: dict[str, Any]) -> None:
    template = cfn.load_template()
    assert template["Parameters"]["SnapStart"]["Default"] == "off"
    assert template["Conditions"]["UseSnapStart"] == {"Fn::Equals": [{"Ref": "SnapStart"}, "on"]}
    routes = cfn.http_routes(transformed)
    for function_id in SNAPSTART_FUNCTIONS:
        props = template["Resources"][function_id]["Properties"]
        assert props["AutoPublishAlias"] == "live"
        assert props["SnapStart"] == {"Fn::If": ["UseSnapStart", {"ApplyOn": "PublishedVersions"},
                                                 {"Ref": "AWS::NoValue"}]}
        body = transformed["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]
        uris = [op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
                for path, ops in body.items() for op in ops.values()
                if any(r.path == path and r.function == function_id for r in routes)]
        assert uris and all(f"${{{function_id}Aliaslive}}" in u for u in uris), function_id
    others = [f for f in cfn.functions(transformed) if f not in SNAPSTART_FUNCTIONS]
    assert not [f for f in others if "SnapStart" in transformed["Resources"][f]["Properties"]]
