"""Side panel of the metrics view: which plots to see, and the run's fits."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

FIT_COLUMNS = ("", "fit", "model", "steps", "final loss")
SIDEBAR_WIDTH = 250


class MetricsSidebar(QWidget):
    """A check list of metric families and a table of fits (segments).

    Clicking a fit asks to jump to it; with "only the selected fits" checked,
    the selected rows are the fits shown.
    """

    family_toggled = Signal(str, bool)  # family, shown
    fit_clicked = Signal(int)  # fit index
    isolate_changed = Signal(object)  # frozenset of fit indices, or None for all

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumWidth(180)
        self.resize(SIDEBAR_WIDTH, self.height())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.setSpacing(3)
        self.families = QListWidget()
        self.families.setToolTip("Check the metric families to plot; hidden plots cost nothing")
        self.families.itemChanged.connect(self._on_family_item_changed)
        layout.addWidget(_heading("Plots"))
        layout.addWidget(self.families, 2)
        self.fits = QTableWidget(0, len(FIT_COLUMNS))
        self.fits.setHorizontalHeaderLabels(FIT_COLUMNS)
        self.fits.verticalHeader().setVisible(False)
        self.fits.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.fits.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.fits.setWordWrap(False)
        header = self.fits.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(12)
        self.fits.verticalHeader().setDefaultSectionSize(20)
        self.fits.setToolTip("Click a fit to jump to it")
        self.fits.cellClicked.connect(self._on_fit_clicked)
        self.fits.itemSelectionChanged.connect(self._on_selection_changed)
        self.isolate = QCheckBox("only the selected fits")
        self.isolate.setToolTip("Draw only the fits selected above (x axis: step within fit)")
        self.isolate.toggled.connect(self._on_selection_changed)
        self._fits_heading = _heading("Fits")
        layout.addWidget(self._fits_heading)
        layout.addWidget(self.fits, 3)
        layout.addWidget(self.isolate)
        self._rows: dict[int, int] = {}  # fit index -> row
        self._family_items: dict[str, QListWidgetItem] = {}
        self._set_fits_visible(False)

    # -- families ------------------------------------------------------------
    def add_family(self, family: str, shown: bool) -> None:
        """List ``family`` with its check box."""
        item = QListWidgetItem(family)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if shown else Qt.CheckState.Unchecked)
        self._family_items[family] = item
        self.families.blockSignals(True)
        self.families.addItem(item)
        self.families.blockSignals(False)

    def set_family_shown(self, family: str, shown: bool) -> None:
        """Tick or untick ``family`` (emits ``family_toggled`` when it changes)."""
        item = self._family_items.get(family)
        if item is not None:
            item.setCheckState(Qt.CheckState.Checked if shown else Qt.CheckState.Unchecked)

    def family_names(self) -> list[str]:
        """Families listed, in order."""
        return list(self._family_items)

    def _on_family_item_changed(self, item: QListWidgetItem) -> None:
        self.family_toggled.emit(item.text(), item.checkState() == Qt.CheckState.Checked)

    # -- fits ----------------------------------------------------------------
    def set_fit(
        self, index: int, colour: str, model: str, steps: int, final_loss: str, tip: str
    ) -> None:
        """Add or update the row of fit ``index``."""
        row = self._rows.get(index)
        if row is None:
            row = self.fits.rowCount()
            self._rows[index] = row
            self.fits.insertRow(row)
            swatch = QTableWidgetItem("■")
            swatch.setForeground(QBrush(QColor(colour)))
            self.fits.setItem(row, 0, swatch)
            self.fits.setItem(row, 1, QTableWidgetItem(str(index + 1)))
            name = QTableWidgetItem(model)
            name.setToolTip(tip)
            self.fits.setItem(row, 2, name)
            for col in (3, 4):
                cell = QTableWidgetItem("")
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.fits.setItem(row, col, cell)
            self._set_fits_visible(len(self._rows) > 1)
        for col, text in ((3, f"{steps:,}"), (4, final_loss)):
            cell = self.fits.item(row, col)
            if cell.text() != text:
                cell.setText(text)

    def fit_row(self, index: int) -> list[str]:
        """The texts of fit ``index``'s row (tests, screenshots)."""
        row = self._rows[index]
        return [self.fits.item(row, c).text() for c in range(1, len(FIT_COLUMNS))]

    def selected_fits(self) -> frozenset[int]:
        """Fit indices of the selected rows."""
        rows = {i.row() for i in self.fits.selectedIndexes()}
        return frozenset(i for i, r in self._rows.items() if r in rows)

    def _on_fit_clicked(self, row: int, _col: int) -> None:
        for index, r in self._rows.items():
            if r == row:
                self.fit_clicked.emit(index)

    def _on_selection_changed(self, *_: object) -> None:
        chosen = self.selected_fits() if self.isolate.isChecked() else None
        self.isolate_changed.emit(chosen if chosen else None)

    def _set_fits_visible(self, visible: bool) -> None:
        for widget in (self._fits_heading, self.fits, self.isolate):
            widget.setVisible(visible)

    def clear(self) -> None:
        """Forget every family and fit."""
        self.families.clear()
        self._family_items = {}
        self.fits.setRowCount(0)
        self._rows = {}
        self.isolate.setChecked(False)
        self._set_fits_visible(False)


def _heading(text: str) -> QLabel:
    label = QLabel(text)
    label.setStyleSheet("font-weight: bold; color: #505050; padding-top: 4px;")
    return label
