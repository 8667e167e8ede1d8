"""The spool: what a process could not deliver by its exit waits on disk, and the next process
sending to the same endpoint with the same key sends it first (``bench._spool``).

Agents run as real processes (their exit is what spools) against the loopback fault server,
which goes down and comes back on the same port.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from bench import _sender
from bench._spool import default_directory
from conftest import FAST, HANG_GUARD, FaultServer, run_python

KEY = "bk_test"


def agent_code(slug: str, runs: int) -> str:
    return (f"import bench\nagent = bench.observe(agent={slug!r})\n"
            f"for i in range({runs}):\n"
            f"    with agent.span(f'{slug}-{{i}}') as t:\n"
            f"        t.log('n', i)\n")


def environment(sink: FaultServer, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), BENCH_KEY=KEY, BENCH_ENDPOINT=sink.url,
               BENCH_SPOOL_DIR=os.environ["BENCH_SPOOL_DIR"])
    env.update(extra)
    return env


def run_agent(sink: FaultServer, tmp_path: Path, slug: str, runs: int, **extra: str) -> str:
    """One agent process; returns its stderr (the SDK's warnings)."""
    done = run_python(agent_code(slug, runs), environment(sink, tmp_path, **extra))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def spool_files(spool_dir: Path) -> list[Path]:
    return sorted(spool_dir.iterdir()) if spool_dir.exists() else []


def spool_while_down(sink: FaultServer, tmp_path: Path, spool_dir: Path, slug: str = "first",
                     runs: int = 3, **extra: str) -> Path:
    """An agent exits while the server is down: its events are spooled (one file)."""
    sink.down()
    stderr = run_agent(sink, tmp_path, slug, runs, **extra)
    assert "spooled to" in stderr and "lost" not in stderr, stderr
    (spooled,) = spool_files(spool_dir)
    return spooled


def names(sink: FaultServer, slug: str) -> list[str]:
    return sorted(e["name"] for e in sink.of_kind("task.end") if e["name"].startswith(slug + "-"))


def test_what_exit_could_not_deliver_is_sent_by_the_next_process(sink, tmp_path, spool_dir) -> None:
    spooled = spool_while_down(sink, tmp_path, spool_dir)
    assert stat.S_IMODE(spool_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(spooled.stat().st_mode) == 0o600
    assert KEY not in spooled.name and KEY.encode() not in spooled.read_bytes(), "the key is never written"
    sink.up()
    run_agent(sink, tmp_path, "second", 2)
    assert names(sink, "first") == ["first-0", "first-1", "first-2"]
    assert names(sink, "second") == ["second-0", "second-1"]
    assert all(n == 1 for n in sink.id_counts.values())
    assert {r.body["agent_slug"] for r in sink.requests} == {"first", "second"}, "each under its own agent"
    assert spool_files(spool_dir) == [], "delivered: the file is gone"


def test_spooled_events_go_before_the_new_ones(sink, tmp_path, spool_dir, make_agent) -> None:
    spool_while_down(sink, tmp_path, spool_dir, runs=5)
    sink.up()
    agent = make_agent(endpoint=sink.url, config=dataclasses.replace(FAST, max_in_flight=1))
    with agent.span("new-0"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    order = [e["name"] for r in sink.requests for e in r.body["events"] if e["kind"] == "task.end"]
    assert order == [*(f"first-{i}" for i in range(5)), "new-0"]


def test_nothing_is_written_when_everything_was_delivered(sink, tmp_path, spool_dir) -> None:
    stderr = run_agent(sink, tmp_path, "delivered", 3)
    assert names(sink, "delivered") == ["delivered-0", "delivered-1", "delivered-2"]
    assert not spool_dir.exists() and "spool" not in stderr


def test_a_spool_is_sent_only_with_its_own_key(sink, tmp_path, spool_dir) -> None:
    spool_while_down(sink, tmp_path, spool_dir)
    sink.up()
    run_agent(sink, tmp_path, "other-key", 1, BENCH_KEY="bk_another")
    assert names(sink, "first") == [] and len(spool_files(spool_dir)) == 1
    run_agent(sink, tmp_path, "same-key", 1)
    assert names(sink, "first") == ["first-0", "first-1", "first-2"]
    assert {r.headers["X-Bench-Key"] for r in sink.requests if r.body["agent_slug"] == "first"} == {KEY}


def test_two_processes_starting_at_once_send_a_spool_once(sink, tmp_path, spool_dir) -> None:
    spool_while_down(sink, tmp_path, spool_dir, runs=20)
    sink.up()
    env = environment(sink, tmp_path)
    starts = [subprocess.Popen([sys.executable, "-c", agent_code(slug, 1)], env=env, stderr=subprocess.PIPE)
              for slug in ("racer-a", "racer-b")]
    for process in starts:
        assert process.wait(HANG_GUARD) == 0
    assert len(names(sink, "first")) == 20
    first_ids = [e["id"] for e in sink.unique_events() if e.get("name", "").startswith("first-")]
    assert all(sink.id_counts[i] == 1 for i in first_ids), "claimed by one process only"
    assert spool_files(spool_dir) == []


def test_unreadable_spool_files_are_dropped_with_one_warning(sink, tmp_path, spool_dir) -> None:
    """Files cut short or not spools at all (a full disk, an editor, another version): dropped
    with one warning, and neither they nor a crashed writer's temporary file stop the rest."""
    spooled = spool_while_down(sink, tmp_path, spool_dir)
    key_id, stamp, _ = spooled.name.split("-")
    data = spooled.read_bytes()
    (spool_dir / f"{key_id}-{int(stamp) - 2:020d}-0badc0de.jsonl").write_bytes(data[: len(data) - 20])
    (spool_dir / f"{key_id}-{int(stamp) - 1:020d}-0badf00d.jsonl").write_bytes(b"not a spool\n")
    (spool_dir / f".{key_id}-{int(stamp) + 1:020d}-00000000.jsonl.tmp").write_bytes(data[:50])
    sink.up()
    stderr = run_agent(sink, tmp_path, "after", 1)
    assert stderr.count("unreadable spool file") == 1, stderr
    assert names(sink, "first") == ["first-0", "first-1", "first-2"]
    assert names(sink, "after") == ["after-0"]
    assert [p.name.endswith(".tmp") for p in spool_files(spool_dir)] == [True], "only the temporary file is left"


def test_a_crashed_writers_temporary_file_is_removed_later(sink, tmp_path, spool_dir) -> None:
    spool_dir.mkdir(mode=0o700)
    stale = spool_dir / ".abc-00000000000000000001-00000000.jsonl.tmp"
    stale.write_bytes(b'{"bench_spool":1')
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    spool_while_down(sink, tmp_path, spool_dir)
    assert not stale.exists()


def test_over_the_bound_the_oldest_events_are_kept_and_the_rest_reported_as_dropped(
        sink, tmp_path, spool_dir) -> None:
    sink.down()
    stderr = run_agent(sink, tmp_path, "first", 30, BENCH_SPOOL_MAX_MB="0.004")
    (spooled,) = spool_files(spool_dir)
    assert spooled.stat().st_size <= 4_000
    assert "is full" in stderr and "did not fit" in stderr
    sink.up()
    run_agent(sink, tmp_path, "next", 1)
    kept = [e for e in sink.unique_events() if e.get("name", "").startswith("first-")]
    assert 0 < len(kept) < 90
    arrived = sorted(int(e["name"].split("-")[1]) for e in kept)
    assert arrived[0] == 0 and arrived[-1] < 29, "the oldest were kept"
    assert sink.dropped_reported == 90 - len(kept)


def test_the_spool_can_be_turned_off(sink, tmp_path, spool_dir) -> None:
    sink.down()
    stderr = run_agent(sink, tmp_path, "unspooled", 2, BENCH_SPOOL_MAX_MB="0")
    assert "6 undelivered events are lost" in stderr
    assert not spool_dir.exists()


def test_an_unwritable_spool_is_silently_off(sink, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    sink.down()
    stderr = run_agent(sink, tmp_path, "unwritable", 1, BENCH_SPOOL_DIR=str(blocker / "spool"))
    assert "3 undelivered events are lost" in stderr and "spool" not in stderr


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_spool_directory_others_may_write_to_is_never_read(sink, tmp_path, spool_dir) -> None:
    """Whoever can write there could make the agent send events of theirs with its key."""
    spool_while_down(sink, tmp_path, spool_dir)
    spool_dir.chmod(0o777)
    sink.up()
    run_agent(sink, tmp_path, "careful", 1)
    assert names(sink, "first") == [] and names(sink, "careful") == ["careful-0"]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs kill -9")
def test_the_claim_of_a_killed_process_is_taken_over(sink, tmp_path, spool_dir) -> None:
    spool_while_down(sink, tmp_path, spool_dir)
    claimer = subprocess.Popen([sys.executable, "-c", agent_code("claimer", 1) + "import time; time.sleep(60)\n"],
                               env=environment(sink, tmp_path), stderr=subprocess.PIPE)
    try:
        sink.wait_for(lambda: any(p.name.endswith(".claim") for p in spool_files(spool_dir)))
    finally:
        claimer.kill()
        claimer.wait(HANG_GUARD)
    sink.up()
    run_agent(sink, tmp_path, "heir", 1)
    assert names(sink, "first") == ["first-0", "first-1", "first-2"]
    assert spool_files(spool_dir) == []


def test_where_the_spool_lives(monkeypatch, tmp_path) -> None:
    for name in ("AWS_LAMBDA_FUNCTION_NAME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    expected: dict[str, Any] = {
        "linux": tmp_path / ".cache" / "bench" / "spool",
        "darwin": tmp_path / "Library" / "Caches" / "bench" / "spool",
    }
    if sys.platform in expected:
        assert default_directory() == expected[sys.platform]
    if sys.platform == "linux":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert default_directory() == tmp_path / "xdg" / "bench" / "spool"
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "my-function")
    assert default_directory() == Path("/tmp/bench/spool")


def test_the_spool_is_configured_by_keyword_too(sink, tmp_path, monkeypatch) -> None:
    chosen = tmp_path / "chosen"
    code = agent_code("keyword", 1).replace("bench.observe(agent='keyword')",
                                            f"bench.observe(agent='keyword', spool_dir={str(chosen)!r})")
    sink.down()
    done = run_python(code, environment(sink, tmp_path))
    assert done.returncode == 0 and len(spool_files(chosen)) == 1
    shutil.rmtree(chosen)
    done = run_python(code.replace("spool_dir=", "spool_max_mb=0, spool_dir="), environment(sink, tmp_path))
    assert done.returncode == 0 and not chosen.exists() and "are lost" in done.stderr


def test_what_a_starved_sender_holds_when_shutdown_stops_waiting_is_spooled_not_lost(
        make_agent, sink: FaultServer, spool_dir: Path) -> None:
    """A sender short of CPU (a loaded machine; here a slow ``redact`` hook, which runs on the
    sender's thread) is still encoding a backlog when shutdown has waited all it may: what it
    holds then is spooled with the rest (or counted as dropped), never lost uncounted."""
    sink.down()

    def slow_redact(value: Any) -> Any:
        time.sleep(0.005)
        return value

    agent = make_agent(endpoint=sink.url, redact=slow_redact)
    sent = 600
    for i in range(sent):
        agent.event("tick", {"i": i})
    assert agent.shutdown_sync(timeout=0.1) is False
    agent._sender._thread.join(HANG_GUARD)  # whatever it was still encoding, it has put down
    spool = agent._sender._spool
    loaded = [spool.load(claim) for claim in map(spool.claim, spool.waiting()) if claim is not None]
    spooled = sum(len(x.events) for x in loaded if x is not None)
    dropped = sum(x.dropped for x in loaded if x is not None)
    assert spooled + dropped == sent


def test_an_event_still_encoding_after_shutdown_gave_up_waiting_is_spooled_after_it(
        make_agent, sink: FaultServer, spool_dir: Path) -> None:
    """One event takes longer to encode than shutdown waits for the sender (``STOP_WAIT``):
    the sender spools it itself once encoded, beside what shutdown spooled."""
    sink.down()
    encoding = threading.Event()

    def slow_redact(value: Any) -> Any:
        if value == {"i": 0}:
            encoding.set()
            time.sleep(_sender.STOP_WAIT + 0.5)
        return value

    agent = make_agent(endpoint=sink.url, redact=slow_redact)
    for i in range(3):
        agent.event("tick", {"i": i})
    assert encoding.wait(HANG_GUARD)
    assert agent.shutdown_sync(timeout=0.1) is False
    agent._sender._thread.join(HANG_GUARD)
    spool = agent._sender._spool
    loaded = [spool.load(claim) for claim in map(spool.claim, spool.waiting()) if claim is not None]
    assert sorted(json.loads(e)["data"]["i"] for x in loaded if x is not None for e in x.events) == [0, 1, 2]
