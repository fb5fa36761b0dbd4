"""A tf.function custom loop in the real window: Model dock, weights and gradients views."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_window_runs import run_to_end

pytestmark = pytest.mark.tf

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "loops" / "graph_norms.py"
PATHS = {
    "regressor/hidden/kernel",
    "regressor/hidden/bias",
    "regressor/out/kernel",
    "regressor/out/bias",
}


def test_a_graph_loop_fills_the_model_dock_and_the_weights_and_gradients_views(
    qtbot, window, tmp_path
) -> None:
    assert window.open_script(str(SCRIPT))
    status, code = run_to_end(qtbot, window, [str(tmp_path / "own.json"), "40"])
    assert (status, code) == ("finished", 0), window.console.text()[-2000:]
    store = window.inspector.store
    (tree,) = store.trees.values()
    assert tree.root.name == "regressor"
    assert set(store.weights) == PATHS and set(store.gradients) == PATHS
    assert len(store.global_norm.steps) >= 2  # sampled more than once
    for view in ("weights", "gradients"):
        window.inspector.show_view(view)
        widget = getattr(window.inspector, view)
        widget.refresh()
        assert set(widget.paths()) == PATHS
        assert set(widget.rows) == PATHS  # one drawn row per variable of the loop
    window.grab().save(str(tmp_path / "window.png"))
