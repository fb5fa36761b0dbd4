"""The Runs list while runs are added: the rows a user aims at stay where they are.

Issue 52: a new run was inserted at the top while the user was clicking a row, so
the click picked the wrong run (the list was cleared and rebuilt on every re-list).
"""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtWidgets import QApplication

from tests.core.tfevents import write_events
from tfstudio.core.events import RunEnded, RunStarted
from tfstudio.ui.panels.runs import RunsPanel


def add_run(logdir, i):
    """Run folder ``run-NN``, started at ``i`` (a higher ``i`` is newer: listed higher)."""
    name = f"run-{i:02d}"
    write_events(logdir / name, {"step/loss": [(1, 1.0 + i), (2, 0.5 + i)]})
    info = {"status": "finished", "script": "/p/train.py", "start_time": 1000.0 + i, "steps": 2}
    (logdir / name / "run.json").write_text(json.dumps(info))
    return name


def names(panel):
    tree = panel.tree
    return [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]


def item_named(panel, name):
    tree = panel.tree
    return next(
        tree.topLevelItem(i)
        for i in range(tree.topLevelItemCount())
        if tree.topLevelItem(i).text(0) == name
    )


@pytest.fixture
def panel(qtbot, tmp_path):
    for i in range(3):
        add_run(tmp_path, i)
    p = RunsPanel(tmp_path)
    qtbot.addWidget(p)
    p.resize(700, 300)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.loader.close()


def test_a_new_run_keeps_the_selection_and_the_picked_runs_on_the_same_runs(panel, tmp_path):
    assert names(panel) == ["run-02", "run-01", "run-00"]
    panel.select(["run-01", "run-00"])
    picked = dict(panel.stores)
    row = item_named(panel, "run-01")
    panel.tree.setCurrentItem(row, 0, panel.tree.selectionModel().SelectionFlag.NoUpdate)
    add_run(tmp_path, 3)
    panel.refresh_list()
    assert names(panel) == ["run-03", "run-02", "run-01", "run-00"]  # the newest on top
    assert [p.name for p in panel.selected_paths()] == ["run-01", "run-00"]
    assert panel.stores == picked  # the same stores: nothing read again, nothing dropped
    assert [store.name for store, _ in panel.picked()] == ["run-01", "run-00"]
    assert item_named(panel, "run-01") is row  # the row itself, not a new one
    assert panel.tree.currentItem() is row


def test_while_the_mouse_is_over_the_list_no_row_moves_under_it(panel, tmp_path, qtbot):
    viewport = panel.tree.viewport()
    aim = panel.tree.visualItemRect(item_named(panel, "run-01")).center()
    viewport.setAttribute(Qt.WidgetAttribute.WA_UnderMouse, True)  # the pointer is over it
    add_run(tmp_path, 3)
    panel.ingest_event(RunStarted("/p/train.py", ("train.py",), "/p", 1003.0))
    panel.ingest_event(RunEnded("finished", 0, 1, 2, 1.0))  # the list is read again now
    panel.refresh()
    assert panel.tree.itemAt(aim).text(0) == "run-01"  # a click there picks run-01 still
    assert names(panel) == ["run-02", "run-01", "run-00"]
    # the new run comes in when the mouse leaves the list
    viewport.setAttribute(Qt.WidgetAttribute.WA_UnderMouse, False)
    QApplication.sendEvent(viewport, QEvent(QEvent.Type.Leave))
    qtbot.waitUntil(lambda: names(panel) == ["run-03", "run-02", "run-01", "run-00"])
    # a re-list asked for (another runs folder, a folder opened) is never held
    viewport.setAttribute(Qt.WidgetAttribute.WA_UnderMouse, True)
    add_run(tmp_path, 4)
    panel.set_logdir(tmp_path)
    assert names(panel)[0] == "run-04"


def test_a_list_scrolled_down_keeps_its_rows_in_place(qtbot, tmp_path):
    for i in range(40):
        add_run(tmp_path, i)
    panel = RunsPanel(tmp_path)
    qtbot.addWidget(panel)
    panel.resize(700, 300)
    panel.show()
    qtbot.waitExposed(panel)
    bar = panel.tree.verticalScrollBar()
    assert bar.maximum() > 0
    bar.setValue(bar.maximum() // 2)
    top = panel.tree.itemAt(QPoint(5, 5)).text(0)
    add_run(tmp_path, 40)
    add_run(tmp_path, 41)
    panel.refresh_list()
    assert names(panel)[:2] == ["run-41", "run-40"]
    assert panel.tree.itemAt(QPoint(5, 5)).text(0) == top
    panel.loader.close()


def test_the_window_keeps_its_size_while_the_list_fills_and_runs_are_read(window, qtbot, tmp_path):
    window.resize(1200, 820)
    qtbot.waitExposed(window)
    QApplication.processEvents()
    size = window.size()
    window.runs_dock.raise_()
    window.runs.set_logdir(tmp_path)
    for i in range(50):  # runs arrive one by one, the list re-read each time
        add_run(tmp_path, i)
        window.runs.refresh_list()
        QApplication.processEvents()
        assert window.size() == size, i
    window.runs.select([f"run-{i:02d}" for i in range(50)])  # "reading …" all of them
    reading = window.runs.progress_label.text()
    assert not window.runs.progress_label.isHidden()
    QApplication.sendPostedEvents()  # the layouts take the label's text
    assert window.size() == size
    assert reading == "reading run-00, run-01, run-02 and 47 more…"
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    QApplication.processEvents()
    assert window.size() == size
    assert not window.runs.progress_label.isVisible() and window.runs.hint.isVisible()
