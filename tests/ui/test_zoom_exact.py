"""Zooming into a recorded run reads its exact points again; zooming out shows the envelope."""

from __future__ import annotations

import numpy as np

from tests.ui.test_runs_loading import big_run
from tfstudio.core.exact_points import exact_points_of
from tfstudio.core.runs import read_columns

STEPS = 60_000  # more than a line's 10,000 buckets: the store keeps a decimated envelope


def finite(item):
    x, y = item.getData()
    keep = np.isfinite(y)
    return x[keep], y[keep]


def test_zooming_in_draws_the_exact_points_and_zooming_out_the_envelope(window, qtbot, tmp_path):
    run = tmp_path / "long-20260101-000000"
    big_run(run, STEPS)
    window.resize(1000, 700)
    window.runs.set_logdir(tmp_path)
    window.runs.select([run.name])
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=60_000)
    window.runs.poll()
    window.bridge.flush()
    metrics = window.metrics
    qtbot.waitUntil(lambda: "loss" in metrics.plots, timeout=10_000)
    plot = metrics.plots["loss"]
    curve = plot.steps["loss"]
    track = curve.source
    assert metrics.store.name == run.name and track.count() == STEPS
    assert track.series.width > 1  # decimated: the store alone cannot show every point
    envelope = track.points()
    exact = exact_points_of(metrics.store)
    assert exact is not None

    recorded = read_columns(run)["step/loss"]
    first, last = 31_000, 31_400  # 400 steps: fewer than the plot has pixels
    assert plot.vb.width() * 2 > last - first
    plot.group.show_range(first, last)
    qtbot.waitUntil(lambda: plot.exact_shown() == ["loss (per step)"], timeout=30_000)
    x, y = finite(curve.item)
    (x0, x1), _ = plot.vb.viewRange()
    inside = (x >= x0) & (x <= x1)
    want = (recorded.steps >= x0) & (recorded.steps <= x1)
    assert x[inside].tolist() == recorded.steps[want].astype(float).tolist()
    assert y[inside].tolist() == recorded.values[want].tolist()
    assert want.sum() > 400  # every recorded step in view, none decimated away
    # the hover readout gives the exact value of a step
    hit = curve.nearest(31_111.0)
    assert hit is not None and hit[0] == 31_111.0
    assert hit[1] == hit[2] == float(recorded.values[recorded.steps == 31_111][0])
    # a forced redraw of the envelope (another smoothing weight) keeps the exact points
    plot.set_smoothing(0.3 if plot.smoothing != 0.3 else 0.5)
    plot.refresh()
    assert plot.exact_shown() == ["loss (per step)"]
    assert curve.nearest(31_111.0)[0] == 31_111.0
    # outside the read range the envelope is drawn as before (the item clips to the view)
    outside = curve.x < first - 1_000
    assert curve.x[0] == envelope[0][0] and curve.x[-1] == envelope[0][-1]
    assert curve.x[outside].tolist() == envelope[0][envelope[0] < first - 1_000].tolist()
    # the store kept no exact points: still the bounded envelope
    assert track.points()[0].tolist() == envelope[0].tolist()

    plot.group.show_range(0, STEPS)  # zoomed out: the envelope again
    qtbot.waitUntil(lambda: plot.exact_shown() == [], timeout=10_000)
    assert curve.x.tolist() == envelope[0].tolist() and curve.y.tolist() == envelope[1].tolist()
    x, _ = finite(curve.item)
    assert len(x) < 2 * 10_000 + 10  # drawn from the buckets, not from every step
    qtbot.waitUntil(lambda: not exact.pending(), timeout=10_000)
