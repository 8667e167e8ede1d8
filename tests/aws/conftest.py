"""Fixtures for the AWS tests: never a real account, always the same region."""

from __future__ import annotations

from typing import Any

import pytest

from tests.aws import cfn


@pytest.fixture(autouse=True)
def offline_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region, so nothing here can reach (or bill) a real account."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")


@pytest.fixture(scope="session")
def transformed() -> dict[str, Any]:
    """The template as CloudFormation would run it (transformed once per session)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return cfn.transform()
