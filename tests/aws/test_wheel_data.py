"""The server's wheel holds every data file bench_core reads at run time (templates, static
files, the price table) and the data that lives once in the repository's `benchmarks/` (the
judge's prompts, the benchmark suites), where the installed code finds it: a file missing from
the wheel works from the repository and fails only once installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.aws import cfn
from tests.aws.test_packaging import require_index

PACKAGE = cfn.REPO / "layers" / "core" / "bench_core"
BENCHMARKS = cfn.REPO / "benchmarks"


def data_files() -> set[str]:
    """bench_core's files other than Python source and bytecode, as wheel paths."""
    return {"bench_core/" + path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*")
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
@pytest.mark.timeout(300)
def test_the_wheel_holds_every_data_file_and_the_installed_code_finds_it(tmp_path: Path) -> None:
    require_index("the package index is unreachable (the build backend comes from it)")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "setup.py", "MANIFEST.in"):
        shutil.copy(cfn.REPO / name, source / name)
    (source / "scripts").mkdir()
    shutil.copy(cfn.REPO / "scripts" / "bundle_data.py", source / "scripts")
    shutil.copytree(BENCHMARKS, source / "benchmarks")
    shutil.copytree(PACKAGE, source / "layers" / "core" / "bench_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "-w", str(tmp_path / "dist"), str(source)],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("bench_server-*.whl")
    wanted = data_files() | bundled_files()
    assert {"bench_core/domain/prices.json", "bench_core/evals/eval-prompts.md"} <= wanted
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = wanted - names
    assert not missing, f"not in the wheel (package-data, or setup.py's bundling): {sorted(missing)}"
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
