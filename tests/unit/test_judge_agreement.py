"""The judge's agreement with people, against figures worked out by hand."""

from __future__ import annotations

import math

import pytest
from bench_core.domain.agreement import (
    AgreementTable,
    agreement_view,
    cell_of,
    kappa_with_se,
    people_pass,
)


def test_figures_match_a_hand_computation() -> None:
    """50 runs: judge and people both pass 20, the judge alone passes 5, people alone 10, both
    fail 15. By hand (rows the judge, columns people, p = count / 50):
      p = [[.4, .1], [.2, .3]]; judge's margins .5 .5; people's .6 .4
      observed po = .4 + .3 = .7; chance pe = .5·.6 + .5·.4 = .5
      kappa = (.7 - .5) / (1 - .5) = .4
      Fleiss-Cohen-Everitt: diagonal = .4·(1 - (.5+.6)·.6)² + .3·(1 - (.5+.4)·.6)²
                                    = .4·.34² + .3·.46² = .04624 + .06348 = .10972
                            off = .6²·(.1·(.6+.5)² + .2·(.4+.5)²) = .36·(.121 + .162) = .10188
                            less (kappa - pe·(1-kappa))² = (.4 - .3)² = .01
                            var = (.10972 + .10188 - .01) / (50·.5²) = .2016 / 12.5 = .016128
      SE = sqrt(.016128) = .126996; 95% CI = .4 ± 1.95996·.126996 = [.151092, .648908]
      accuracy 35/50 = .7, Wilson: centre (.7 + z²/100) / (1 + z²/50),
      half z·sqrt(.7·.3/50 + z²/10000) / (1 + z²/50) → [.56250, .80896]"""
    view = agreement_view(AgreementTable(pp=20, pf=5, fp=10, ff=15))
    assert view["n"] == 50 and view["agree"] == 35
    assert view["accuracy"] == pytest.approx(0.7)
    assert view["kappa"] == pytest.approx(0.4)
    assert view["kappa_se"] == pytest.approx(math.sqrt(0.016128), abs=1e-9)
    assert view["kappa_se"] == pytest.approx(0.126996, abs=1e-6)
    assert view["kappa_ci95"] == pytest.approx([0.151092, 0.648908], abs=1e-5)
    assert view["accuracy_ci95"] == pytest.approx([0.56250, 0.80896], abs=1e-4)
    assert view["level"] == "ok"
    assert view["table"] == {"pp": 20, "pf": 5, "fp": 10, "ff": 15}


def test_perfect_agreement_has_kappa_one_and_no_spread() -> None:
    fitted = kappa_with_se(AgreementTable(pp=7, ff=3))
    assert fitted is not None
    assert fitted[0] == pytest.approx(1.0) and fitted[1] == pytest.approx(0.0)


def test_kappa_is_undefined_when_everyone_gave_one_verdict() -> None:
    view = agreement_view(AgreementTable(pp=4))
    assert view["kappa"] is None and view["kappa_ci95"] is None
    assert view["accuracy"] == 1.0 and view["level"] == "unknown"


def test_no_labels_is_unknown() -> None:
    view = agreement_view(AgreementTable())
    assert view["n"] == 0 and view["accuracy"] is None and view["level"] == "unknown"


def test_chance_agreement_is_low() -> None:
    """Judge passes half, people pass half, independently: kappa 0, marked low."""
    view = agreement_view(AgreementTable(pp=5, pf=5, fp=5, ff=5))
    assert view["kappa"] == pytest.approx(0.0) and view["level"] == "low"
    assert view["kappa_ci95"][0] < 0 < view["kappa_ci95"][1]


def test_verdicts_become_pass_or_fail_at_one_half() -> None:
    assert people_pass([1.0, 0.0]) is True   # one up, one down: the mean 0.5 passes
    assert people_pass([0.4]) is False
    assert people_pass([]) is None
    assert cell_of(True, False) == "pf" and cell_of(False, True) == "fp"
