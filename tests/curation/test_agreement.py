"""Agreement between curators (curation.agreement), checked against figures worked by hand."""
from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from curation.agreement import (
    _LINEAR,
    _UNWEIGHTED,
    AgreementError,
    _coincidences_per_reference,
    agreement,
    kappa_of_tables,
    ordinal_alpha_of_coincidences,
)

# Ten references graded by two curators. Tiers in order reject < okay < love.
TEN_A = "love love love okay okay okay okay reject reject reject".split()
TEN_B = "love love okay okay okay reject okay reject reject love".split()
#
# Confusion table (rows A, columns B; reject, okay, love):
#            reject okay love    row sums
#   reject      2     0    1       3
#   okay        1     3    0       4
#   love        0     1    2       3
#   col sums    3     4    3      10
#
# Cohen's kappa, unweighted:
#   p_o = (2 + 3 + 2) / 10 = 0.7
#   p_e = 0.3·0.3 + 0.4·0.4 + 0.3·0.3 = 0.09 + 0.16 + 0.09 = 0.34
#   kappa = (0.7 − 0.34) / (1 − 0.34) = 0.36 / 0.66 = 6/11 ≈ 0.5455
#
# Linear-weighted kappa, disagreement weight |i − j| (okay↔love 1, reject↔love 2):
#   observed Σ w·O = 1·(okay,reject) + 2·(reject,love) + 1·(love,okay) = 1 + 2 + 1 = 4
#   expected E = row·col / 10: 0.9 1.2 0.9 / 1.2 1.6 1.2 / 0.9 1.2 0.9
#   Σ w·E = 1·(1.2 + 1.2 + 1.2 + 1.2) + 2·(0.9 + 0.9) = 4.8 + 3.6 = 8.4
#   kappa_w = 1 − 4 / 8.4 = 11/21 ≈ 0.5238
#
# Krippendorff's alpha, ordinal, on the same data. With two coders every reference adds
# one to o[a][b] and one to o[b][a], so the coincidence matrix is table + tableᵀ:
#            reject okay love    n_c
#   reject      4     1    1      6
#   okay        1     6    1      8
#   love        1     1    4      6          n = 20
#   ordinal δ²(c,k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²:
#     δ²(reject,okay) = (6 + 8 − 7)² = 49,  δ²(okay,love) = (8 + 6 − 7)² = 49,
#     δ²(reject,love) = (6 + 8 + 6 − 6)² = 196
#   Σ o·δ² = 49·(1 + 1 + 1 + 1) + 196·(1 + 1) = 588
#   Σ n_c·n_k·δ² (c ≠ k, both orders) = 2·6·8·49 + 2·8·6·49 + 2·6·6·196 = 23520
#   alpha = 1 − (n − 1)·Σ o·δ² / Σ n_c·n_k·δ² = 1 − 19·588 / 23520 = 1 − 0.475 = 0.525
TEN_KAPPA = 6 / 11
TEN_WEIGHTED_KAPPA = 11 / 21
TEN_ALPHA = 0.525
TEN_CONFUSION = ((2, 0, 1), (1, 3, 0), (0, 1, 2))

