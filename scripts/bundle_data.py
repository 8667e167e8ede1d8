"""Put the repository's `benchmarks/` data where an installed bench_core finds it: the judge's
prompts beside `evals/prompts.py`, each suite folder under `benchmarks/suites/`.

The files live once, in `benchmarks/`; the layer build (layers/core/Makefile) and the wheel
build (setup.py) both call this, so the two packagings cannot disagree.

    python scripts/bundle_data.py <a bench_core folder being packaged>
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "benchmarks"
PROMPTS = "eval-prompts.md"


def suite_folders(source: Path = SOURCE) -> list[Path]:
    return sorted(p for p in source.iterdir() if (p / "manifest.json").is_file())


def bundle(package: Path, source: Path = SOURCE) -> list[Path]:
    """Copy the data into `package` (a bench_core folder); the files written."""
    (package / "evals").mkdir(parents=True, exist_ok=True)
    written = [Path(shutil.copy2(source / PROMPTS, package / "evals" / PROMPTS))]
    suites = package / "benchmarks" / "suites"
    for folder in suite_folders(source):
        target = suites / folder.name
        shutil.copytree(folder, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        written += sorted(p for p in target.rglob("*") if p.is_file())
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "evals").is_dir():
        sys.exit(__doc__)
    bundle(Path(sys.argv[1]))
