"""The Runs panel's table compares runs: hyperparameter and metric columns, filters,
differences between the picked runs, tags and notes, columns shown, a scatter view.

Real panel offscreen, run folders written with core's event writer (the recorder's tags:
``step/loss`` per batch, ``epoch/loss`` per epoch).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from tests.core.tfevents import write_events
from tfstudio.core.run_notes import read_notes
from tfstudio.ui.panels.runs import RunsPanel
from tfstudio.ui.panels.runs_table import NotesDialog

SWEEP = {  # name: (optimizer, learning rate, batch size, epoch losses, epoch val losses)
    "adam-small": ("adam", 0.001, 32, [0.9, 0.4], [0.8, 0.25]),
    "adam-big": ("adam", 0.01, 64, [0.8, 0.3], [0.7, 0.35]),
    "sgd-big": ("sgd", 0.1, 128, [1.2, 0.6], [1.1, 0.29]),
    "sgd-small": ("sgd", 0.01, 16, [1.0, 0.5], [0.9, 0.5]),
}


def make_sweep(logdir: Path) -> Path:
    for i, (name, (opt, lr, bs, losses, vals)) in enumerate(SWEEP.items()):
        path = logdir / name
        write_events(
            path,
            {
                "step/loss": [(s, 0.01 * s) for s in range(1, 9)],  # the last batch: 0.08
                "epoch/loss": [(4, losses[0]), (8, losses[1])],
                "epoch/val_loss": [(4, vals[0]), (8, vals[1])],
            },
        )
        hparams = {"optimizer": opt, "optimizer.learning_rate": lr, "batch_size": bs}
        hparams |= {"loss": "mse", "epochs": 2}
        info = {
            "status": "finished",
            "script": "/proj/train.py",
            "start_time": 1.7e9 + i,
            "steps": 8,
            "final_loss": 0.08,
            "hparams": hparams,
        }
        (path / "run.json").write_text(json.dumps(info))
    return logdir


def new_panel(qtbot, settings: QSettings) -> RunsPanel:
    panel = RunsPanel(settings=settings)
    qtbot.addWidget(panel)
    panel.resize(1400, 500)
    panel.show()
    return panel


@pytest.fixture
def settings(tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield s
    s.clear()


@pytest.fixture
def panel(qtbot, settings, tmp_path):
    panel = new_panel(qtbot, settings)
    panel.set_logdir(make_sweep(tmp_path / "runs"))
    qtbot.waitUntil(lambda: not panel.rows_pending(), timeout=30_000)
    yield panel
    panel.close()


def cell(panel, name: str, title: str):
    tree = panel.tree
    col = tree.index_of(title)
    assert col >= 0, f"no column {title!r} in {tree.titles()}"
    for i in range(tree.topLevelItemCount()):
        if tree.topLevelItem(i).text(0) == name:
            return tree.topLevelItem(i), col
    raise AssertionError(f"no run {name!r}")


def text(panel, name: str, title: str) -> str:
    item, col = cell(panel, name, title)
    return item.text(col)


def shown_runs(panel) -> list[str]:
    tree = panel.tree
    items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    return sorted(i.text(0) for i in items if not i.isHidden())


def test_the_loss_column_is_the_last_epochs_mean_not_the_last_batch(panel):
    assert "Final loss" not in panel.tree.titles()
    for name, (_, _, _, losses, vals) in SWEEP.items():
        assert text(panel, name, "loss") == f"{losses[-1]:.4g}"  # not 0.08, the last batch
        assert text(panel, name, "val_loss") == f"{vals[-1]:.4g}"
    assert text(panel, "adam-big", "val_loss.best") == "0.35"
    assert text(panel, "sgd-small", "val_loss.best") == "0.5"
    assert text(panel, "adam-big", "val_loss.best_step") == "8"
    assert text(panel, "sgd-big", "optimizer.learning_rate") == "0.1"
    assert text(panel, "sgd-big", "batch_size") == "128"
    assert text(panel, "sgd-big", "optimizer") == "sgd"
    shown = panel.tree.shown_titles()
    assert shown[:6] == ["Name", "Script", "Date", "Status", "Steps", "loss"]
    assert {"optimizer", "optimizer.learning_rate", "batch_size", "val_loss"} <= set(shown)
    assert "hp.loss" not in shown  # the same in every run


def test_filtering_by_value_keeps_exactly_the_right_runs(panel):
    assert panel.set_filter("val_loss < 0.3") == ""
    assert shown_runs(panel) == ["adam-small", "sgd-big"]
    panel.filter_edit.setText("batch_size >= 64")  # typed: applied as typed
    assert shown_runs(panel) == ["adam-big", "sgd-big"]
    panel.filter_edit.setText("optimizer == adam and optimizer.learning_rate < 0.005")
    assert shown_runs(panel) == ["adam-small"]
    panel.filter_edit.setText("big")  # text: in the name
    assert shown_runs(panel) == ["adam-big", "sgd-big"]
    assert panel.filter_message.isHidden()
    panel.filter_edit.setText("")
    assert shown_runs(panel) == sorted(SWEEP)


def test_a_bad_filter_shows_a_message_and_every_run(panel):
    panel.filter_edit.setText("val_loss <")
    assert not panel.filter_message.isHidden()
    assert panel.filter_message.text() == "filter 'val_loss <': no value after '<'"
    assert shown_runs(panel) == sorted(SWEEP)
    panel.filter_edit.setText("val_los < 0.3")
    assert panel.filter_message.text().startswith("filter 'val_los < 0.3': no column 'val_los'")
    panel.filter_edit.setText("val_loss < low")
    assert "val_loss holds numbers; 'low' is not one" in panel.filter_message.text()
    panel.filter_edit.setText("val_loss < 0.3")
    assert panel.filter_message.isHidden() and shown_runs(panel) == ["adam-small", "sgd-big"]


def test_hyperparameters_that_differ_between_the_picked_runs_are_marked(panel):
    panel.select(["adam-small", "adam-big"])
    assert panel.tree.differing == {"optimizer.learning_rate", "batch_size"}
    item, col = cell(panel, "adam-big", "batch_size")
    assert item.font(col).bold()
    item, col = cell(panel, "adam-big", "optimizer")  # the same in both: not marked
    assert not item.font(col).bold()
    item, col = cell(panel, "sgd-big", "batch_size")  # not picked: not marked
    assert not item.font(col).bold()
    header = panel.tree.headerItem()
    assert header.font(panel.tree.index_of("batch_size")).bold()
    assert not header.font(panel.tree.index_of("optimizer")).bold()
    panel.select(["adam-small", "sgd-small"])
    assert panel.tree.differing == {"optimizer", "optimizer.learning_rate", "batch_size"}
    panel.select(["adam-small"])  # one run: nothing to compare
    assert panel.tree.differing == set()
    item, col = cell(panel, "adam-small", "batch_size")
    assert not item.font(col).bold()


def test_tags_and_notes_are_edited_saved_in_the_folder_shown_and_filterable(panel, qtbot):
    path = panel.logdir / "sgd-big"
    item, col = cell(panel, "sgd-big", "Tags")
    panel.tree.itemDoubleClicked.emit(item, col)  # double-click the Tags cell: the editor
    [dialog] = [w for w in panel.findChildren(NotesDialog) if w.isVisible()]
    assert dialog.windowTitle() == "Tags and note: sgd-big"
    dialog.tags_edit.setText("best, lr sweep")
    dialog.note_edit.setPlainText("high lr, big batch: the one to beat")
    dialog.accept()
    notes = read_notes(path)
    assert notes.tags == ("best", "lr sweep")
    assert notes.note == "high lr, big batch: the one to beat"
    assert json.loads((path / "notes.json").read_text())["tags"] == ["best", "lr sweep"]
    assert text(panel, "sgd-big", "Tags") == "best, lr sweep"
    assert text(panel, "sgd-big", "Note") == "high lr, big batch: the one to beat"
    panel.filter_edit.setText("lr sweep")
    assert shown_runs(panel) == ["sgd-big"]
    panel.filter_edit.setText("tags ~ best and val_loss < 0.3")
    assert shown_runs(panel) == ["sgd-big"]
    # a panel opened later reads them back from the folder
    other = new_panel(qtbot, QSettings())
    other.set_logdir(panel.logdir)
    qtbot.waitUntil(lambda: not other.rows_pending(), timeout=30_000)
    assert text(other, "sgd-big", "Note") == "high lr, big batch: the one to beat"
    other.close()


def test_columns_shown_or_hidden_from_the_header_menu_are_remembered(panel, qtbot, settings):
    menu = panel.tree._header_menu(None)
    actions = {a.text(): a for a in menu.actions() if a.text()}
    assert actions["batch_size"].isChecked() and not actions["hp.loss"].isChecked()
    actions["batch_size"].setChecked(False)
    actions["hp.loss"].setChecked(True)
    shown = panel.tree.shown_titles()
    assert "batch_size" not in shown and "hp.loss" in shown
    again = new_panel(qtbot, settings)  # the next window: the same columns
    again.set_logdir(panel.logdir)
    qtbot.waitUntil(lambda: not again.rows_pending(), timeout=30_000)
    shown = again.tree.shown_titles()
    assert "batch_size" not in shown and "hp.loss" in shown and "optimizer" in shown
    again.close()


def test_scatter_draws_a_metric_against_a_hyperparameter_for_the_listed_runs(panel):
    window = panel.open_scatter()
    window.choose("val_loss", "batch_size")
    xs, ys, names, categories = window.series()
    got = sorted(zip(names, xs, ys, strict=True))
    assert [(n, x) for n, x, _ in got] == [
        ("adam-big", 64.0),
        ("adam-small", 32.0),
        ("sgd-big", 128.0),
        ("sgd-small", 16.0),
    ]
    assert [y for _, _, y in got] == pytest.approx([0.35, 0.25, 0.29, 0.5])
    assert categories == [] and not window.log_x
    window.choose("val_loss", "optimizer")  # words: drawn as categories
    xs, _, names, categories = window.series()
    assert categories == ["adam", "sgd"]
    assert dict(zip(names, xs, strict=True))["sgd-big"] == 1.0
    window.choose("val_loss", "optimizer.learning_rate")  # a sweep over decades: log x
    assert window.log_x
    panel.filter_edit.setText("optimizer == sgd")  # the filter applies to the scatter too
    assert sorted(window.series()[2]) == ["sgd-big", "sgd-small"]
    assert window.note.text() == "2 runs"
    assert sorted(label.toPlainText() for label in window.labels) == ["sgd-big", "sgd-small"]
    window.close()


def test_a_growing_run_is_read_on_at_each_re_list(qtbot, settings, tmp_path):
    """A live run: each re-list reads only what was appended, and the row shows it."""
    writer = write_events(tmp_path / "runs" / "live", {"epoch/loss": [(10, 0.9)]}, keep_open=True)
    (tmp_path / "runs" / "live" / "run.json").write_text(json.dumps({"status": "running"}))
    panel = new_panel(qtbot, settings)
    panel.set_logdir(tmp_path / "runs")
    qtbot.waitUntil(lambda: not panel.rows_pending(), timeout=30_000)
    assert text(panel, "live", "loss") == "0.9"
    writer.add("epoch/loss", 20, 0.7)
    writer.add("epoch/loss", 30, 0.8)
    panel.refresh_list()
    qtbot.waitUntil(lambda: not panel.rows_pending(), timeout=30_000)
    assert text(panel, "live", "loss") == "0.8"  # the last epoch's mean
    assert (
        text(panel, "live", "loss.best") == "0.7" and text(panel, "live", "loss.best_step") == "20"
    )
    [reader] = panel.rows_source._readers.values()
    assert (
        reader.folder.progress()[0]
        == (tmp_path / "runs" / "live").joinpath("events.out.tfevents.1.test").stat().st_size
    )  # read to the end, once
    writer.close()
    panel.close()


def test_a_picked_run_written_elsewhere_has_its_row_followed(qtbot, settings, tmp_path):
    """Follow on: a picked folder another process writes shows its new figures in its row,
    with no re-list (a run on a server, a synced folder)."""
    run = tmp_path / "elsewhere" / "remote"
    writer = write_events(run, {"epoch/loss": [(10, 0.9)]}, keep_open=True)
    panel = new_panel(qtbot, settings)
    panel.open_folder(run)  # listed and picked
    qtbot.waitUntil(lambda: not panel.rows_pending() and not panel.loading(), timeout=30_000)
    assert text(panel, "remote", "loss") == "0.9"
    writer.add("epoch/loss", 20, 0.6)
    qtbot.waitUntil(lambda: text(panel, "remote", "loss") == "0.6", timeout=30_000)
    assert text(panel, "remote", "Steps") == "20"
    writer.close()
    panel.close()
