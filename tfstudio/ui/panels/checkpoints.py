"""Checkpoints panel: the run's checkpoints with step, time and loss; restore and delete.

Restore is offered while the run is paused (the worker loads the checkpoint
between two steps and Resume continues from its step); Delete asks first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.commands import DeleteCheckpoint, RestoreCheckpoint
from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointList,
    CheckpointRefused,
    CheckpointRestored,
    CheckpointSaved,
    FitStarted,
    RunEnded,
    RunStarted,
    RunState,
    StepEnded,
)
from tfstudio.core.launcher import Launcher
from tfstudio.core.progress import format_duration
from tfstudio.core.run_model import RunModel
from tfstudio.ui.panels.control import Confirm, ask

COLUMNS = ("step", "saved at", "run time", "loss", "kind", "file")
NO_CHECKPOINT = "No checkpoint yet: Save checkpoint (Ctrl+S) or --checkpoint-every N."


class CheckpointsPanel(QWidget):
    """A table of the run's checkpoints with Restore and Delete buttons.

    Args:
        launcher: where Restore/Delete commands go.
        confirm: asks before deleting (tests pass their own).
        parent: Qt parent.
        model: the run shown (the window's session gives it and feeds it; :meth:`show_model`
            changes it); None: one of the panel's own, fed by the panel. The rows are
            ``model.checkpoints``; Restore and Delete act on the live run only.
    """

    EVENTS = (
        CheckpointSaved,
        CheckpointList,
        CheckpointDeleted,
        CheckpointRestored,
        CheckpointRefused,
        FitStarted,
        RunState,
        RunStarted,
        RunEnded,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(
        self,
        launcher: Launcher,
        confirm: Confirm | None = None,
        parent: QWidget | None = None,
        model: RunModel | None = None,
    ) -> None:
        super().__init__(parent)
        self.launcher = launcher
        self.confirm = confirm if confirm is not None else ask(self)
        self._own = model is None  # a panel used alone feeds a model of its own
        self.model = model if model is not None else RunModel(live=True)
        self.running = False
        self.paused = False
        self.restored: str = ""
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        # rows as tall as a line of text (Qt's default, ~30 px, showed two in the dock)
        rows = self.table.verticalHeader()
        rows.setMinimumSectionSize(1)
        rows.setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda _item: self.restore_selected())
        self.restore_button = QPushButton("Restore", self)
        self.restore_button.setToolTip(
            "Load the selected checkpoint into the live model and optimizer (while paused); "
            "Resume continues from its step"
        )
        self.restore_button.clicked.connect(self.restore_selected)
        self.delete_button = QPushButton("Delete…", self)
        self.delete_button.clicked.connect(self.delete_selected)
        self.message = QLabel(self)
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #6b6b6b;")
        buttons = QHBoxLayout()
        buttons.addWidget(self.restore_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        layout.addWidget(self.message)
        self._dirty = True
        self._select_next: str | None = None
        self._read_at = -1  # a reopened run's checkpoints revision when listed
        self.message.setText(NO_CHECKPOINT)
        self.refresh()

    @property
    def entries(self) -> dict[str, CheckpointSaved]:
        """The shown run's checkpoints by path (its model's)."""
        return {c.path: c for c in self.model.checkpoints}

    def show_model(self, model: RunModel) -> None:
        """List ``model``'s checkpoints (the live run's, or a reopened run's)."""
        if model is self.model:
            return
        self.model = model
        if not model.live:
            name = model.name or "this run"
            self.message.setText(f"Checkpoints saved in run '{name}' (recorded: no Restore).")
        self._dirty = True
        self.refresh()

    def reset(self) -> None:
        """Forget the run shown (another script was opened): no checkpoints listed."""
        if self._own:
            self.model = RunModel(live=True)
        self.running, self.paused, self.restored = False, False, ""
        self._select_next = None
        self.message.setText(NO_CHECKPOINT)
        self._dirty = True
        self.refresh()

    # -- commands ------------------------------------------------------------
    def selected(self) -> str | None:
        """Path of the selected checkpoint, or None."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        item = self.table.item(rows[0].row(), 0)
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def select(self, path: str) -> None:
        """Select the row of ``path``."""
        for row in range(self.table.rowCount()):
            if self.table.item(row, 0).data(Qt.ItemDataRole.UserRole) == path:
                self.table.selectRow(row)
                return

    def restore_selected(self) -> None:
        """Ask the paused run to load the selected checkpoint."""
        path = self.selected()
        if path is None or not (self.running and self.paused):
            return
        self.launcher.send(RestoreCheckpoint(path))
        self.message.setText(f"Restoring {Path(path).name}…")

    def delete_selected(self) -> None:
        """Delete the selected checkpoint after asking."""
        path = self.selected()
        if path is None or not self.running:
            return
        entry = self.entries.get(path)
        step = f" (step {entry.step})" if entry else ""
        if self.confirm("Delete checkpoint?", f"Delete {path}{step} from disk?"):
            self.launcher.send(DeleteCheckpoint(path))

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps change nothing here."""

    def ingest_event(self, event: object) -> None:
        """Follow saves, deletions, restores and the run's state."""
        if self._own:
            self.model.apply((event,))
        if isinstance(event, CheckpointSaved):
            self.message.setText(f"Saved {Path(event.path).name} at step {event.step}.")
        elif isinstance(event, CheckpointList):
            self.message.setText(f"Checkpoints in {event.directory}")
        elif isinstance(event, CheckpointDeleted):
            self.message.setText(f"Deleted {Path(event.path).name}.")
        elif isinstance(event, CheckpointRestored):
            self.restored = event.path
            fits = self.model.metrics.fits  # (its model has every event before a view)
            goes_on = (
                "your loop's own for is not rewound: it runs the iterations it had left."
                if fits and fits[-1].kind == "loop"
                else "the fit's epoch count goes on where it was (Keras's epoch loop is not "
                "rewound: the status bar says where the fit ends)."
            )
            self.message.setText(
                f"Restored step {event.step} from {Path(event.path).name} "
                f"(optimizer iterations {event.optimizer_iterations}); Resume continues from it. "
                f"The run's step counts on from it; {goes_on}"
            )
        elif isinstance(event, CheckpointRefused):
            self.message.setText(f"{event.action.capitalize()} refused: {event.reason}")
        elif isinstance(event, RunState):
            self.paused = event.state == "paused"
            if self.paused and event.reason != "user" and self.entries:
                # e.g. a NaN: offer the last checkpoint saved before it
                before = [e for e in self.entries.values() if e.step <= event.global_step]
                if before:
                    self._select_next = max(before, key=lambda e: e.step).path
                    self.message.setText(
                        f"Paused ({event.reason}): Restore the last good checkpoint, "
                        "then Resume; or Stop."
                    )
        elif isinstance(event, FitStarted):
            return  # (for a panel's own model: the segment a restore's message speaks of)
        elif isinstance(event, RunStarted):
            self.running, self.paused, self.restored = True, False, ""
        elif isinstance(event, RunEnded):
            self.running, self.paused = False, False
        else:
            return
        self._dirty = True

    def refresh(self) -> None:
        """Rebuild the table if anything changed (a handful of rows; a reopened run's list
        read again)."""
        if not self.model.live and self.model.revision("checkpoints") != self._read_at:
            self._read_at = self.model.revision("checkpoints")
            self._dirty = True
        if not self._dirty:
            return
        self._dirty = False
        keep = self.selected()
        entries = sorted(self.entries.values(), key=lambda e: (e.step, e.wall_time))
        self.table.setRowCount(len(entries))
        for row, e in enumerate(entries):
            known = math.isfinite(e.wall_time)
            saved_at = time.strftime("%H:%M:%S", time.localtime(e.wall_time)) if known else "—"
            loss = f"{e.loss:.4g}" if not math.isnan(e.loss) else "—"
            kind = "automatic" if e.automatic else "saved"
            if e.path == self.restored:
                kind += " · restored"
            ran = format_duration(e.time) if math.isfinite(e.time) else "—"
            cells = (str(e.step), saved_at, ran, loss, kind, e.path)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 0:
                    item.setData(Qt.ItemDataRole.UserRole, e.path)
                if col in (0, 3):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.table.setItem(row, col, item)
        if self._select_next is not None:
            keep, self._select_next = self._select_next, None
        if keep is not None:
            self.select(keep)
        self._update_buttons()

    def _update_buttons(self) -> None:
        has = self.selected() is not None and self.model.live
        self.restore_button.setEnabled(has and self.running and self.paused)
        self.delete_button.setEnabled(has and self.running)
        if has and self.running and not self.paused:
            self.restore_button.setToolTip("Pause the run first (F6), then restore.")
        else:
            self.restore_button.setToolTip(
                "Load the selected checkpoint into the live model and optimizer (while paused); "
                "Resume continues from its step"
            )

    def paths(self) -> list[str]:
        """Checkpoint paths in the table, by step."""
        return [
            self.table.item(row, 0).data(Qt.ItemDataRole.UserRole)
            for row in range(self.table.rowCount())
        ]
