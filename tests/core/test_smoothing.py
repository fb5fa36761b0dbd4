"""EMA smoothing matches TensorBoard's debiased formula."""

import math

import pytest

from tfstudio.core.smoothing import ema


def test_zero_weight_is_the_raw_curve():
    assert ema([1.0, 5.0, 2.0], 0.0) == [1.0, 5.0, 2.0]


def test_debiased_ema_starts_at_the_first_value_and_follows_a_step():
    out = ema([1.0] * 5 + [3.0] * 200, 0.9)
    assert out[:5] == pytest.approx([1.0] * 5)
    assert 1.0 < out[5] < 1.5  # slow to react
    assert out[-1] == pytest.approx(3.0, abs=1e-6)
    # TensorBoard's recurrence, by hand, for the second point
    last = 0.1 * 1.0
    last = 0.9 * last + 0.1 * 1.0
    assert out[1] == pytest.approx(last / (1 - 0.9**2))


def test_non_finite_points_pass_through():
    out = ema([1.0, math.nan, 1.0], 0.5)
    assert math.isnan(out[1]) and out[2] == pytest.approx(1.0)


def test_smoother_extends_only_what_was_appended():
    from tfstudio.core.smoothing import Smoother

    values = [float(i % 7) for i in range(50)]
    s = Smoother(0.8)
    assert s.update(values[:20]) == pytest.approx(ema(values[:20], 0.8))
    first = list(s.out)
    assert s.update(values) == pytest.approx(ema(values, 0.8))
    assert s.out[:20] == first  # the old points were not recomputed
    assert s.update(values[:5]) == pytest.approx(ema(values[:5], 0.8))  # a new curve
