"""The runs panel on URLs: list, open, follow through TensorBoard's file layer; say what fails."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from tests.core.tfevents import write_events
from tests.ui.test_runs_panel import loaded, make_run
from tfstudio.core.locations import UrlPath

pytest.importorskip("fsspec", reason="TensorBoard's layer reaches file:// through fsspec")


@pytest.fixture
def panel(runs_panel):
    return runs_panel


def test_a_url_runs_directory_lists_opens_and_follows(panel, qtbot, tmp_path):
    make_run(tmp_path, "mlp-20260101-000000", [2.0, 1.0, 0.5])
    url = f"file://{tmp_path}"
    panel.set_logdir(url)
    assert panel.logdir == UrlPath(url)
    assert panel.tree.topLevelItemCount() == 1 and not panel.error_label.isVisible()
    panel.select(["mlp-20260101-000000"])
    [path] = panel.selected_paths()
    assert path == UrlPath(f"{url}/mlp-20260101-000000")
    [store] = loaded(panel, qtbot)
    assert store.steps["loss"].points()[1].tolist() == [2.0, 1.0, 0.5]
    writer = write_events(tmp_path / "mlp-20260101-000000", {}, keep_open=True)
    writer.add("step/loss", 4, 0.25)  # the run goes on elsewhere
    writer.close()
    qtbot.waitUntil(lambda: store.steps["loss"].count() == 4, timeout=30_000)
    assert store.steps["loss"].points()[1].tolist() == [2.0, 1.0, 0.5, 0.25]


def test_a_url_log_folder_opened_by_hand_shows_its_scalars(panel, qtbot, tmp_path):
    write_events(tmp_path / "keras" / "train", {"epoch_loss": [(0, 0.9), (1, 0.7)]})
    panel.open_folder(f"file://{tmp_path}/keras")
    assert [p.name for p in panel.selected_paths()] == ["keras"]
    [store] = loaded(panel, qtbot)
    assert store.epochs["loss"].ys == pytest.approx([0.9, 0.7])


def test_an_unreadable_scheme_is_said_and_the_panel_goes_on(panel, tmp_path, monkeypatch):
    panel.set_logdir("nosuchfs://bucket/runs")
    assert panel.error_label.isVisible()
    text = panel.error_label.text()
    assert "nosuchfs://bucket/runs" in text and "TensorBoard's file layer" in text
    assert panel.tree.topLevelItemCount() == 0
    make_run(tmp_path, "mlp-20260101-000000", [2.0, 1.0])
    panel.set_logdir(tmp_path)  # a readable folder again: the message goes
    assert panel.tree.topLevelItemCount() == 1 and not panel.error_label.isVisible()
    # renaming where the layer cannot: a warning, not a crash
    panel.set_logdir(f"file://{tmp_path}")
    panel.select(["mlp-20260101-000000"])
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warned.append(a[2]))
    monkeypatch.setattr(
        "tfstudio.ui.panels.runs.QInputDialog.getText", lambda *a, **k: ("renamed", True)
    )
    panel._on_rename_clicked()
    assert warned and "cannot rename" in warned[0]
    assert (tmp_path / "mlp-20260101-000000").is_dir()