# Three curators, six references, grades missing (— is no grade):
#   ref   A       B       C
#   1     love    love    love
#   2     okay    okay    —
#   3     reject  okay    reject
#   4     love    okay    —
#   5     —       reject  reject
#   6     okay    —       —        (one grade: not pairable, left out)
MISSING = {
    "A": {1: "love", 2: "okay", 3: "reject", 4: "love", 6: "okay"},
    "B": {1: "love", 2: "okay", 3: "okay", 4: "okay", 5: "reject"},
    "C": {1: "love", 3: "reject", 5: "reject"},
}
# Coincidence matrix: each reference adds (its ordered pairs of grades) / (m_u − 1):
#   1: three loves, 6 ordered pairs / 2     → o[love][love] += 3
#   2: okay, okay, 2 / 1                    → o[okay][okay] += 2
#   3: reject, okay, reject (m = 3), / 2    → o[reject][reject] += 1, o[reject][okay] += 1, o[okay][reject] += 1
#   4: love, okay, 1 each / 1               → o[love][okay] += 1, o[okay][love] += 1
#   5: reject, reject, 2 / 1                → o[reject][reject] += 2
#            reject okay love    n_c
#   reject      3     1    0      4
#   okay        1     2    1      4
#   love        0     1    3      4          n = 12
#   δ²(reject,okay) = (4 + 4 − 4)² = 16,  δ²(okay,love) = 16,  δ²(reject,love) = (12 − 4)² = 64
#   Σ o·δ² = 16·(1 + 1 + 1 + 1) + 64·0 = 64
#   Σ n_c·n_k·δ² = 2·4·4·16 + 2·4·4·16 + 2·4·4·64 = 3072
#   alpha = 1 − 11·64 / 3072 = 1 − 11/48 = 37/48 ≈ 0.7708
# Percent agreement, per reference the share of its pairs of grades that agree:
#   1: 3/3, 2: 1/1, 3: 1/3 (only reject–reject), 4: 0/1, 5: 1/1 → mean (1 + 1 + 1/3 + 0 + 1) / 5 = 2/3
MISSING_ALPHA = 37 / 48
MISSING_PERCENT = 2 / 3


def ten_grades() -> dict[str, dict[int, str]]:
    return {"A": dict(enumerate(TEN_A)), "B": dict(enumerate(TEN_B))}


def test_the_pair_figures_match_the_hand_worked_ten_reference_example():
    report = agreement(ten_grades(), resamples=0)
    (pair,) = report.overall.pairs
    assert (pair.a, pair.b, pair.n) == ("A", "B", 10)
    assert pair.percent.value == pytest.approx(0.7)
    assert pair.kappa.value == pytest.approx(TEN_KAPPA)
    assert pair.weighted_kappa.value == pytest.approx(TEN_WEIGHTED_KAPPA)
    assert pair.confusion == TEN_CONFUSION


def test_alpha_matches_the_hand_worked_coincidence_matrix_of_two_curators():
    report = agreement(ten_grades(), resamples=0)
    assert report.overall.alpha.value == pytest.approx(TEN_ALPHA)
    assert report.overall.percent.value == pytest.approx(0.7)  # two curators: the pair's percent
    assert report.overall.shared == 10


def test_alpha_and_percent_take_three_curators_with_missing_grades():
    report = agreement(MISSING, resamples=0)
    assert report.overall.references == 6
    assert report.overall.shared == 5  # reference 6 has one grade
    assert report.overall.alpha.value == pytest.approx(MISSING_ALPHA)
    assert report.overall.percent.value == pytest.approx(MISSING_PERCENT)
    assert [(c.name, c.graded) for c in report.curators] == [("A", 5), ("B", 5), ("C", 3)]


def test_each_pair_is_counted_on_the_references_both_graded():
    report = agreement(MISSING, resamples=0, min_shared=2)
    by_pair = {(p.a, p.b): p for p in report.overall.pairs}
    assert {key: p.n for key, p in by_pair.items()} == {("A", "B"): 4, ("A", "C"): 2, ("B", "C"): 3}
    # A·B on references 1–4: love/love, okay/okay, reject/okay, love/okay → 2 of 4 agree
    assert by_pair["A", "B"].percent.value == pytest.approx(0.5)
    assert by_pair["A", "B"].confusion == ((0, 1, 0), (0, 1, 0), (0, 1, 1))


def test_a_pair_with_too_few_shared_references_gives_no_figure_but_a_reason():
    report = agreement(MISSING, resamples=0)  # default minimum: 5 shared references
    pair = report.overall.pairs[0]
    assert pair.n == 4
    for estimate in (pair.percent, pair.kappa, pair.weighted_kappa):
        assert estimate.value is None
        assert "only 4 references graded by both A and B; needs at least 5" in estimate.reason
    assert pair.confusion == ((0, 1, 0), (0, 1, 0), (0, 1, 1))  # the table is still shown


