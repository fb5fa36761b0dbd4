"""A TensorBoard folder's weight histograms in the Weights view: the figures it can give,
and "not recorded" for the ones it cannot (never "nan")."""

from __future__ import annotations

import math

from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.recorded import inspector_events
from tfstudio.core.runs import Histogram, TagPoints


def test_a_keras_histogram_row_says_what_is_not_recorded(qtbot):
    from tfstudio.ui.panels.weights import WeightsView

    # Keras's TensorBoard callback: train/<model>/<layer>/<var>/histogram at epoch 0, which
    # ended at batch step 4 (train/batch_loss at 1..4, then train/epoch_loss)
    edges = (-1.0, -0.5, 0.0, 0.5, 1.0)
    hists = {"train/tiny/dense/kernel/histogram": [Histogram(0, 10.5, edges, (1, 2, 3, 6))]}
    scalars = {
        "train/batch_loss": TagPoints([1, 2, 3, 4], [0.9, 0.8, 0.7, 0.6], [10.1, 10.2, 10.3, 10.4]),
        "train/epoch_loss": TagPoints([0], [0.6], [10.5]),
    }
    [weights] = inspector_events(scalars, hists, {})
    assert weights.step == 4  # where its epoch ended
    [v] = weights.variables
    assert v.path == "tiny/dense/kernel"
    centres = (-0.75, -0.25, 0.25, 0.75)
    want = math.sqrt(sum(n * c * c for n, c in zip((1, 2, 3, 6), centres, strict=True)))
    assert math.isclose(v.norm, want) and math.isnan(v.zero_fraction)

    store = InspectorStore()
    view = WeightsView(store, [0.0])
    qtbot.addWidget(view)
    view.resize(900, 400)
    view.show()
    store.ingest(weights)
    view.refresh()
    text = view.rows["tiny/dense/kernel"].header.text()
    assert "(12 values, shape not recorded)" in text
    assert f"L2 norm {want:.4g}" in text and "zeros not recorded" in text
    assert "nan" not in text.lower()
