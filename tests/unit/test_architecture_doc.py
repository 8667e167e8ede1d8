"""ARCHITECTURE.md stays true: every file or folder it names exists, from the repository root or
from `layers/core/bench_core/` (where its module paths are written from)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "layers" / "core" / "bench_core"
PATH = re.compile(r"^[\w.-]+(/[\w.<>*-]*)*$")


def named_paths(text: str) -> set[str]:
    """Backquoted words that are paths: a slash in them, or a file ending."""
    words = re.findall(r"`([^`\s]+)`", text)
    code = re.findall(r"^```\n(.*?)^```", text, re.S | re.M)
    words += [w for block in code for w in block.split() if "/" in w or w.endswith(".py")]
    return {w for w in words if PATH.match(w) and ("/" in w or re.search(r"\.(py|json|md|yaml)$", w))
            and "<" not in w and "*" not in w}


def exists(path: str) -> bool:
    return any((root / path).exists() for root in (REPO, PACKAGE))


def test_every_path_architecture_md_names_exists() -> None:
    names = named_paths((REPO / "ARCHITECTURE.md").read_text())
    assert len(names) > 40, "the map names the files it maps"
    missing = sorted(n for n in names if not exists(n))
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_a_wrong_path_is_caught() -> None:
    assert not exists("store/no_such_adapter.py")
    assert named_paths("see `store/no_such_adapter.py` and `domain/`") == {"store/no_such_adapter.py", "domain/"}
