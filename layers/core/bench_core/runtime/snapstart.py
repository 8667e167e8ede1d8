"""Lambda SnapStart (template.yaml's `SnapStart` parameter): a function's initialised memory is
snapshotted once per published version and every new execution environment resumes from it, so
whatever the snapshot holds is shared by all of them. What must not be shared is renewed when
an environment resumes:

- the `random` module's state (seeded once at import: every restored environment would draw the
  same "random" numbers, e.g. the same backoff jitter and judge sampling); `secrets` and
  `uuid.uuid4` read the OS's randomness and need nothing;
- anything registered with `on_restore`: the lazily built `Services` (their AWS clients hold
  connections and credentials of the environment that made them), caches of secrets.

Before the snapshot, `prime` loads the AWS service models the functions use (what a client's
first construction spends its time on) without creating a client: no connection and no
credentials go into the snapshot.

The hooks come from `snapshot_restore_py`, which Lambda's Python runtime provides; `install`
registers them only in an environment initialised for a snapshot
(`AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`), and does nothing anywhere else.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

SNAPSHOT_INIT = "snap-start"
PRIMED_SERVICES = ("dynamodb", "stepfunctions", "ssm")

_resets: list[Callable[[], None]] = []
_installed = False


def snapshotting() -> bool:
    """Whether this environment is being initialised for a snapshot."""
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == SNAPSHOT_INIT


def on_restore(reset: Callable[[], None]) -> Callable[[], None]:
    """Run `reset` whenever this environment resumes from a snapshot (kept only where there
    will be one: elsewhere, as in tests building many apps, nothing is held on to)."""
    if snapshotting():
        _resets.append(reset)
    return reset


def restored() -> None:
    """What runs after a restore: fresh random state, then every registered reset."""
    random.seed()
    for reset in _resets:
        reset()
    from aws_lambda_powertools.utilities import parameters

    clear: Callable[[], None] = parameters.clear_caches
    clear()


def prime() -> None:
    """Load the service models the store and workflows use into boto3's default session."""
    import boto3

    session = boto3.DEFAULT_SESSION or boto3.setup_default_session() or boto3.DEFAULT_SESSION
    assert session is not None
    for service in PRIMED_SERVICES:
        session._session.get_service_model(service)


def install() -> bool:
    """Register the hooks when this environment is being initialised for a snapshot; whether
    it registered them."""
    global _installed
    if _installed or not snapshotting():
        return _installed
    from snapshot_restore_py import register_after_restore, register_before_snapshot

    register_before_snapshot(prime)
    register_after_restore(restored)
    _installed = True
    return True
