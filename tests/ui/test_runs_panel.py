"""The runs panel lists, opens, overlays, follows, renames, deletes and exports runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from tests.core.tfevents import write_events


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


def rows_read(panel, qtbot):
    """Once every listed run's row (metric figures, hparams, notes) has been read."""
    qtbot.waitUntil(lambda: not panel.rows_pending(), timeout=30_000)


def cell(panel, name: str, title: str) -> str:
    """The text in run ``name``'s row under the column titled ``title``."""
    tree = panel.tree
    col = tree.index_of(title)
    assert col >= 0, f"no column {title!r} in {tree.titles()}"
    for i in range(tree.topLevelItemCount()):
        if tree.topLevelItem(i).text(0) == name:
            return tree.topLevelItem(i).text(col)
    raise AssertionError(f"no run {name!r}")


def loaded(panel, qtbot, timeout=30_000):
    """The picked runs' stores, once each has been read (on the panel's reading thread)."""
    qtbot.waitUntil(lambda: not panel.loading(), timeout=timeout)
    return [store for store, _ in panel.picked()]


def test_lists_runs_and_picks_them_into_stores_read_off_the_ui_thread(panel, qtbot, tmp_path):
    make_run(tmp_path, "mlp-20260101-000000", [2.0, 1.0, 0.5, 0.4])
    make_run(tmp_path, "cnn-20260102-000000", [3.0, 2.5, 1.0])
    panel.set_logdir(tmp_path)
    assert panel.tree.topLevelItemCount() == 2
    second = panel.tree.topLevelItem(1)  # the newest run first
    assert panel.tree.topLevelItem(0).text(0) == "cnn-20260102-000000"
    assert [second.text(i) for i in (0, 1, 3, 4)] == [
        "mlp-20260101-000000",
        "mlp.py",
        "finished",
        "4",
    ]
    rows_read(panel, qtbot)
    # no epochs recorded: the loss column is its last step's value, and says so
    assert cell(panel, "mlp-20260101-000000", "loss") == "0.4*"
    assert "no epoch values" in second.toolTip(panel.tree.index_of("loss"))
    picked = []
    panel.picked_changed.connect(lambda: picked.append(len(panel.selected_paths())))
    panel.select(["mlp-20260101-000000"])
    assert panel.loading() and "mlp-20260101-000000" in panel.progress_label.text()
    assert not panel.progress_label.isHidden()
    [mlp] = loaded(panel, qtbot)
    assert panel.progress_label.text() == "" and panel.progress_label.isHidden()  # no blank row
    x, y = mlp.steps["loss"].points()
    assert x.tolist() == [1, 2, 3, 4] and y.tolist() == pytest.approx([2.0, 1.0, 0.5, 0.4])
    panel.select(["mlp-20260101-000000", "cnn-20260102-000000"])
    stores = loaded(panel, qtbot)
    assert [s.name for s in stores] == ["cnn-20260102-000000", "mlp-20260101-000000"]
    assert stores[1] is mlp  # read once, kept while picked
    assert len({colour for _, colour in panel.picked()}) == 2  # one colour per run
    assert picked == [1, 2]
    panel.select(["cnn-20260102-000000"])  # unpicked: forgotten
    assert [s.name for s in loaded(panel, qtbot)] == ["cnn-20260102-000000"]
    assert len(panel.stores) == 1
    assert not hasattr(panel, "plots")  # the panel draws no plots of its own
    panel.grab().save(str(tmp_path / "panel.png"))


