"""Series keeps memory bounded and every spike visible."""

import math

import numpy as np
import pytest

from tfstudio.core.series import Series


def test_raw_points_until_capacity():
    s = Series(capacity=8)
    s.extend([1, 2, 3], [0.5, 0.25, 0.125])
    x, y = s.view()
    assert x.tolist() == [1, 2, 3] and y.tolist() == [0.5, 0.25, 0.125]
    assert s.width == 1 and len(s) == 3


def test_decimation_keeps_min_and_max_and_bounds_memory():
    s = Series(capacity=1000)
    n = 1_000_000
    xs = np.arange(n, dtype=float)
    ys = np.sin(xs / 1000.0)
    ys[777_777] = 50.0  # one spike among a million points
    ys[123_456] = -40.0
    for start in range(0, n, 1600):  # arrives in frame-sized chunks
        s.extend(xs[start : start + 1600], ys[start : start + 1600])
    x, y = s.view()
    assert len(s) == n
    assert len(x) <= 2 * 1000 + s.width  # bounded, whatever n is
    assert s.nbytes() == 4 * 8 * 1000  # x, min, max, mean
    assert y.max() == 50.0 and y.min() == -40.0  # spikes survive
    assert np.all(np.diff(x) >= 0)
    assert x[0] == 0 and x[-1] <= n - 1


def test_nan_is_kept_visible():
    s = Series(capacity=4)
    s.extend(list(range(10)), [1.0, 2.0, math.nan, 3.0, 4, 5, 6, 7, 8, 9])
    _, y = s.view()
    assert np.isnan(y).any()


def test_bad_arguments():
    with pytest.raises(ValueError, match="even number"):
        Series(capacity=5)
    with pytest.raises(ValueError, match="differ in length"):
        Series().extend([1, 2], [1.0])
