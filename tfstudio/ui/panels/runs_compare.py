"""The Runs panel's comparing half: rows read off the UI thread, the filter box, tags and
notes, the scatter window (a mixin of :class:`~tfstudio.ui.panels.runs.RunsPanel`).

Split from ``runs.py``: the panel lists, picks and follows runs; this reads what a row
shows beyond ``run.json`` (metric figures, hyperparameters, notes) on a thread of its own,
read on from where each folder's last read ended, and acts on the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QSizePolicy,
    QTreeWidgetItem,
    QWidget,
)

from tfstudio.core.locations import Location, location
from tfstudio.core.run_notes import read_notes, write_notes
from tfstudio.core.run_table import RowSource, RunRow
from tfstudio.core.runs import RunInfo, describe_run
from tfstudio.ui.panels.runs_table import PATH_ROLE, NotesDialog, RunsTable

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

ROWS_POLL_MS = 100  # while rows' metric figures are read: they show as each is read


class RunsCompare:
    """Rows read, filter, notes and scatter of the Runs panel (which provides ``tree``,
    ``rows_changed`` and ``selected_paths``)."""

    tree: RunsTable
    rows_changed: SignalInstance
    selected_paths: Callable[[], list[Location]]

    def _init_compare(self) -> None:
        """Make the rows thread and the filter box (from the panel's ``__init__``)."""
        self.rows_source = RowSource()  # used on the rows thread only
        self._rows_thread = ThreadPoolExecutor(1, thread_name_prefix="tfstudio-run-rows")
        self._rows_pending: dict[str, Future[RunRow]] = {}
        self.rows_timer = QTimer(self)
        self.rows_timer.setInterval(ROWS_POLL_MS)
        self.rows_timer.timeout.connect(self.take_rows)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText(
            "filter: text in a name, tag or note, or e.g. val_loss < 0.3 and optimizer == adam"
        )
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.set_filter)
        self.filter_message = QLabel()
        self.filter_message.setWordWrap(True)
        self.filter_message.setStyleSheet("color: #c92a2a;")
        self.filter_message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.filter_message.hide()
        self.scatters: list[QWidget] = []  # open scatter windows
        self._rows_follow_at = 0.0  # when to read the followed runs' rows again (monotonic)

    def _fill(self, item: QTreeWidgetItem, run: RunInfo) -> None:
        """A row's run as listed now; what was read of it (metrics, hparams, notes) kept
        until it is read again."""
        old = self.tree.rows.get(str(run.path))
        row = RunRow(run) if old is None else RunRow(run, old.hparams, old.metrics, old.notes)
        self.tree.set_row(item, row)

    def _read_rows(self, runs: Sequence[RunInfo]) -> None:
        """Read the listed runs' metric figures, hyperparameters and notes on the rows
        thread (each run once at a time; a run read before is read on from its end)."""
        for run in runs:
            key = str(run.path)
            if key not in self._rows_pending:
                self._rows_pending[key] = self._rows_thread.submit(self.rows_source.row, run)
        self._rows_thread.submit(self.rows_source.keep, [str(r.path) for r in runs])
        if self._rows_pending and not self.rows_timer.isActive():
            self.rows_timer.start()

    def follow_rows(self, paths: Sequence[Location]) -> None:
        """Read the rows of runs followed between re-lists (picked, written elsewhere): their
        run.json and what their folders appended, on the rows thread."""
        for path in paths:
            key = str(path)
            if key not in self._rows_pending and key in self.tree.rows:
                read = partial(_read_row, self.rows_source, path)
                self._rows_pending[key] = self._rows_thread.submit(read)
        if self._rows_pending and not self.rows_timer.isActive():
            self.rows_timer.start()

    def rows_pending(self) -> bool:
        """True while a listed run's row is being read."""
        return bool(self._rows_pending)

    def take_rows(self) -> int:
        """Show the rows the rows thread has read; returns how many."""
        done = [k for k, f in self._rows_pending.items() if f.done()]
        items = {
            self.tree.topLevelItem(i).data(0, PATH_ROLE): self.tree.topLevelItem(i)
            for i in range(self.tree.topLevelItemCount())
        }
        taken = 0
        for key in done:
            future = self._rows_pending.pop(key)
            item = items.get(key)
            if item is None or future.exception() is not None:
                continue
            row = future.result()
            self.tree.set_row(item, row)
            taken += 1
        if taken:
            self.tree.update_columns()
            self.tree.mark_differences([str(p) for p in self.selected_paths()])
            self.rows_changed.emit()
        if not self._rows_pending:
            self.rows_timer.stop()
        return taken

    # -- filter, notes, scatter ---------------------------------------------------------
    def set_filter(self, text: str) -> str:
        """Show only the runs matching ``text`` (see :func:`tfstudio.core.run_table.
        parse_filter`); a bad filter is said under the box (every run shows meanwhile).
        Returns the message ("" when the filter is good)."""
        if self.filter_edit.text() != text:
            self.filter_edit.blockSignals(True)
            self.filter_edit.setText(text)
            self.filter_edit.blockSignals(False)
        message = self.tree.set_filter(text)
        self.filter_message.setText(message)
        self.filter_message.setVisible(bool(message))
        self.rows_changed.emit()
        return message

    def save_notes(self, path: Location, tags: str, note: str) -> None:
        """Write a run's tags and note to its folder's notes.json and show them."""
        notes = write_notes(path, tags, note)
        self.tree.set_notes(str(path), notes)
        self.tree.update_columns()
        self.rows_changed.emit()

    def edit_notes(self, path: Location) -> QDialog:
        """Open the tags-and-note editor of a run (saved when the user saves)."""
        row = self.tree.rows.get(str(path))
        notes = row.notes if row is not None else read_notes(path)
        dialog = NotesDialog(path.name, notes, self)

        def save() -> None:
            try:
                self.save_notes(path, dialog.tags_edit.text(), dialog.note_edit.toPlainText())
            except (OSError, ValueError) as exc:
                QMessageBox.warning(self, "Tags and note", f"cannot save {path.name}: {exc}")

        dialog.accepted.connect(save)
        dialog.open()
        return dialog

    def _row_menu(self, pos: QPoint) -> QMenu | None:
        item = self.tree.itemAt(pos)
        if item is None:
            return None
        path = location(item.data(0, PATH_ROLE))
        menu = QMenu(self)
        menu.addAction("Tags and note…", lambda: self.edit_notes(path))
        menu.addAction("Scatter…", self.open_scatter)
        menu.popup(self.tree.viewport().mapToGlobal(pos))
        return menu

    def _on_double_clicked(self, item: QTreeWidgetItem, column: int) -> None:
        if self.tree.columns[column].kind == "notes":
            self.edit_notes(location(item.data(0, PATH_ROLE)))

    def open_scatter(self) -> QWidget:
        """A window plotting a metric against a hyperparameter across the listed runs."""
        from tfstudio.ui.panels.runs_scatter import RunsScatter

        window = RunsScatter(self.tree, self)
        self.rows_changed.connect(window.redraw)
        self.scatters = [w for w in self.scatters if w.isVisible()] + [window]
        window.show()
        return window


def _read_row(source: RowSource, path: Location) -> RunRow:
    """A followed run's row as its folder is now (on the rows thread)."""
    return source.row(describe_run(path))
