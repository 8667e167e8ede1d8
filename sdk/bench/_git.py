"""The commit checked out in a directory, read from its ``.git`` files: no ``git`` process (which
may be missing, slow or prompt), nothing raised, nothing written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

SHORT = 7
"""Hex digits kept of a commit, as ``git log --oneline`` shows them."""
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_MOST_PARENTS = 64


def head_commit(start: Optional[Path] = None) -> Optional[str]:
    """The short hash of the commit checked out in ``start`` (default: the working directory)
    or the nearest directory above it holding ``.git``; None where there is none or it cannot
    be read (a detached worktree, a shallow clone and a submodule are read like any other)."""
    try:
        git_dir = _git_dir((start or Path.cwd()).resolve())
        if git_dir is None:
            return None
        sha = _resolve(git_dir, (git_dir / "HEAD").read_text(encoding="utf-8").strip())
    except Exception:  # a symlink loop, a directory gone: no version, never an error
        return None
    return sha[:SHORT] if sha else None


def _git_dir(directory: Path) -> Optional[Path]:
    for candidate in [directory, *directory.parents][:_MOST_PARENTS]:
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:"):].strip())
                return target if target.is_absolute() else (candidate / target).resolve()
            return None
    return None


def _resolve(git_dir: Path, head: str) -> Optional[str]:
    """HEAD's commit: HEAD itself when detached, else its branch's, from the loose ref or
    ``packed-refs`` (in the common directory of a worktree)."""
    if _SHA.match(head):
        return head
    if not head.startswith("ref:"):
        return None
    ref = head[len("ref:"):].strip()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for place in (git_dir, common):
        loose = place / ref
        if loose.is_file():
            sha = loose.read_text(encoding="utf-8").strip()
            return sha if _SHA.match(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and _SHA.match(sha):
                return sha
    return None
