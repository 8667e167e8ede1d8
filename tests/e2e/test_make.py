"""The Makefile a newcomer runs. `make run` installs what the server needs and `make test` adds
the dev extra, in either order, each knowing what the venv already holds (make's own plan, `make
-n`, on a copy of the files it reads)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.wheel_support import sdk_wheel_name

ROOT = Path(__file__).resolve().parents[2]
RUN_SET = "pip install --quiet -e . -e ./sdk"
DEV_SET = 'pip install --quiet -e ".[dev]" -e ./sdk'

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The files the Makefile's setup reads, a day old."""
    for name in ("Makefile", "pyproject.toml", "sdk/pyproject.toml", "sdk/bench/_version.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
        os.utime(tmp_path / name, (0, os.path.getmtime(ROOT / name) - 86400))
    return tmp_path


def plan(checkout: Path, target: str) -> str:
    return subprocess.run(["make", "-n", target], cwd=checkout, capture_output=True, text=True,
                          timeout=60, check=True).stdout


def made(checkout: Path, *paths: str) -> None:
    """What a finished recipe leaves: the files, newer than everything they were made from."""
    for path in paths:
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).touch()


def test_make_run_installs_the_server_set_and_make_test_adds_the_dev_extra(checkout: Path) -> None:
    run = plan(checkout, "run")
    assert "-m venv .venv" in run and RUN_SET in run and "[dev]" not in run
    test = plan(checkout, "test")
    assert DEV_SET in test and RUN_SET not in test


def test_make_test_after_make_run_adds_only_the_dev_extra(checkout: Path) -> None:
    made(checkout, ".venv/bin/python", ".venv/.installed-run",
         f"layers/core/bench_core/sdk_dist/{sdk_wheel_name()}")
    assert "pip " not in plan(checkout, "run")
    test = plan(checkout, "test")
    assert DEV_SET in test and "-m venv" not in test and RUN_SET not in test


def test_make_run_after_make_test_installs_nothing(checkout: Path) -> None:
    made(checkout, ".venv/bin/python", ".venv/.installed", ".venv/.installed-run",
         f"layers/core/bench_core/sdk_dist/{sdk_wheel_name()}")
    run = plan(checkout, "run")
    assert "pip " not in run and run.strip().endswith("serve --port 8000 --host 127.0.0.1")
    assert "pip " not in plan(checkout, "test")


def test_a_changed_pyproject_reinstalls_each_set_on_its_own_command(checkout: Path) -> None:
    made(checkout, ".venv/bin/python", ".venv/.installed", ".venv/.installed-run")
    made(checkout, "pyproject.toml")
    run = plan(checkout, "run")
    assert RUN_SET in run and "[dev]" not in run
    assert DEV_SET in plan(checkout, "test")
