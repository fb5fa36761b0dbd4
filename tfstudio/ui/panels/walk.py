"""Forward walk: the layers in the order the model called them on the probe batch.

Each row: the layer (indented by nesting), its output shape and statistics,
so a user follows the data through the network step by step.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from tfstudio.core.inspector_store import InspectorStore

RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
COLUMNS = ("#", "layer", "class", "output shape", "mean", "std", "min", "max", "zeros", "dead")


class WalkView(QWidget):
    """A table of the forward walk at the latest sample.

    Args:
        store: the inspector's data.
    """

    layer_chosen = Signal(str)

    def __init__(self, store: InspectorStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._drawn = -1
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel("No forward walk yet.")
        self.info.setContentsMargins(8, 4, 8, 4)
        self.info.setWordWrap(True)
        layout.addWidget(self.info)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        layout.addWidget(self.table, 1)

    def set_selection(self, path: str | None) -> None:
        """Nothing to do: the walk always shows every layer."""

    def refresh(self) -> None:
        """Redraw if the store changed since the last draw."""
        if self._drawn == self.store.version:
            return
        self._drawn = self.store.version
        outputs = self.store.last_outputs
        if outputs is None:
            off = self.store.outputs_off
            self.info.setText(f"No forward walk. {off}" if off else "No forward walk yet.")
            self.table.setRowCount(0)
            return
        self.info.setText(
            f"Forward walk at step {outputs.step}: the layers in the order the model "
            f"computed them on {outputs.samples} probe samples (inference mode)."
        )
        self.table.blockSignals(True)
        self.table.setRowCount(len(outputs.layers))
        for r, lo in enumerate(outputs.layers):
            cells = (
                str(lo.index + 1),
                "    " * lo.depth + lo.name,
                lo.class_name,
                str(tuple(lo.shape)),
                f"{lo.mean:.4g}",
                f"{lo.std:.4g}",
                f"{lo.min:.4g}",
                f"{lo.max:.4g}",
                f"{lo.zero_fraction:.1%}",
                f"{lo.dead_fraction:.1%}",
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 1:
                    item.setData(Qt.ItemDataRole.UserRole, lo.path)
                    item.setToolTip(lo.path)
                if c >= 4:
                    item.setTextAlignment(RIGHT)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self.table.blockSignals(False)

    def _on_selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            item = self.table.item(rows[0].row(), 1)
            if item is not None:
                self.layer_chosen.emit(item.data(Qt.ItemDataRole.UserRole))