def test_a_failed_runs_status_says_why_on_hover(panel, tmp_path):
    """The error run.json keeps (its telling line, where), or a stopped run's message."""
    failed = make_run(tmp_path, "bad-20260101-000000", [1.0], status="failed")
    info = json.loads((failed / "run.json").read_text())
    info["error"] = {
        "type": "InvalidArgumentError",
        "message": "Graph execution error:\n\n  File x\n\nMatrix size-incompatible: In[0]: "
        "[32,5], In[1]: [8,16]\n\t [[{{node seq/dense/MatMul}}]] [Op:__inference_f_1]",
        "where": "/proj/bad.py:11",
    }
    (failed / "run.json").write_text(json.dumps(info))
    stopped = make_run(tmp_path, "mlp-20260102-000000", [1.0], status="stopped")
    info = json.loads((stopped / "run.json").read_text())
    info["message"] = "stopped by the user at step 1"
    (stopped / "run.json").write_text(json.dumps(info))
    make_run(tmp_path, "ok-20260103-000000", [1.0])
    panel.set_logdir(tmp_path)
    tips = {
        panel.tree.topLevelItem(i).text(0): panel.tree.topLevelItem(i).toolTip(3)
        for i in range(panel.tree.topLevelItemCount())
    }
    assert tips == {
        "bad-20260101-000000": "InvalidArgumentError at /proj/bad.py:11:\nMatrix "
        "size-incompatible: In[0]: [32,5], In[1]: [8,16] (in graph node seq/dense/MatMul)",
        "mlp-20260102-000000": "stopped by the user at step 1",
        "ok-20260103-000000": "",
    }


def test_runs_sort_by_a_header_numbers_as_numbers(panel, qtbot, tmp_path):
    make_run(tmp_path, "long-20260101-000000", [1.0] * 12)
    make_run(tmp_path, "short-20260102-000000", [2.0] * 9)
    make_run(tmp_path, "mid-20260103-000000", [0.5] * 10)
    panel.set_logdir(tmp_path)

    def names():
        tree = panel.tree
        return [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]

    assert names() == ["mid-20260103-000000", "short-20260102-000000", "long-20260101-000000"]
    panel.tree.sortByColumn(4, Qt.SortOrder.AscendingOrder)  # Steps: 9, 10, 12 (not "10" < "9")
    assert names() == ["short-20260102-000000", "mid-20260103-000000", "long-20260101-000000"]
    rows_read(panel, qtbot)
    panel.tree.sortByColumn(panel.tree.index_of("loss"), Qt.SortOrder.AscendingOrder)
    assert names()[0] == "mid-20260103-000000"
    panel.refresh_list()  # a re-list keeps the order the user chose
    assert names()[0] == "mid-20260103-000000"


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
    assert panel.stores == {} and panel.picked() == []


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
def test_opens_a_keras_tensorboard_log_dir(panel, qtbot, tmp_path):
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
    [store] = loaded(panel, qtbot)
    # Keras's train/epoch_loss and validation/epoch_loss: the live run's loss and val_loss,
    # at the steps where their epochs ended (3 batches an epoch: validation's iterations)
    assert store.epochs["loss"].xs == [3, 6, 9] and all(v > 0 for v in store.epochs["loss"].ys)
    assert store.epochs["val_loss"].xs == [3, 6, 9]
    assert len(store.epochs["val_loss"].ys) == 3
    assert store.families()[0] == "loss"
    # the table: Keras's last epoch means (train/epoch_loss, validation/epoch_loss)
    rows_read(panel, qtbot)
    assert cell(panel, "keras-logs", "loss") == f"{store.epochs['loss'].ys[-1]:.4g}"
    assert cell(panel, "keras-logs", "val_loss") == f"{store.epochs['val_loss'].ys[-1]:.4g}"
    # its histograms are the inspector tabs' when the run is shown (Show run)
    assert any(panel._reader(panel.selected_paths()[0]).histograms)
    # a runs directory holding such a log folder lists it too
    panel.set_logdir(tmp_path)
    assert "keras-logs" in [r.name for r in panel.runs()]


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
        picked = panel.picked()
        loss = picked[0][0].steps.get("loss") if picked else None
        return loss.points() if loss is not None else ((), ())

    # How far the panel lags behind a writer is a figure, not a test
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
