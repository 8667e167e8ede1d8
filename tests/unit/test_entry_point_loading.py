"""`telemetry.loading()`, around a Lambda entry point's imports: no garbage collection while the
modules load, and in Lambda what they built is frozen out of later collections."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from bench_core.runtime.lambda_instrumentation import loading


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector enabled and nothing frozen, whatever a test does to either."""
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_while_loading_and_runs_again_after(collector: None) -> None:
    with loading():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_runs_again_after_an_import_fails(collector: None) -> None:
    with pytest.raises(ImportError), loading():
        import bench_core.no_such_module  # noqa: F401
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled(collector: None) -> None:
    gc.disable()
    with loading():
        pass
    assert not gc.isenabled()


def test_in_lambda_what_was_loaded_is_frozen(collector: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "bench-ApiFunction")
    with loading():
        loaded = [object()]
    assert gc.get_freeze_count() > 0
    assert loaded


def test_outside_lambda_nothing_is_frozen(collector: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    with loading():
        pass
    assert gc.get_freeze_count() == 0
