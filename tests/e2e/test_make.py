"""The Makefile a newcomer runs. `make run` installs what the server needs and `make test` adds
the dev extra, in either order, each knowing what the venv already holds (make's own plan, `make
-n`, on a copy of the files it reads). `make demo` sends to the server `make run` would start for
the same PORT and HOST, and says at once, exiting 1, when nothing is there or its runs did not
arrive."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port, serving
from tests.wheel_support import sdk_wheel_name

ROOT = Path(__file__).resolve().parents[2]
RUN_SET = "-e . -e ./sdk"
DEV_SET = '-e ".[dev]" -e ./sdk'
PINS = ["layers/core/requirements.txt",
        *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("functions/*/requirements.txt"))]
"""The versions Lambda runs, pip constraints of both installs (tests/aws/test_pinned_layer.py)."""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The files the Makefile's setup reads, a day old."""
    for name in ("Makefile", "pyproject.toml", "sdk/pyproject.toml", "sdk/bench/_version.py", *PINS):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
        os.utime(tmp_path / name, (0, os.path.getmtime(ROOT / name) - 86400))
    return tmp_path


OUTER_MAKE = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
"""What a `make test` running these tests passes down: a nested make would print its
directories and take the outer one's flags."""


def own_make_env(env: dict[str, str]) -> dict[str, str]:
    """`env` as a make started from a shell sees it, not as a sub-make of `make test`."""
    return {k: v for k, v in env.items() if k not in OUTER_MAKE}


def plan(checkout: Path, target: str) -> str:
    return subprocess.run(["make", "-n", target], cwd=checkout, capture_output=True, text=True,
                          env=own_make_env(dict(os.environ)),
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
    for install in (run, test):
        assert all(f"-c {pins}" in install for pins in PINS), "both sets install Lambda's versions"


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


def make_demo(*assignments: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`make demo` with this venv as the Makefile's (its stamp is not remade); the wait is
    bounded far below what a demo sending to nothing took (74 s)."""
    venv = sys.prefix
    env = {**{k: v for k, v in own_make_env(dict(os.environ)).items()
              if not k.startswith("BENCH_")}, "BENCH_DATA_DIR": str(data_dir)}
    return subprocess.run(["make", "-s", "-C", str(ROOT), f"VENV={venv}", "-o",
                           f"{venv}/.installed-run", "demo", *assignments], env=env,
                          capture_output=True, text=True, timeout=120)


def test_make_demo_sends_to_the_port_make_run_serves_and_reads_its_runs_back(
        tmp_path: Path) -> None:
    with serving(tmp_path / "data") as server:
        port = server.url.rsplit(":", 1)[1]
        done = make_demo(f"PORT={port}", "HOST=0.0.0.0", "DEMO_RUNS=3",
                         data_dir=tmp_path / "data")
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.strip().splitlines()[-1] == (
            f"open {server.url}/u/demo/research-agent and {server.url}/u/demo/tool-agent")
        for slug in ("research-agent", "tool-agent"):
            assert server.get(f"/api/agents/demo/{slug}")["runs"] == 3


def test_make_demo_without_a_server_fails_at_once(tmp_path: Path) -> None:
    port = free_port()
    done = make_demo(f"PORT={port}", data_dir=tmp_path)
    assert done.returncode != 0
    assert f"no Bench answers at http://127.0.0.1:{port}" in done.stderr
    assert "make run" in done.stderr and "open " not in done.stdout


def test_make_demo_at_a_server_with_other_data_says_its_key_is_unknown(tmp_path: Path) -> None:
    with serving(tmp_path / "served") as server:
        done = make_demo(f"PORT={server.url.rsplit(':', 1)[1]}", data_dir=tmp_path / "other")
    assert done.returncode != 0
    assert "does not know the key" in done.stderr and "BENCH_DATA_DIR" in done.stderr
