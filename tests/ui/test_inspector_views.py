"""Inspector views fed with synthetic events: model tree, weights, gradients, outputs, walk."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from tfstudio.core.events import (
    FitStarted,
    GradientStats,
    GradientVariable,
    InspectorStatus,
    LayerOutput,
    LayerOutputs,
    ModelNode,
    ModelSummary,
    ModelTree,
    VariableInfo,
    VariableStats,
    WeightStats,
)
from tfstudio.core.inspector_store import History, InspectorStore, density_image
from tfstudio.ui.panels.outputs import channel_maps, mosaic

BINS = 30


def _tree(fit_index=0):
    line = ModelNode(
        "line",
        "seq/line",
        "Dense",
        "(None, 1)",
        "float32",
        2,
        0,
        (
            VariableInfo("kernel", "seq/line/kernel", (1, 1), "float32", True),
            VariableInfo("bias", "seq/line/bias", (1,), "float32", True),
        ),
        (),
    )
    conv = ModelNode(
        "conv1",
        "seq/conv1",
        "Conv2D",
        "(None, 6, 6, 4)",
        "float32",
        40,
        0,
        (VariableInfo("kernel", "seq/conv1/kernel", (3, 3, 1, 4), "float32", True),),
        (),
    )
    root = ModelNode("seq", "seq", "Sequential", "(None, 1)", "float32", 42, 0, (), (conv, line))
    return ModelTree(fit_index, root, 'Model: "seq"\n Total params: 42')


def _hist(values):
    values = np.asarray(values, float)
    lo, hi = float(values.min()), float(values.max())
    counts = np.histogram(values, BINS, range=(lo, hi if hi > lo else lo + 1e-12))[0]
    return tuple(int(c) for c in counts), lo, hi


def _weights(step):
    w, b = 3 - 3 * np.exp(-step / 50), 2 - 2 * np.exp(-step / 40)
    k = np.random.default_rng(step).normal(0, 0.2, 36)
    hist_k, lo_k, hi_k = _hist(k)
    one = tuple([1] + [0] * (BINS - 1))
    return WeightStats(
        0,
        step,
        (
            VariableStats("seq/conv1/kernel", (3, 3, 1, 4), k.mean(), k.std(), lo_k, hi_k,
                          float(np.linalg.norm(k)), 0.0, hist_k),
            VariableStats("seq/line/kernel", (1, 1), w, 0, w, w, abs(w), 0, one, (w,)),
            VariableStats("seq/line/bias", (1,), b, 0, b, b, abs(b), 0, one, (b,)),
        ),
    )  # fmt: skip


def _outputs(step, samples=4):
    rng = np.random.default_rng(step)
    maps = (rng.random((samples, 4, 6, 6)) * 255).astype(np.uint8)
    maps[1] = 7  # sample 1 is flat: tells samples apart
    act = rng.normal(size=100)
    hist, lo, hi = _hist(act)
    matrix = (rng.random((samples, 1)) * 255).astype(np.uint8)
    return LayerOutputs(
        0,
        step,
        samples,
        (
            LayerOutput(0, "seq", "seq", "Sequential", 0, (samples, 1), "float32", 0, 1, lo, hi,
                        0, 0, hist, matrix=matrix.tobytes(), matrix_shape=(samples, 1)),
            LayerOutput(1, "conv1", "seq/conv1", "Conv2D", 1, (samples, 6, 6, 4), "float32",
                        0.5, 0.2, 0, 1, 0.25, 0.25, hist, thumbs=maps.tobytes(),
                        thumb_shape=(samples, 4, 6, 6)),
            LayerOutput(2, "line", "seq/line", "Dense", 1, (samples, 1), "float32", 0, 1, lo,
                        hi, 0, 0, hist, matrix=matrix.tobytes(), matrix_shape=(samples, 1)),
        ),
    )  # fmt: skip


def _feed(run, steps=range(1, 201, 10)):
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree())
    for step in steps:
        g = np.random.default_rng(step).normal(0, 1 / (1 + step / 50), 36)
        hist, lo, hi = _hist(g)
        run.emit(
            _weights(step),
            GradientStats(
                0,
                step,
                float(np.linalg.norm(g)),
                (GradientVariable("seq/conv1/kernel", float(np.linalg.norm(g)), lo, hi, hist),),
            ),
            _outputs(step),
        )
    run.emit(InspectorStatus(0, steps[-1], "budget", 10, 0.03, 0.012, 2.5, 20_480))
    run.frame()


def test_density_image_places_each_sample_on_a_common_value_grid():
    h = History()
    h.add(0, {}, (4, 0, 0, 0), 0.0, 1.0)  # all values near 0
    h.add(10, {}, (0, 0, 0, 4), 1.0, 2.0)  # all values near 2
    image, (x0, x1, y0, y1) = density_image(h.steps, h.hists, h.ranges, rows=8, cols=10)
    assert (x0, x1, y0, y1) == (0.0, 10.0, 0.0, 2.0)
    assert image.shape == (10, 8)
    assert image[0].argmax() == 0  # first column: density at the bottom
    assert image[-1].argmax() == 7  # last column: at the top
    assert image.max() == pytest.approx(1.0)


def test_history_thins_out_but_keeps_the_newest_samples():
    h = History()
    for step in range(3000):
        h.add(step, {"mean": float(step)}, (1,), 0.0, 1.0)
    assert len(h.steps) <= 1000
    assert h.steps[-1] == 2999 and h.steps[-500:] == list(range(2500, 3000))
    assert h.steps == sorted(h.steps) and h.scalars["mean"] == [float(s) for s in h.steps]


def test_store_selection_matches_layers_and_variables():
    store = InspectorStore()
    store.ingest(_weights(1))
    assert store.variables_under(None) == ["seq/conv1/kernel", "seq/line/kernel", "seq/line/bias"]
    assert store.variables_under("seq/line") == ["seq/line/kernel", "seq/line/bias"]
    assert store.variables_under("seq/line/bias") == ["seq/line/bias"]


def test_model_tree_summary_and_selection_drive_the_views(window, run, qtbot):
    _feed(run)
    panel = window.inspector.model
    tree = panel.tree
    top = tree.topLevelItem(0)
    assert top.text(0) == "fit 1: seq" and top.text(1) == "Sequential"
    names = [top.child(i).text(0) for i in range(top.childCount())]
    assert names == ["conv1", "line"]
    line = top.child(1)
    assert [line.child(i).text(0) for i in range(2)] == ["kernel", "bias"]
    assert line.child(0).text(2) == "(1, 1)" and line.child(1).text(2) == "(1,)"
    assert "Sampling every 10 steps (budget 3%)" in panel.status.text()
    assert "overhead 1.2%" in panel.status.text() and "20.0 kB" in panel.status.text()
    run.emit(InspectorStatus(0, 20, "budget", 480, 0.03, 0.004, 2.5, 20_480, capped=True)).frame()
    assert "every 480 steps (budget 3%, at most one a second)" in panel.status.text()
    assert "overhead 0.4% ·" in panel.status.text()
    # a short run's share holds the first samples' traces: said so, not left to alarm
    run.emit(InspectorStatus(0, 40, "budget", 600, 0.03, 0.139, 2.5, 20_480)).frame()
    assert "overhead 13.9% (one-off traces at the start; it falls toward 3%)" in (
        panel.status.text()
    )
    run.emit(InspectorStatus(0, 50, "fixed", 5, 0.03, 0.139, 2.5, 20_480)).frame()
    assert "overhead 13.9% ·" in panel.status.text()  # a fixed cadence has no budget to keep
    nan = float("nan")  # a later fit's first sample: too little training to say
    run.emit(InspectorStatus(1, 21, "budget", 10, 0.03, nan, 2.5, 20_480)).frame()
    assert "overhead — (measuring)" in panel.status.text()
    dialog = panel.show_summary()
    assert "Total params: 42" in dialog.findChild(type(dialog.children()[-1])).toPlainText()
    dialog.close()
    # Selecting the layer 'line' narrows weights to its variables and shows it in outputs.
    window.inspector.show_view("weights")
    tree.setCurrentItem(line)
    assert list(window.inspector.weights.rows) == ["seq/line/kernel", "seq/line/bias"]
    window.inspector.show_view("outputs")
    assert window.inspector.outputs.current().path == "seq/line"
    panel.all_button.click()
    assert len(window.inspector.weights.paths()) == 3


def test_weights_view_small_variables_show_their_values(qtbot, window, run, tmp_path):
    window.inspector.show_view("weights")
    _feed(run)
    view = window.inspector.weights
    assert list(view.rows) == ["seq/conv1/kernel", "seq/line/kernel", "seq/line/bias"]
    kernel = view.rows["seq/line/kernel"]
    x, y = kernel.lines.curves["value"].getData()
    assert x.tolist() == list(range(1, 201, 10))
    assert y[-1] == pytest.approx(3 - 3 * np.exp(-191 / 50))
    # one value (a (1, 1) kernel): its line across the row, no heat map of a single value
    assert kernel.heatmap.widget.isHidden() and not kernel.heatmap.has_image
    assert kernel.header.text().endswith(f"(1, 1) — value {y[-1]:.4g}")
    conv = view.rows["seq/conv1/kernel"]
    assert not conv.heatmap.widget.isHidden() and "Heat map:" in view.info.text()
    assert conv.heatmap.has_image and conv.heatmap.image.image.shape[1] == 64
    # the mean over the heat map, white on a dark outline (readable on bright and dark)
    (label,) = conv.heatmap.lines
    mean, outline = conv.heatmap.lines[label], conv.heatmap.outlines[label]
    assert np.array_equal(mean.getData()[1], outline.getData()[1]) and len(mean.getData()[1])
    assert outline.zValue() < mean.zValue() and outline.opts["pen"].width() > 2
    assert set(conv.lines.curves) == {"L2 norm", "std"}  # big variables: statistics
    key = conv.lines.plot.titleLabel.text  # two lines: the title names each in its colour
    assert "color:#1f77b4" in key and "L2 norm</span>" in key and "std</span>" in key
    qtbot.wait(50)  # let the scroll area lay its rows out before the screenshot
    assert kernel.isVisible() and kernel.height() > 150
    # its header of statistics is cut, not the plots, in a narrow view (the Model dock open)
    assert "std" in conv.header.text() and conv.minimumSizeHint().width() < 400
    assert conv.header.toolTip() == conv.header.text()  # whole on hover
    assert window.grab().save(str(tmp_path / "inspector_weights.png"))


def test_gradients_view_global_norm_and_rows(qtbot, window, run, tmp_path):
    window.inspector.show_view("gradients")
    view = window.inspector.gradients
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree()).frame()
    # before the first sample: when it comes
    assert view.info.text() == (
        "No gradients sampled yet: the first sample comes after the first training step."
    )
    assert view.global_plot.widget.isHidden()  # no empty plot meanwhile
    _feed(run, range(11, 211, 10))
    assert not view.global_plot.widget.isHidden()
    view = window.inspector.gradients
    x, y = view.global_plot.curves["global norm"].getData()
    assert len(x) == 20 and y[0] > y[-1]
    assert list(view.rows) == ["seq/conv1/kernel"]
    qtbot.wait(50)
    assert view.rows["seq/conv1/kernel"].isVisible()
    assert window.grab().save(str(tmp_path / "inspector_gradients.png"))


def test_a_run_without_gradients_says_why_in_the_past_tense_once_it_ended(window, run):
    window.inspector.show_view("gradients")
    view = window.inspector.gradients
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree(), _weights(1))
    why = (
        "Gradients are not recorded in this fit: the model has no Keras optimizer tfstudio "
        "can see (model.optimizer, or an optimizer held as an attribute) whose apply it "
        "could wrap."
    )
    run.emit(InspectorStatus(0, 1, "budget", 10, 0.03, 0.012, 2.5, 20_480, why)).frame()
    assert view.info.text() == why  # says why there are none, not only that
    run.ended().frame()
    assert view.info.text() == (
        "No gradients were recorded in this run: the model had no Keras optimizer tfstudio "
        "can see (model.optimizer, or an optimizer held as an attribute) whose apply it "
        "could wrap."
    )
    # a run that ended before any sample: no view promises one
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree()).frame()
    run.ended().frame()
    assert view.info.text().startswith("No gradients were sampled: the run ended before")
    window.inspector.show_view("weights")
    assert window.inspector.weights.info.text().startswith("No weights were sampled:")
    window.inspector.show_view("outputs")
    assert window.inspector.outputs.header.text().startswith("No layer outputs were sampled:")


def test_a_scalar_variables_gradient_is_its_signed_line_without_a_heat_map(qtbot, window, run):
    window.inspector.show_view("gradients")
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree())
    for step, g in ((1, -0.5), (11, -0.25), (21, 0.125)):
        one = tuple([1] + [0] * (BINS - 1))
        run.emit(
            _weights(step),
            GradientStats(0, step, abs(g), (GradientVariable("seq/line/bias", abs(g), g, g, one),)),
        )
    run.frame()
    row = window.inspector.gradients.rows["seq/line/bias"]  # shape (1,): one value
    assert row.heatmap.widget.isHidden() and not row.heatmap.has_image
    x, y = row.lines.curves["gradient"].getData()
    assert x.tolist() == [1, 11, 21] and y.tolist() == [-0.5, -0.25, 0.125]  # the sign kept
    assert row.header.text().endswith("— gradient 0.125")


def test_a_line_plots_key_takes_the_room_it_has_and_never_widens_the_plot(qtbot):
    from tfstudio.ui.panels.inspector_plots import LinePlot

    plot = LinePlot("values", "value", [0.0])
    qtbot.addWidget(plot.widget)
    plot.widget.resize(330, 200)
    plot.widget.show()
    x = np.arange(0, 380, 20.0)
    for i in range(16):  # a bias of 16 values: one line each
        plot.set_line(f"[{i}]", x, np.sin(x / 50 + i))
    plot.done()
    qtbot.wait(10)
    # the plot stays inside its widget (a wide key had pushed the newest steps out of view)
    assert plot.plot.geometry().width() <= plot.widget.width()
    key = plot.plot.titleLabel.text
    assert "[0]" in key and "[15]" not in key and "+" in key  # the rest counted, not cut
    assert key.count("<br>") == 1  # on two rows before any is left out
    plot.widget.resize(1300, 200)
    qtbot.wait(10)
    assert "[15]" in plot.plot.titleLabel.text and "+" not in plot.plot.titleLabel.text
    assert "<br>" not in plot.plot.titleLabel.text  # one row when it fits


def test_a_narrow_line_plots_key_names_both_lines_left_of_its_buttons(qtbot):
    """The Layer outputs tab's dead-units plot: "dead units" and "zeros" both named (in a
    smaller font if need be), and the key ends before the buttons (a "+1" had been hidden
    under "all")."""
    from tfstudio.ui.panels.inspector_plots import LinePlot

    plot = LinePlot("dead units", "share", [0.0])
    qtbot.addWidget(plot.widget)
    plot.widget.resize(270, 170)
    plot.widget.show()
    x = np.array([11.0, 83.0])
    plot.set_line("dead units", x, np.zeros(2), "#d62728")
    plot.set_line("zeros", x, np.full(2, 0.5), "#1f77b4")
    plot.done()
    qtbot.wait(20)
    key = plot.plot.titleLabel.text
    assert "dead units" in key and "zeros" in key and "+" not in key
    item = plot.plot.titleLabel.item
    right = plot.widget.mapFromScene(item.mapToScene(item.boundingRect().topRight())).x()
    assert right <= plot.all_button.x(), (right, plot.all_button.x())
    painter = mock.Mock()  # its legend is empty: no frame (it drew a dash above "all")
    plot.legend.paint(painter)
    painter.drawRect.assert_not_called()
    for width in (200, 150):  # narrower: what does not fit is counted (or no key), left of them
        plot.widget.resize(width, 170)
        qtbot.wait(20)
        item = plot.plot.titleLabel.item
        right = plot.widget.mapFromScene(item.mapToScene(item.boundingRect().topRight())).x()
        assert right <= plot.all_button.x() + 1, (width, right, plot.all_button.x())


def test_outputs_view_says_why_a_fit_has_no_layer_outputs(window, run):
    window.inspector.show_view("outputs")
    view = window.inspector.outputs
    run.started().fit(epochs=1, steps_per_epoch=200).emit(_tree(), _weights(1)).frame()
    assert view.header.text() == "No layer outputs yet."
    assert view.picture.isHidden() and view.dead.widget.isHidden()  # no empty axes
    off = "Layer outputs are not sampled in this fit: its dataset reshuffles every epoch, ..."
    status = InspectorStatus(0, 1, "budget", 10, 0.03, 0.012, 2.5, 20_480, "", off)
    run.emit(status).frame()
    assert view.header.text() == off
    assert view.picture.isHidden() and view.heatmap.widget.isHidden()


def test_a_custom_loop_is_titled_a_loop_and_its_empty_views_say_why(window, run):
    """A loop's model tree reads "loop 1: ...", the outputs and walk views say why they
    stay empty, and a run that ended before its overhead could be measured says so."""
    run.started().emit(
        FitStarted(0, ModelSummary("seq", "custom loop", (), 42, 42), 1, 0, None, 1, 0, 0.0,
                   kind="loop", loop_index=1),
        _tree(),
        _weights(2),
    )  # fmt: skip
    off = "Layer outputs are not sampled in a custom training loop: ..."
    nan = float("nan")
    run.emit(InspectorStatus(0, 2, "budget", 300, 0.03, nan, 9.6, 400, "", off)).frame()
    panel = window.inspector.model
    assert panel.tree.topLevelItem(0).text(0) == "loop 1: seq"
    assert "overhead — (measuring)" in panel.status.text()
    window.inspector.show_view("outputs")
    assert window.inspector.outputs.header.text() == off
    window.inspector.show_view("walk")
    walk = window.inspector.walk
    assert walk.info.text() == "No forward walk. " + off and walk.table.rowCount() == 0
    run.ended().frame()
    assert "overhead — (too little training to measure)" in panel.status.text()
    # the next run (a fit) starts afresh: its tree is a fit's, the walk has no stale reason
    run.started().frame()
    assert walk.info.text() == "No forward walk yet."
    run.fit().emit(_tree()).frame()
    assert panel.tree.topLevelItem(0).text(0) == "fit 1: seq"


def test_outputs_view_feature_maps_for_a_chosen_sample(window, run, tmp_path):
    window.inspector.show_view("outputs")
    _feed(run)
    view = window.inspector.outputs
    assert not view.picture.isHidden() and not view.dead.widget.isHidden()
    assert view.current().path == "seq/conv1"  # first layer with feature maps
    shown = view.image.image.T  # ImageItem holds (x, y)
    assert shown.shape == mosaic(channel_maps(view.current(), 0)).shape == (6 * 2 + 2, 6 * 2 + 2)
    view.sample.setValue(1)
    assert (view.image.image.T[:6, :6] == 7).all()  # sample 1's flat maps
    assert "dead units 25.0%" in view.header.text()
    x, y = view.dead.curves["dead units"].getData()
    assert len(x) == 20 and y[-1] == pytest.approx(0.25)
    items = [view.layer_list.item(i).text().strip() for i in range(view.layer_list.count())]
    assert items == ["seq  (4, 1)", "conv1  (4, 6, 6, 4)", "line  (4, 1)"]
    assert window.grab().save(str(tmp_path / "inspector_outputs.png"))


def test_walk_lists_layers_in_forward_order(window, run):
    window.inspector.show_view("walk")
    _feed(run)
    table = window.inspector.walk.table
    assert table.rowCount() == 3
    assert [table.item(r, 1).text().strip() for r in range(3)] == ["seq", "conv1", "line"]
    assert table.item(1, 3).text() == "(4, 6, 6, 4)" and table.item(1, 9).text() == "25.0%"
    table.selectRow(2)
    assert window.inspector.outputs.current().path == "seq/line"
    run.started().frame()  # the next run: no rows of the last one's walk
    assert table.rowCount() == 0 and window.inspector.walk.info.text() == "No forward walk yet."


def test_view_names_and_run_options(window):
    with pytest.raises(ValueError, match="unknown view 'nope'"):
        window.inspector.show_view("nope")
    assert window.inspector.run_options().inspector_budget == pytest.approx(0.03)
    window.inspector.model.set_sample_every(7)
    assert window.inspector.run_options().sample_every == 7


def test_run_passes_inspector_options_to_the_launcher(window, script, launcher, monkeypatch):
    seen = {}
    start = launcher.start

    def recording_start(path, args=(), options=None):
        seen["options"] = options
        return start(path, args, options)

    monkeypatch.setattr(launcher, "start", recording_start)
    window.inspector.model.set_sample_every(5)
    window.open_script(str(script))
    assert window.run_script()
    assert seen["options"].sample_every == 5


def test_cli_view_and_sample_every_flags():
    from tfstudio.cli import gui_parser, headless_parser

    ns = gui_parser().parse_args(["train.py", "--view", "weights", "--sample-every", "7"])
    assert (ns.view, ns.sample_every) == ("weights", 7)
    with pytest.raises(SystemExit):
        gui_parser().parse_args(["--view", "nope"])
    ns = headless_parser().parse_args(["--sample-every", "3", "train.py", "--epochs", "2"])
    assert (ns.sample_every, ns.script, ns.args) == (3, "train.py", ["--epochs", "2"])


def _many_weights(step, n=12):
    """WeightStats of ``n`` 8x8 kernels whose mean is ``step`` (the header says it)."""
    variables = []
    for i in range(n):
        k = np.full(64, float(step)) + np.linspace(-1, 1, 64)
        counts, lo, hi = _hist(k)
        variables.append(
            VariableStats(
                f"m/d{i}/kernel",
                (8, 8),
                float(k.mean()),
                float(k.std()),
                lo,
                hi,
                float(np.linalg.norm(k)),
                0.0,
                counts,
            )
        )
    return WeightStats(0, step, tuple(variables))


def test_weight_rows_out_of_view_are_drawn_when_scrolled_to(qtbot):
    from PySide6.QtWidgets import QApplication

    from tfstudio.ui.panels.weights import WeightsView

    store = InspectorStore()
    view = WeightsView(store, [0.0])
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.show()
    store.ingest(_many_weights(1))
    view.refresh()
    QApplication.processEvents()
    rows = list(view.rows.values())
    assert len(rows) == 12
    bar = view.scroll.verticalScrollBar()
    assert bar.maximum() > 0  # 12 rows do not fit in 500 px

    store.ingest(_many_weights(7))
    view.refresh()
    first, last = rows[0], rows[-1]
    assert "mean 7" in first.header.text()  # in view: drawn with the new sample
    assert "mean 1" in last.header.text()  # scrolled out of view: not drawn yet

    bar.setValue(bar.maximum())  # scrolled to: drawn at once
    assert "mean 7" in last.header.text()
