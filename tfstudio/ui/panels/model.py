"""Model panel: the tree of the model being trained, its summary, and the inspector's cadence.

Selecting a layer or a variable shows it in the weights and layer-output views.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import ModelNode, ModelTree
from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.options import RunOptions

COLUMNS = ("layer / variable", "class", "output shape", "dtype", "trainable", "non-trainable")
PATH_ROLE = Qt.ItemDataRole.UserRole


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class ModelPanel(QWidget):
    """The model tree (each fit's model), a summary button and the sampling settings.

    Args:
        store: the inspector's data.
    """

    selected = Signal(object)  # path of the chosen layer or variable (None: nothing)

    def __init__(self, store: InspectorStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._drawn = -1
        self._trees: tuple[int, ...] = ()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setAlternatingRowColors(True)
        self.tree.currentItemChanged.connect(self._on_current_item_changed)
        layout.addWidget(self.tree, 1)
        buttons = QHBoxLayout()
        self.summary_button = QPushButton("Summary…")
        self.summary_button.setToolTip("The text model.summary() prints")
        self.summary_button.setEnabled(False)
        self.summary_button.clicked.connect(self.show_summary)
        buttons.addWidget(self.summary_button)
        self.all_button = QPushButton("Show all")
        self.all_button.setToolTip("Show every variable and layer in the views (clear selection)")
        self.all_button.clicked.connect(self._on_all_clicked)
        buttons.addWidget(self.all_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        cadence = QHBoxLayout()
        cadence.addWidget(QLabel("Sample:"))
        self.mode = QComboBox()
        self.mode.addItems(["within a time budget", "every N steps"])
        self.mode.currentIndexChanged.connect(self._on_mode_changed)
        cadence.addWidget(self.mode)
        self.budget = QDoubleSpinBox()
        self.budget.setRange(0.1, 50.0)
        self.budget.setSuffix(" %")
        self.budget.setValue(3.0)
        self.budget.setToolTip("Share of training time the inspector may take (next run)")
        cadence.addWidget(self.budget)
        self.every = QSpinBox()
        self.every.setRange(1, 1_000_000)
        self.every.setValue(10)
        self.every.setPrefix("every ")
        self.every.setSuffix(" steps")
        cadence.addWidget(self.every)
        cadence.addStretch(1)
        layout.addLayout(cadence)
        self.status = QLabel(store.status_text())
        self.status.setWordWrap(True)
        self.status.setMinimumHeight(3 * self.status.fontMetrics().lineSpacing() + 4)
        layout.addWidget(self.status)
        self._on_mode_changed(0)

    # -- settings --------------------------------------------------------------
    def run_options(self) -> RunOptions:
        """The inspector settings for the next run."""
        if self.mode.currentIndex() == 1:
            return RunOptions(sample_every=self.every.value())
        return RunOptions(inspector_budget=self.budget.value() / 100.0)

    def set_sample_every(self, steps: int) -> None:
        """Use a fixed cadence (``--sample-every``); 0 goes back to the budget."""
        if steps > 0:
            self.every.setValue(steps)
        self.mode.setCurrentIndex(1 if steps > 0 else 0)

    def _on_mode_changed(self, index: int) -> None:
        self.budget.setVisible(index == 0)
        self.every.setVisible(index == 1)

    # -- tree --------------------------------------------------------------------
    def refresh(self) -> None:
        """Rebuild the tree when a model was announced; update the status line."""
        if self._drawn == self.store.version:
            return
        self._drawn = self.store.version
        self.status.setText(self.store.status_text())
        key = tuple(id(t) for t in self.store.trees.values())
        if key == self._trees:
            return
        self._trees = key
        self.tree.clear()
        for tree in self.store.trees.values():
            top = self._add_node(None, tree.root, tree)
            top.setExpanded(True)
        self.tree.expandToDepth(1)
        for c in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(c)
        self.summary_button.setEnabled(bool(self.store.trees))

    def _add_node(
        self, parent: QTreeWidgetItem | None, node: ModelNode, tree: ModelTree
    ) -> QTreeWidgetItem:
        name = node.name if parent is not None else self.store.tree_title(tree)
        item = QTreeWidgetItem(
            [
                name,
                node.class_name,
                node.output_shape,
                node.dtype,
                f"{node.trainable_params:,}",
                f"{node.non_trainable_params:,}",
            ]
        )
        item.setData(0, PATH_ROLE, node.path)
        item.setToolTip(0, node.path)
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)
        for v in node.variables:
            size = 1
            for d in v.shape:
                size *= d
            child = QTreeWidgetItem(
                [
                    v.name,
                    "variable",
                    _shape(v.shape),
                    v.dtype,
                    f"{size:,}" if v.trainable else "",
                    "" if v.trainable else f"{size:,}",
                ]
            )
            child.setData(0, PATH_ROLE, v.path)
            child.setToolTip(0, v.path)
            font = child.font(0)
            font.setItalic(True)
            child.setFont(0, font)
            item.addChild(child)
        for sub in node.children:
            self._add_node(item, sub, tree)
        return item

    def _on_current_item_changed(self, item: QTreeWidgetItem | None, _prev: object) -> None:
        self.selected.emit(item.data(0, PATH_ROLE) if item is not None else None)

    def _on_all_clicked(self) -> None:
        self.tree.setCurrentItem(None)
        self.tree.clearSelection()
        self.selected.emit(None)

    def select_path(self, path: str) -> None:
        """Make the item at ``path`` current (from another view), without echoing back."""
        for item in self._items():
            if item.data(0, PATH_ROLE) == path:
                self.tree.blockSignals(True)
                self.tree.setCurrentItem(item)
                self.tree.blockSignals(False)
                return

    def _items(self) -> list[QTreeWidgetItem]:
        out: list[QTreeWidgetItem] = []
        stack = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        while stack:
            item = stack.pop()
            out.append(item)
            stack.extend(item.child(i) for i in range(item.childCount()))
        return out

    # -- summary -------------------------------------------------------------------
    def summary_text(self) -> str:
        """``model.summary()`` of every announced model."""
        return "\n\n".join(t.summary for t in self.store.trees.values())

    def show_summary(self) -> QDialog:
        """Open a window with the text of ``model.summary()``."""
        dialog = QDialog(self)
        dialog.setWindowTitle("model.summary()")
        text = QPlainTextEdit(self.summary_text())
        text.setReadOnly(True)
        text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        box = QVBoxLayout(dialog)
        box.addWidget(text)
        dialog.resize(820, 520)
        dialog.show()
        self.summary_dialog = dialog
        return dialog
