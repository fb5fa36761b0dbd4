"""The Help menu's parts: the keyboard shortcuts (read from the window's actions), the
local docs, and About. Nothing here reaches the network."""

from __future__ import annotations

import platform
import re
from collections.abc import Iterable
from pathlib import Path

import pyqtgraph as pg
from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfstudio import __version__

# Mouse gestures of the plots: they are no actions, so they are said here.
MOUSE_HINTS = (
    ("Plots: wheel / drag", "zoom / pan the step axis (linked plots follow)"),
    ("Plots: double-click", "follow the data again"),
    ("Plots: hover", "the values of every run shown at that step"),
)


def shortcut_rows(actions: Iterable[QAction]) -> list[tuple[str, str]]:
    """(action, its shortcuts) of each action that has a shortcut, in the order given,
    each action once; the names as the menus show them (no ``&``, no ``…``)."""
    rows: list[tuple[str, str]] = []
    seen: set[int] = set()
    for action in actions:
        keys = [k for k in action.shortcuts() if not k.isEmpty()]
        if not keys or id(action) in seen:
            continue
        seen.add(id(action))
        name = re.sub(r"&(?!&)", "", action.text()).replace("&&", "&").rstrip("…").strip()
        text = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in keys)
        rows.append((name, text))
    return rows


class ShortcutsDialog(QDialog):
    """A table of the window's keyboard shortcuts, taken from its actions.

    Args:
        actions: the actions to list (those without a shortcut are left out).
    """

    def __init__(self, actions: Iterable[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.rows = shortcut_rows(actions)
        rows = [*self.rows, *MOUSE_HINTS]
        self.table = QTableWidget(len(rows), 2, self)
        self.table.setHorizontalHeaderLabels(["Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        for i, (name, keys) in enumerate(rows):
            self.table.setItem(i, 0, QTableWidgetItem(name))
            self.table.setItem(i, 1, QTableWidgetItem(keys))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(460, 120 + 24 * len(rows))

    def listed(self) -> list[tuple[str, str]]:
        """The table's rows as shown: (action, keys)."""
        return [
            (self.table.item(i, 0).text(), self.table.item(i, 1).text())
            for i in range(self.table.rowCount())
        ]


def docs_path() -> Path | None:
    """The local documentation: the checkout's README.md (its docs/ folder beside it), or
    the docs folder alone; None when this copy has neither (a wheel ships without them)."""
    root = Path(__file__).resolve().parents[2]
    for candidate in (root / "README.md", root / "docs"):
        if candidate.exists():
            return candidate
    return None


def open_docs(parent: QWidget | None = None) -> Path | None:
    """Open the local README (or docs folder) with the desktop's viewer; say where the
    docs are when this copy has none. Returns what was opened."""
    path = docs_path()
    if path is None:
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.information(
            parent,
            "Documentation",
            "This copy of tfstudio was installed without its docs. They are README.md and "
            "the docs/ folder of tfstudio's source (the sdist or the repository).",
        )
        return None
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
    return path


def about_text() -> str:
    """What About says: the version, and the versions of what draws the window."""
    return (
        f"<b>tfstudio {__version__}</b><br>"
        "Runs your TensorFlow/Keras training script unmodified and shows how it learns.<br><br>"
        f"Python {platform.python_version()} · PySide6 {pyside_version} · "
        f"pyqtgraph {pg.__version__}<br>"
        "TensorFlow is loaded by each run's worker process, never by this window."
    )


def about_dialog(parent: QWidget | None = None) -> QDialog:
    """The About box (not shown: call ``exec`` or ``show``)."""
    dialog = QDialog(parent)
    dialog.setWindowTitle("About tfstudio")
    label = QLabel(about_text())
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
    buttons.accepted.connect(dialog.accept)
    layout = QVBoxLayout(dialog)
    layout.addWidget(label)
    layout.addWidget(buttons)
    dialog.label = label  # type: ignore[attr-defined]
    return dialog
