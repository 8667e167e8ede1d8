"""The server's wheel as a user's pip builds it: from a copy of what its build reads, with no
repository beside it, for the tests of what an installed server holds and does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path("layers") / "core" / "bench_core"
MADE_BY_BUILDS = ("__pycache__", "build", "*.egg-info", "sdk_dist")


def source_tree(target: Path) -> Path:
    """The repository's files that building the server (and `make`) reads, copied to `target`,
    without anything a build or `make` made in the repository."""
    target.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "setup.py", "MANIFEST.in", "Makefile"):
        shutil.copy(REPO / name, target / name)
    for folder in ("scripts", "benchmarks", "sdk", str(PACKAGE)):
        shutil.copytree(REPO / folder, target / folder,
                        ignore=shutil.ignore_patterns(*MADE_BY_BUILDS))
    return target


def make(source: Path, *targets: str) -> None:
    """`make` in `source` with this venv as the one the Makefile set up (its stamps are not
    remade: the copy's files are newer than them)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = sys.prefix
    done = subprocess.run(["make", "-C", str(source), f"VENV={venv}", "-o", f"{venv}/.installed",
                           "-o", f"{venv}/.installed-run", *targets],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def build_sdist(source: Path, out: Path) -> Path:
    """The source distribution of `source` (by setuptools, as `python -m build` makes it)."""
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom setuptools import build_meta\n"
                           "print(build_meta.build_sdist(sys.argv[1]))", str(out)],
                          cwd=source, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


def build_wheel(source: Path, out: Path, *, isolated: bool) -> Path:
    """`pip wheel` of a source tree or sdist. Isolated: the build backend from the package index,
    as a user's pip gets it; else this venv's setuptools, with no network."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                           *([] if isolated else ["--no-build-isolation"]), str(source)],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("bench_server-*.whl")
    return wheel


def sdk_wheel_name() -> str:
    """The file name of the SDK's wheel at sdk/'s version."""
    from bench._version import __version__

    return f"bench_observe-{__version__}-py3-none-any.whl"
