"""``bench.verify_invocation`` refuses a replayed call for as long as its signature lives,
however many other calls the agent takes meanwhile."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

import bench
from bench._reuse import MAX_AGE_S
from bench_core.reuse.call_signature import signed_headers

BODY = b'{"input": "hello"}'


def signed(secret: str, call_id: str, at: float) -> dict[str, str]:
    """Headers as the server signs a call to ``/echo`` at ``at``."""
    return signed_headers(secret, int(at), call_id, "alice", "bob/agent", "/echo", BODY)


def test_a_replay_is_refused_however_many_calls_came_between() -> None:
    secret, now = f"bis_{secrets.token_hex(8)}", time.time()
    first = signed(secret, "call-first", now)
    assert bench.verify_invocation(secret, first, BODY, path="/echo") == "alice"
    for i in range(10_000):
        assert bench.verify_invocation(secret, signed(secret, f"call-{i}", now), BODY, path="/echo") == "alice"
    assert bench.verify_invocation(secret, first, BODY, path="/echo") is None, "still live: a replay"


def test_a_replay_is_refused_until_the_last_second_of_its_signature() -> None:
    secret, start = f"bis_{secrets.token_hex(8)}", float(int(time.time()))
    call = signed(secret, "call-once", start)
    assert bench.verify_invocation(secret, call, BODY, now=start) == "alice"
    for i in range(3):  # other calls, later
        later = start + MAX_AGE_S - 2 + i
        assert bench.verify_invocation(secret, signed(secret, f"other-{i}", later), BODY, now=later) == "alice"
    assert bench.verify_invocation(secret, call, BODY, now=start + MAX_AGE_S) is None
    assert bench.verify_invocation(secret, call, BODY, now=start + MAX_AGE_S + 1) is None, "expired"


def test_expired_calls_are_forgotten() -> None:
    """What it holds stays bounded by the calls of one signature lifetime."""
    from bench._reuse import _SEEN

    secret, start = f"bis_{secrets.token_hex(8)}", float(int(time.time()))
    for i in range(100):
        assert bench.verify_invocation(secret, signed(secret, f"old-{i}", start), BODY, now=start) == "alice"
    held = len(_SEEN._until)
    much_later = start + 10 * MAX_AGE_S
    assert bench.verify_invocation(secret, signed(secret, "new", much_later), BODY, now=much_later) == "alice"
    assert len(_SEEN._until) <= held - 100 + 1


def test_a_recorded_call_cannot_be_passed_off_as_the_other_version() -> None:
    """A signature verifies only under its own version's fields (v2: six, with the call id and
    the path; v1: four). A recorded v2 call relabelled ``v1=``, which has no call id to refuse
    as a replay and no path to check, is refused; so is a v1 signature labelled ``v2=``."""
    secret, now = f"bis_{secrets.token_hex(8)}", time.time()
    call = signed(secret, "call-relabelled", now)
    v2_digest = call["X-Bench-Signature"].removeprefix("v2=")
    v1_message = f"v1\n{call['X-Bench-Timestamp']}\nalice\nbob/agent\n".encode() + BODY
    v1_digest = hmac.new(secret.encode(), v1_message, hashlib.sha256).hexdigest()

    def verified(signature: str) -> str | None:
        return bench.verify_invocation(secret, {**call, "X-Bench-Signature": signature}, BODY,
                                       path="/echo", refuse_replays=False)

    assert verified("v1=" + v2_digest) is None
    assert verified("v2=" + v1_digest) is None
    assert verified("v1=" + v1_digest) == "alice", "an older server's v1 still verifies"
    assert verified("v2=" + v2_digest) == "alice"
