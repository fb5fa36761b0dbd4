"""The runs panel lists, opens, overlays, follows, renames, deletes and exports runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from tests.core.tfevents import write_events
from tfstudio.core.smoothing import ema


def make_run(logdir: Path, name: str, losses: list[float], status: str = "finished") -> Path:
    path = logdir / name
    write_events(path, {"step/loss": list(enumerate(losses, start=1))})
    info = {
        "status": status,
        "script": f"/proj/{name.split('-')[0]}.py",
        "start_time": 1_700_000_000.0 + len(list(logdir.iterdir())),
        "steps": len(losses),
        "final_loss": losses[-1],
    }
    (path / "run.json").write_text(json.dumps(info))
    return path


@pytest.fixture
def panel(runs_panel):
    return runs_panel


def test_lists_opens_and_overlays_runs(panel, tmp_path):
    make_run(tmp_path, "mlp-20260101-000000", [2.0, 1.0, 0.5, 0.4])
    make_run(tmp_path, "cnn-20260102-000000", [3.0, 2.5, 1.0])
    panel.set_logdir(tmp_path)
    assert panel.tree.topLevelItemCount() == 2
    first = panel.tree.topLevelItem(0)
    assert [first.text(i) for i in (0, 1, 3, 4, 5)] == [
        "mlp-20260101-000000",
        "mlp.py",
        "finished",
        "4",
        "0.4",
    ]
    panel.select(["mlp-20260101-000000"])
    plot = panel.plots["step/loss"]
    assert plot.runs() == ["mlp-20260101-000000"]
    x, y = plot.smooth["mlp-20260101-000000"].getData()
    assert list(x) == [1, 2, 3, 4]
    assert list(y) == pytest.approx(ema([2.0, 1.0, 0.5, 0.4], panel.smoothing_weight()))
    panel.select(["mlp-20260101-000000", "cnn-20260102-000000"])
    assert sorted(plot.runs()) == ["cnn-20260102-000000", "mlp-20260101-000000"]
    colours = {plot.smooth[r].opts["pen"].color().name() for r in plot.runs()}
    assert len(colours) == 2  # one colour per run
    legend = panel.legend.text()  # one legend for all plots, in the runs' colours
    for run in plot.runs():
        assert run in legend and plot.smooth[run].opts["pen"].color().name() in legend
    # smoothing off: the smoothed curve is the raw one and the faint copy is hidden
    panel.smoothing.set_weight(0)
    _, y = plot.smooth["cnn-20260102-000000"].getData()
    assert list(y) == [3.0, 2.5, 1.0]
    assert not plot.raw["cnn-20260102-000000"].isVisible()
    panel.grab().save(str(tmp_path / "panel.png"))


def test_delete_asks_first_and_rename(panel, tmp_path, monkeypatch):
    a = make_run(tmp_path, "a-20260101-000000", [1.0, 0.5])
    make_run(tmp_path, "b-20260101-000001", [1.0])
    panel.set_logdir(tmp_path)
    panel.select([a.name])
    asked = []

    def answer(reply):
        def question(*args, **kwargs):
            asked.append(args[2])
            return reply

        return question

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.No))
    panel._on_delete_clicked()
    assert a.exists() and "a-20260101-000000" in asked[0]
    renamed = panel.rename_selected("baseline")
    assert renamed.exists() and not a.exists()
    assert panel.selected_paths() == [renamed]
    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.Yes))
    panel._on_delete_clicked()
    assert not renamed.exists() and len(asked) == 2
    assert [panel.tree.topLevelItem(i).text(0) for i in range(panel.tree.topLevelItemCount())] == [
        "b-20260101-000001"
    ]
    assert panel.plots == {}


def test_export_plot_png_svg_and_series_csv(panel, tmp_path):
    make_run(tmp_path, "a-20260101-000000", [1.0, 0.5, 0.25])
    panel.set_logdir(tmp_path)
    panel.select(["a-20260101-000000"])
    plot = panel.plots["step/loss"]
    for suffix in ("png", "svg", "csv"):
        plot.export(tmp_path / f"loss.{suffix}")
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "<svg" in (tmp_path / "loss.svg").read_text()
    csv_text = (tmp_path / "loss.csv").read_text()
    assert "0.25" in csv_text and "3" in csv_text
    with pytest.raises(ValueError, match="expected a .png"):
        plot.export(tmp_path / "loss.gif")


KERAS_TB = """
import sys, numpy as np, keras
x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
tb = keras.callbacks.TensorBoard(sys.argv[1], histogram_freq=1)
m.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, verbose=0, callbacks=[tb])
"""


@pytest.mark.tf  # Keras writes the log folder, in a process of its own
def test_opens_a_keras_tensorboard_log_dir(panel, tmp_path):
    logs = tmp_path / "keras-logs"
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KERAS_TB), str(logs)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    panel.open_folder(logs)
    assert panel.selected_paths() == [logs.resolve()]
    assert panel.tree.topLevelItem(0).text(3) == "tensorboard"
    loss = panel.plots["train/epoch_loss"]
    x, y = loss.smooth["keras-logs"].getData()
    assert list(x) == [0, 1, 2] and all(v > 0 for v in y)
    assert "validation/epoch_loss" in panel.plots
    # a runs directory holding such a log folder lists it too
    panel.set_logdir(tmp_path)
    assert "keras-logs" in [r.name for r in panel.runs()]
    hist_tags = [t for t, p in panel.plots.items() if p.histogram]
    assert hist_tags, f"no histogram plots among {list(panel.plots)}"


WRITER = """
import sys
from pathlib import Path
from tests.core.tfevents import EventWriter
writer = EventWriter(Path(sys.argv[1]))
for steps in (range(1, 21), range(21, 41)):
    for step in steps:
        writer.add("step/loss", step, 1.0 / step)
    print("wrote", step, flush=True)
    sys.stdin.readline()  # the test says when to go on
writer.close()
"""


def test_follows_a_folder_written_by_another_process(panel, qtbot, tmp_path):
    run_dir = tmp_path / "elsewhere" / "remote-20260101-000000"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )

    def shown() -> tuple:
        plot = panel.plots.get("step/loss")
        return plot.raw[run_dir.name].getData() if plot is not None else ((), ())

    # How far the panel lags behind a writer is a figure, not a test: bench/recording.py
    try:
        assert proc.stdout.readline().split() == ["wrote", "20"]
        panel.open_folder(run_dir)
        qtbot.waitUntil(lambda: len(shown()[0]) == 20, timeout=30_000)
        proc.stdin.write("go on\n")
        proc.stdin.flush()
        assert proc.stdout.readline().split() == ["wrote", "40"]
        # nothing asks the panel: it re-reads the folder on its own (the limit is a safety net)
        qtbot.waitUntil(lambda: len(shown()[0]) == 40, timeout=30_000)
        assert proc.poll() is None  # followed while the writer still had the file open
    finally:
        proc.stdin.close()  # end of input: the writer closes its file and ends
        proc.wait(timeout=60)
    x, y = shown()
    assert list(x) == list(range(1, 41))  # every step, once, in order
    assert list(y) == pytest.approx([1.0 / step for step in range(1, 41)])