def test_fewer_than_two_shared_references_is_refused_as_a_minimum():
    with pytest.raises(AgreementError, match="at least 2"):
        agreement(ten_grades(), min_shared=1)
    report = agreement({"A": {1: "love", 2: "okay"}, "B": {1: "love", 3: "okay"}}, min_shared=2)
    assert report.overall.alpha.value is None and "only 1 reference graded by two or more" in report.overall.alpha.reason
    assert report.overall.pairs[0].kappa.value is None


def test_one_curator_says_agreement_needs_a_second():
    report = agreement({"A": {1: "love", 2: "okay"}})
    assert not report.comparable
    assert report.reason == "agreement needs grades from at least two curators; only A has graded these references"
    assert report.overall.alpha.value is None and report.overall.alpha.reason == report.reason
    assert report.overall.pairs == ()


def test_a_second_curator_without_grades_does_not_make_it_comparable():
    report = agreement({"A": {1: "love", 2: "okay"}, "B": {}})
    assert not report.comparable and "only A has" in report.reason
    assert agreement({}).reason.endswith("nobody has graded these references")


def test_a_single_tier_throughout_leaves_kappa_and_alpha_undefined():
    same = {name: dict.fromkeys(range(8), "okay") for name in ("A", "B")}
    report = agreement(same, resamples=50)
    pair = report.overall.pairs[0]
    assert pair.percent.value == 1.0
    assert pair.kappa.value is None and "graded every shared reference okay" in pair.kappa.reason
    assert pair.weighted_kappa.value is None
    assert report.overall.alpha.value is None and "every grade on the shared references is okay" in report.overall.alpha.reason


def test_two_curators_who_each_use_one_different_tier_have_kappa_zero_not_undefined():
    # p_o = 0, p_e = 1·0 + 0·1 = 0 → kappa = (0 − 0) / 1 = 0: defined, and really chance level.
    report = agreement({"A": dict.fromkeys(range(6), "love"), "B": dict.fromkeys(range(6), "okay")}, resamples=0)
    assert report.overall.pairs[0].kappa.value == 0.0


def test_an_unknown_tier_is_a_clear_error():
    with pytest.raises(AgreementError, match="A's grade of reference 3 is 'great'"):
        agreement({"A": {3: "great"}, "B": {3: "love"}})


def test_subjects_get_their_own_figures_and_a_small_one_says_it_has_too_few():
    grades = {name: dict(graded) for name, graded in ten_grades().items()}
    grades["A"] |= {100: "love", 101: "okay"}
    grades["B"] |= {100: "love", 101: "reject"}
    subjects = dict.fromkeys(range(10), "a rose") | {100: "a tulip", 101: "a tulip"}
    report = agreement(grades, subjects, resamples=0)
    rose, tulip = report.subjects
    assert (rose.subject, rose.shared) == ("a rose", 10)
    assert rose.alpha.value == pytest.approx(TEN_ALPHA)
    assert rose.pairs[0].kappa.value == pytest.approx(TEN_KAPPA)
    assert (tulip.subject, tulip.shared) == ("a tulip", 2)
    assert tulip.alpha.value is None and tulip.percent.value is None
    assert "only 2 references graded by two or more curators; needs at least 5" in tulip.alpha.reason
    assert report.overall.shared == 12


def test_references_without_a_subject_are_grouped_as_no_subject():
    report = agreement(ten_grades(), {}, resamples=0)
    assert [group.subject for group in report.subjects] == ["(no subject)"]


def test_bootstrap_intervals_contain_the_point_estimate():
    report = agreement(ten_grades(), resamples=2000, seed=7)
    pair = report.overall.pairs[0]
    for estimate in (pair.percent, pair.kappa, pair.weighted_kappa, report.overall.alpha, report.overall.percent):
        assert estimate.has_interval, estimate
        assert estimate.low <= estimate.value <= estimate.high
        assert estimate.low < estimate.high  # ten references do not pin a figure down


