"""The server's wheel holds every data file bench_core reads at run time (templates, static
files, the price table, the judge's prompts, benchmark suites): a file missing from
`package-data` works from the repository and fails only once installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.aws import cfn
from tests.aws.test_packaging import index_reachable

PACKAGE = cfn.REPO / "layers" / "core" / "bench_core"


def data_files() -> set[str]:
    """bench_core's files other than Python source and bytecode, as wheel paths."""
    return {"bench_core/" + path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts}


@pytest.mark.network
@pytest.mark.timeout(300)
def test_the_wheel_holds_every_data_file(tmp_path: Path) -> None:
    if not index_reachable():
        pytest.skip("the package index is unreachable (the build backend comes from it)")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(cfn.REPO / name, source / name)
    shutil.copytree(PACKAGE, source / "layers" / "core" / "bench_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "-w", str(tmp_path / "dist"), str(source)],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("bench_server-*.whl")
    wanted = data_files()
    assert {"bench_core/domain/prices.json", "bench_core/evals/eval-prompts.md"} <= wanted
    missing = wanted - set(zipfile.ZipFile(wheel).namelist())
    assert not missing, f"not in the wheel (add them to package-data): {sorted(missing)}"
