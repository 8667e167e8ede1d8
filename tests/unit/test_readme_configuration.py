"""The README's Configuration table stays true: every `BENCH_*` variable the server reads is
in it, and it names no variable that nothing reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAME = re.compile(r"BENCH_[A-Z0-9_]+")


def names_in_code(root: Path) -> set[str]:
    """String constants that are exactly a `BENCH_*` name: what `os.environ` is asked for."""
    return {node.value for path in root.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and NAME.fullmatch(node.value)}


def names_in_readme_table() -> set[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `BENCH_")]
    return {name for row in rows for name in NAME.findall(row.split("|")[1])}


def test_every_server_setting_is_documented() -> None:
    server = names_in_code(REPO / "layers" / "core" / "bench_core")
    assert {"BENCH_LLM", "BENCH_EMBEDDER", "BENCH_JUDGE_DAILY_BUDGET_USD"} <= server
    missing = server - names_in_readme_table()
    assert not missing, f"add to README.md's Configuration table: {sorted(missing)}"


def test_the_table_names_only_settings_that_are_read() -> None:
    stale = names_in_readme_table() - names_in_code(REPO / "layers" / "core" / "bench_core")
    assert not stale, f"README.md documents settings nothing reads: {sorted(stale)}"
