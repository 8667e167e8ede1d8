"""The server's wheel holds every data file bench_core reads at run time (templates, static
files, the price table), the data that lives once in the repository's `benchmarks/` (the
judge's prompts, the benchmark suites), where the installed code finds it, and the SDK wheel
`/simple/` serves: a file missing from the wheel works from the repository and fails only once
installed. What `make run` writes into the package (the SDK wheel) is what the wheel holds too,
so the check holds after `make run` as on a fresh clone."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.aws import cfn
from tests.aws.test_packaging import require_index
from tests.wheel_support import PACKAGE as PACKAGE_PATH
from tests.wheel_support import build_sdist, build_wheel, make, sdk_wheel_name, source_tree

PACKAGE = cfn.REPO / PACKAGE_PATH
BENCHMARKS = cfn.REPO / "benchmarks"


def data_files(package: Path) -> set[str]:
    """bench_core's files other than Python source and bytecode, as wheel paths."""
    return {"bench_core/" + path.relative_to(package).as_posix() for path in package.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts}


def bundled_files() -> set[str]:
    """Where the builds put `benchmarks/`: the prompts beside evals/prompts.py, each suite
    folder under benchmarks/suites/."""
    wanted = {"bench_core/evals/eval-prompts.md"}
    for folder in (p for p in BENCHMARKS.iterdir() if (p / "manifest.json").is_file()):
        wanted |= {f"bench_core/benchmarks/suites/{folder.name}/{f.relative_to(folder).as_posix()}"
                   for f in folder.rglob("*") if f.is_file()}
    return wanted


def test_the_prompts_and_suites_exist_once_in_the_tree() -> None:
    assert not (PACKAGE / "evals" / "eval-prompts.md").exists()
    assert not (PACKAGE / "benchmarks" / "suites").exists()
    assert (BENCHMARKS / "eval-prompts.md").is_file()


@pytest.mark.network
@pytest.mark.timeout(600)
def test_the_wheel_holds_every_data_file_and_the_installed_code_finds_it(tmp_path: Path) -> None:
    require_index("the package index is unreachable (the build backend comes from it)")
    source = source_tree(tmp_path / "src")
    make(source, "sdk-wheel")  # what `make run` writes into the package before `make test`
    sdk_wheel = f"bench_core/sdk_dist/{sdk_wheel_name()}"
    wanted = data_files(source / PACKAGE_PATH) | bundled_files()
    assert {"bench_core/domain/prices.json", "bench_core/evals/eval-prompts.md", sdk_wheel} <= wanted
    # as pip builds it from the registry: the sdist, then the wheel from it, each in isolation
    wheel = build_wheel(build_sdist(source, tmp_path / "sdist"), tmp_path / "dist", isolated=True)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = wanted - names
    assert not missing, f"not in the wheel (package-data, or setup.py's additions): {sorted(missing)}"
    assert {n for n in names if n.startswith("bench_core/sdk_dist/")} == {sdk_wheel}
    installed = tmp_path / "installed"
    zipfile.ZipFile(wheel).extractall(installed)
    found = subprocess.run(
        [sys.executable, "-c", "from bench_core.evals.prompts import prompts_path, load_prompt\n"
         "from bench_core.benchmarks.suites import packaged_suites\n"
         "load_prompt('judge')\nprint(prompts_path())\nprint(sorted(packaged_suites()))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"})
    assert found.returncode == 0, found.stderr[-2000:]
    path, suites = found.stdout.splitlines()
    assert path == str(installed / "bench_core" / "evals" / "eval-prompts.md")
    assert suites == str(sorted(p.name for p in BENCHMARKS.iterdir()
                                if (p / "manifest.json").is_file()))
