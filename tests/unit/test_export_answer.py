"""An export where Lambda answers (`reads.export.delivered`): whole while it fits one answer as
Lambda sends it (a JSON string: escapes and `\\uXXXX` counted), else written to the drop in
order and answered with its link."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from bench_core.reads import export
from bench_core.reads.export import answer_size, delivered


class ListDrop:
    """A file drop that keeps what it is given (`ports.files.FileDrop`)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def put(self, name: str, chunks: Iterable[bytes], media_type: str) -> str:
        self.files[name] = b"".join(chunks)
        return f"https://drop.example/{name}"


@pytest.mark.parametrize("text", ["plain", 'quoted "x" and \\ back', "line\r\nnext\ttab",
                                  "café naïve", "漢字かな", "emoji 🙂 here"])
def test_the_size_counted_is_never_below_what_lambdas_json_sends(text: str) -> None:
    sent = len(json.dumps(text)) - 2  # the string's quotes are Lambda's, not the body's
    assert answer_size(text.encode()) >= sent
    assert answer_size(text.encode()) <= 3 * len(text.encode())


def test_an_export_that_fits_is_answered_whole_and_a_bigger_one_goes_to_the_drop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "ANSWER_BYTES", 100)
    drop = ListDrop()
    small = [b"a" * 40, b"b" * 40]
    assert delivered(iter(small), drop, "x/runs.csv", "text/csv") == b"".join(small)
    assert drop.files == {}
    quoted = [b'"' * 40, b'"' * 40]  # 80 bytes, 160 as Lambda sends them
    link = delivered(iter(quoted), drop, "x/runs.jsonl", "application/x-ndjson")
    assert link == "https://drop.example/x/runs.jsonl"
    big = [bytes([65 + i]) * 30 for i in range(10)]
    delivered(iter(big), drop, "y/runs.csv", "text/csv")
    assert drop.files == {"x/runs.jsonl": b"".join(quoted), "y/runs.csv": b"".join(big)}
