"""The shipped suite: well formed, useful, read from the repository's benchmarks/
folder, and hashed the same way by the server and the SDK."""

from __future__ import annotations

import copy

from bench._benchmark import value_hash as sdk_value_hash
from bench_core.benchmarks.grading import OfflineGrader
from bench_core.benchmarks.suites import SUITES_DIR, Suite, load_suite, value_hash

from tests.benchmark_support import SUITE, SUITE_DIR, suite_document


def test_the_suites_are_read_from_the_repositorys_benchmarks_folder() -> None:
    """One copy in the tree: the builds of the layer and the wheel put it in the package
    (tests/aws/test_wheel_data.py, scripts/package_check.py check they do)."""
    assert SUITE_DIR.parent == SUITES_DIR
    assert sorted(p.name for p in SUITE_DIR.iterdir()) == ["cases.json", "manifest.json"]


def test_grounded_research_has_twenty_distinct_grounded_cases() -> None:
    suite = load_suite(SUITE).suite
    assert suite.manifest.grading.judge_prompt == "grounding-v1"
    assert len(suite.cases) >= 20
    assert len({c.id for c in suite.cases}) == len(suite.cases)
    assert len({c.input.question for c in suite.cases}) == len(suite.cases)
    for case in suite.cases:
        ids = [s.id for s in case.input.sources]
        assert len(set(ids)) == len(ids), case.id
        assert len(case.input.sources) >= 2, case.id
        for fact in case.facts:
            assert set(fact.sources) <= set(ids), (case.id, fact.id)


def test_an_answer_stating_and_citing_every_fact_passes_every_case() -> None:
    """The cases' term lists match their own claims: a correct answer is not failed."""
    suite = load_suite(SUITE).suite
    threshold = suite.manifest.grading.pass_threshold
    for case in suite.cases:
        answer = " ".join(f"{f.claim} [{f.sources[0]}]" for f in case.facts)
        grade = OfflineGrader().grade(case, answer)
        assert grade.score == 1.0 >= threshold, (case.id, grade.reasoning)
        assert not any(p.lower() in answer.lower() for p in case.contradictions), case.id


def test_server_and_sdk_hash_a_suite_alike_and_any_change_changes_the_hash() -> None:
    document = suite_document()
    packaged = load_suite(SUITE)
    assert packaged.content_hash == value_hash(document) == sdk_value_hash(document)
    assert packaged.content_hash.startswith("sha256:") and len(packaged.content_hash) == 71
    changed = copy.deepcopy(document)
    changed["cases"][3]["facts"][0]["claim"] += " "
    assert value_hash(changed) != packaged.content_hash
    reordered = {"cases": document["cases"], "manifest": dict(reversed(document["manifest"].items()))}
    assert value_hash(reordered) == packaged.content_hash


def test_outputs_hash_alike_on_both_sides() -> None:
    for output in ("Plain text [S1]", {"answer": "x", "citations": ["S1"], "n": 1.5}, None, ["ü", 2]):
        assert value_hash(output) == sdk_value_hash(output)


def test_a_suite_is_validated_strictly() -> None:
    document = suite_document()
    document["cases"][0]["facts"][0]["sources"] = []
    try:
        Suite.model_validate(document)
    except ValueError as exc:
        assert "sources" in str(exc)
    else:
        raise AssertionError("a fact citing no source was accepted")
