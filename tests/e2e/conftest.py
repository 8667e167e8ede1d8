"""What the end-to-end tests share: a server on the store a user runs (SQLite), and for the
JavaScript ones the `node` they run and the npm packages they run it with, each set pinned by a
package-lock.json beside its scripts (`make test` installs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningServer, serving


@pytest.fixture(scope="session")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One real server for the session, on SQLite as `make run`'s: end to end means the store
    too (elsewhere the shared server runs on the in-memory store)."""
    with serving(tmp_path_factory.mktemp("bench-e2e-data")) as running:
        yield running


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` binary; skipped where it is not installed, failed instead under
    BENCH_REQUIRE_NODE=1."""
    found = shutil.which("node")
    if found is None:
        if os.environ.get("BENCH_REQUIRE_NODE") == "1":
            pytest.fail("node is not installed but BENCH_REQUIRE_NODE=1")
        pytest.skip("node is not installed")
    return found


@pytest.fixture(scope="session")
def npm_packages(node: str) -> Callable[[Path], Path]:
    """Installs a directory's locked packages (`npm ci`) unless they are there; returns it."""
    def installed(directory: Path) -> Path:
        if not (directory / "node_modules" / ".package-lock.json").is_file():
            npm = shutil.which("npm")
            assert npm, f"npm is needed to install the packages of {directory}"
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=directory, check=True,
                           timeout=300, capture_output=True)
        return directory
    return installed
