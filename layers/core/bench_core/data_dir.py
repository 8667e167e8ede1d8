"""The local server's data directory (`BENCH_DATA_DIR`, default `./.bench`): private telemetry,
the session secret and invocation secrets live there, so it is made for this user alone (0700,
its files 0600).

A directory that already exists is left as it is, even when others may read it: it may be one
the deployer chose and shares on purpose (a group's directory, a mount), and its files are
0600 whatever it is. `loose_mode` lets the server say so at start.
"""

from __future__ import annotations

import stat
from pathlib import Path

PRIVATE_DIR = 0o700


def private_directory(path: Path) -> None:
    """Make `path` (and missing parents, with the usual mode) if it is not there, 0700."""
    try:
        path.mkdir(mode=PRIVATE_DIR, parents=True)
    except FileExistsError:
        return
    path.chmod(PRIVATE_DIR)  # mkdir's mode passes through the umask, which could narrow it


def loose_mode(path: Path) -> int | None:
    """The permission bits of `path` if its group or others have any; None otherwise (or if it
    is not there yet)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    return mode if mode & 0o077 else None