def test_bootstrap_intervals_are_the_same_for_the_same_seed_and_differ_for_another():
    first = agreement(MISSING, resamples=300, seed=3, min_shared=2).to_dict()
    again = agreement(MISSING, resamples=300, seed=3, min_shared=2).to_dict()
    other = agreement(MISSING, resamples=300, seed=4, min_shared=2).to_dict()
    assert first == again
    assert first != other


def test_a_subjects_interval_does_not_move_when_another_subject_grows():
    grades = ten_grades()
    subjects = dict.fromkeys(range(10), "a rose")
    before = agreement(grades, subjects, resamples=200).subjects[0]
    grades["A"] |= {50 + i: "okay" for i in range(6)}
    grades["B"] |= {50 + i: "love" for i in range(6)}
    after = agreement(grades, subjects | {50 + i: "a tulip" for i in range(6)}, resamples=200).subjects[0]
    assert after == before


def test_no_resamples_gives_the_figures_without_intervals_and_says_so():
    pair = agreement(ten_grades(), resamples=0).overall.pairs[0]
    assert pair.kappa.value == pytest.approx(TEN_KAPPA) and not pair.kappa.has_interval
    assert "no bootstrap resamples" in pair.kappa.reason


def test_resampled_kappas_use_the_formula_scikit_learn_uses():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
        table = confusion_matrix(a, b, labels=[0, 1, 2])[np.newaxis]
        assert kappa_of_tables(table, _UNWEIGHTED)[0] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2]))
        assert kappa_of_tables(table, _LINEAR)[0] == pytest.approx(
            cohen_kappa_score(a, b, labels=[0, 1, 2], weights="linear"))
    assert np.isnan(kappa_of_tables(np.array([[[0, 0, 0], [0, 5, 0], [0, 0, 0]]]), _UNWEIGHTED)[0])


def test_resampled_alphas_use_the_formula_the_krippendorff_package_uses():
    rng = np.random.default_rng(1)
    for _ in range(20):
        graders = rng.integers(2, 5, size=30)  # two to four grades per reference
        value_counts = np.array([np.bincount(rng.integers(0, 3, m), minlength=3) for m in graders])
        coincidences = _coincidences_per_reference(value_counts).sum(axis=0)[np.newaxis]
        expected = krippendorff.alpha(value_counts=value_counts, value_domain=[0, 1, 2], level_of_measurement="ordinal")
        assert ordinal_alpha_of_coincidences(coincidences)[0] == pytest.approx(expected)
    one_tier = _coincidences_per_reference(np.array([[0, 2, 0], [0, 3, 0]])).sum(axis=0)[np.newaxis]
    assert np.isnan(ordinal_alpha_of_coincidences(one_tier)[0])


def test_the_report_is_plain_json():
    data = json.loads(json.dumps(agreement(MISSING, {1: "a rose"}, resamples=20).to_dict()))
    assert data["overall"]["alpha"]["value"] == pytest.approx(MISSING_ALPHA)
    assert data["tiers"] == ["reject", "okay", "love"]
    assert data["overall"]["pairs"][0]["confusion"] == [[0, 1, 0], [0, 1, 0], [0, 1, 1]]
    assert {group["subject"] for group in data["subjects"]} == {"a rose", "(no subject)"}


def test_the_library_reproduces_krippendorffs_published_example_called_as_we_call_it():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units,
    # values 1–5, missing grades; published ordinal alpha 0.815, nominal 0.743. We hand the
    # library value counts (units × values), so that is the form checked here.
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    value_counts = np.array([[sum(o[unit] == value for o in observers) for value in range(1, 6)] for unit in range(12)])
    ordinal = krippendorff.alpha(value_counts=value_counts, value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    nominal = krippendorff.alpha(value_counts=value_counts, value_domain=[1, 2, 3, 4, 5], level_of_measurement="nominal")
    assert round(ordinal, 3) == 0.815
    assert round(nominal, 3) == 0.743
