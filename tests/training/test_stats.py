"""The thirds table: means by thirds of the run, the trend and its t, and the low rollouts."""
from __future__ import annotations

import math
import random

import pytest
from scipy.stats import linregress

from training.stats import Thirds, thirds


def series(*means: float | None, start: int = 1) -> list[tuple[int, float | None]]:
    return [(start + i, mean) for i, mean in enumerate(means)]


def test_it_splits_a_rising_run_into_thirds_and_computes_the_trend_by_hand():
    # Worked by hand: slope = Sxy / Sxx = 1.4 / 17.5; residuals are (-10, 26, -28, 8, 14, -10) / 300,
    # so SE² = (1920 / 90000) / 4 / 17.5 and t² = 0.08² / SE² = 21.
    result = thirds(series(0.2, 0.4, 0.3, 0.5, 0.6, 0.6), [])
    assert result.n_steps == 6
    assert (result.first_steps, result.middle_steps, result.last_steps) == ((1, 2), (3, 4), (5, 6))
    assert result.first_mean == pytest.approx(0.3)
    assert result.middle_mean == pytest.approx(0.4)
    assert result.last_mean == pytest.approx(0.6)
    assert result.change == pytest.approx(0.3)
    assert result.slope == pytest.approx(0.08)
    assert result.slope_se == pytest.approx(math.sqrt(1920 / 90000 / 4 / 17.5))
    assert result.t_stat == pytest.approx(math.sqrt(21))
    assert result.reason == "" and result.t_stat_reason == ""


def test_it_reports_a_flat_run_as_slope_zero_with_no_t():
    result = thirds(series(*[0.5] * 9), [])
    assert result.first_mean == result.middle_mean == result.last_mean == 0.5
    assert result.slope == 0.0 and result.slope_se == 0.0
    assert result.t_stat is None
    assert "straight line" in result.t_stat_reason
    assert result.reason == ""  # the thirds themselves exist


def test_it_gives_no_t_for_a_perfectly_straight_rise_instead_of_an_infinite_one():
    result = thirds(series(*(0.1 + 0.01 * i for i in range(30))), [])
    assert result.slope == pytest.approx(0.01)
    assert result.t_stat is None


@pytest.mark.parametrize(("n", "sizes"), [(7, (2, 3, 2)), (8, (2, 4, 2)), (9, (3, 3, 3)), (110, (36, 38, 36))])
def test_it_gives_first_and_last_thirds_equal_sizes_and_the_remainder_to_the_middle(n, sizes):
    result = thirds(series(*(0.4 + 0.001 * (i % 5) for i in range(n))), [])
    spans = [last - first + 1 for first, last in (result.first_steps, result.middle_steps, result.last_steps)]
    assert tuple(spans) == sizes
    assert result.first_steps[0] == 1 and result.last_steps[1] == n


def test_it_computes_the_middle_third_of_seven_steps_from_three_steps():
    result = thirds(series(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7), [])
    assert result.first_mean == pytest.approx(0.15)
    assert result.middle_mean == pytest.approx(0.4)
    assert result.last_mean == pytest.approx(0.65)


@pytest.mark.parametrize("means", [[], [0.4], [0.4, 0.5], [None, None, 0.4]])
def test_it_leaves_every_number_empty_with_a_reason_below_three_scored_steps(means):
    result = thirds(series(*means), [(1, 3)])
    assert result.n_steps == sum(m is not None for m in means)
    assert result.first_mean is result.middle_mean is result.last_mean is None
    assert result.slope is result.slope_se is result.t_stat is None
    assert result.first_low is result.last_low is None
    assert result.change is None
    assert result.reason and not result.t_stat_reason


def test_it_says_no_step_has_a_mean_yet_for_an_empty_run():
    assert thirds([], []).reason == "no step has a mean reward yet"
    assert "at least 3" in thirds(series(0.4, 0.5), []).reason


def test_it_skips_steps_without_a_mean_and_fits_the_trend_on_step_numbers():
    result = thirds([(1, 0.2), (2, None), (3, 0.4), (4, 0.6)], [])
    assert result.n_steps == 3
    assert (result.first_steps, result.middle_steps, result.last_steps) == ((1, 1), (3, 3), (4, 4))
    fit = linregress([1, 3, 4], [0.2, 0.4, 0.6])
    assert result.slope == pytest.approx(fit.slope)
    assert result.slope_se == pytest.approx(fit.stderr)


def test_it_counts_low_rollouts_by_step_ranges_including_steps_without_a_mean():
    means = series(0.2, 0.3, 0.3, 0.4, 0.5, 0.6)  # thirds: steps 1-2 | 3-4 | 5-6
    low = [(1, 3), (2, 2), (3, 1), (4, 1), (5, 1), (7, 2), (1, 1)]  # step 7 has no Step row yet
    result = thirds(means, low)
    assert (result.first_low, result.middle_low, result.last_low) == (6, 2, 3)
    assert thirds([(1, 0.1), (2, None), (3, 0.4), (4, 0.6)], [(2, 5)]).middle_low == 5


def test_it_counts_zero_low_rollouts_when_none_were_low():
    result = thirds(series(0.5, 0.6, 0.7), [])
    assert (result.first_low, result.middle_low, result.last_low) == (0, 0, 0)


def test_it_refuses_a_step_listed_twice():
    with pytest.raises(ValueError, match="twice"):
        thirds([(1, 0.2), (1, 0.3), (2, 0.4)], [])


@pytest.mark.parametrize("seed", range(5))
def test_it_agrees_with_scipy_linregress_on_noisy_runs(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 120)
    steps = sorted(rng.sample(range(1, 400), n))
    means = [0.45 + 0.002 * s + rng.gauss(0, 0.08) for s in steps]
    result = thirds(list(zip(steps, means)), [])
    fit = linregress(steps, means)
    assert result.slope == pytest.approx(fit.slope, rel=1e-9, abs=1e-12)
    assert result.slope_se == pytest.approx(fit.stderr, rel=1e-9)
    assert result.t_stat == pytest.approx(fit.slope / fit.stderr, rel=1e-9)


def test_it_serialises_to_json_ready_values():
    data = thirds(series(0.2, 0.4, 0.3, 0.5, 0.6, 0.6), [(1, 2)]).to_dict()
    assert data["first_steps"] == [1, 2] and data["first_low"] == 2 and data["low_threshold"] == 0.3
    assert data["change"] == pytest.approx(0.3)
    assert set(data) >= {f.name for f in Thirds.__dataclass_fields__.values()}
