"""The Runs panel's table: one row per run, columns that compare runs.

Columns are :mod:`tfstudio.core.run_table`'s (the same ``tfstudio runs`` prints): the
run's, each metric's last epoch mean, best and step of best, tags and note, one per
hyperparameter. Rows sort by any column (numbers as numbers); a filter hides the rows
that do not match; the header's context menu shows and hides columns (remembered in
QSettings); the hyperparameters that differ between the picked runs are marked.
Rows are keyed by the run folder's path and updated in place, never made again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtCore import QPoint, QSettings, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from tfstudio.core.run_notes import RunNotes
from tfstudio.core.run_table import (
    Column,
    FilterError,
    RunFilter,
    RunRow,
    default_visible,
    differing,
    parse_filter,
    table_columns,
)

PATH_ROLE = Qt.ItemDataRole.UserRole
SORT_ROLE = Qt.ItemDataRole.UserRole + 1  # a column's value to sort by (numbers as numbers)
DATE_TITLE = "Date"
SHOWN_KEY = "runs/columns_shown"  # titles the user turned on (QSettings)
HIDDEN_KEY = "runs/columns_hidden"  # ... and off; the rest follow default_visible
MAX_COLUMN_PX = 260  # a long note or argument list does not widen the table past this
DIFFERS = QColor("#c2410c")  # a hyperparameter that differs between the picked runs
DIFFERS_BACK = QColor(255, 237, 213)
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class RunItem(QTreeWidgetItem):
    """A row of the runs table, sorted by its values: steps and losses as numbers (not
    "960" after "1600"), dates by time; a row with no value there sorts after the rest."""

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        tree = self.treeWidget()
        column = tree.sortColumn() if tree is not None else 0
        mine, theirs = self.data(column, SORT_ROLE), other.data(column, SORT_ROLE)
        if mine is None or theirs is None:
            if (mine is None) != (theirs is None):
                ascending = tree is None or tree.header().sortIndicatorOrder() == (
                    Qt.SortOrder.AscendingOrder
                )
                return (mine is not None) == ascending  # unknown last, whichever the order
            return self.text(column).lower() < other.text(column).lower()
        if isinstance(mine, str) != isinstance(theirs, str):
            return isinstance(mine, str) is False  # numbers before words
        return bool(mine < theirs)


def _sort_value(column: Column, row: RunRow) -> object:
    if column.kind == "run" and column.source == "date":
        return row.run.started if row.run.started else None
    value = column.value(row)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        return value.lower()


class RunsTable(QTreeWidget):
    """The table of runs. ``settings``: where the shown/hidden columns are kept (none:
    they are kept while the table lives)."""

    columns_changed = Signal()

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.rows: dict[str, RunRow] = {}  # path -> the row's run, hparams, metrics, notes
        self.columns: list[Column] = []
        self.filter: RunFilter | None = None
        self.differing: set[str] = set()  # titles of hparam columns marked
        self._filled: dict[str, tuple[int, RunRow]] = {}  # path -> (columns version, row shown)
        self._version = 0  # of the columns
        self._shown: set[str] = set(self._setting(SHOWN_KEY))
        self._hidden: set[str] = set(self._setting(HIDDEN_KEY))
        self.setRootIsDecorated(False)
        self.setSortingEnabled(True)  # click a header to sort by it
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setUniformRowHeights(True)
        header = self.header()
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.setSectionsMovable(False)
        self._set_columns(table_columns([]))
        self.sortByColumn(self.index_of(DATE_TITLE), Qt.SortOrder.DescendingOrder)  # newest first

    # -- settings ------------------------------------------------------------------
    def _setting(self, key: str) -> list[str]:
        if self.settings is None:
            return []
        value = self.settings.value(key, [])
        if isinstance(value, str):
            return [value] if value else []
        return [str(v) for v in value] if isinstance(value, list) else []

    def _store_visibility(self) -> None:
        if self.settings is not None:
            self.settings.setValue(SHOWN_KEY, sorted(self._shown))
            self.settings.setValue(HIDDEN_KEY, sorted(self._hidden))

    # -- columns ---------------------------------------------------------------------
    def titles(self) -> list[str]:
        """Every column's title, in table order (shown or not)."""
        return [c.title for c in self.columns]

    def index_of(self, title: str) -> int:
        """A column's index by title (any case); -1 when there is none."""
        wanted = title.lower()
        return next((i for i, c in enumerate(self.columns) if c.title.lower() == wanted), -1)

    def is_shown(self, title: str) -> bool:
        """Whether a column shows (the user's choice, else its default)."""
        if title in self._shown:
            return True
        if title in self._hidden:
            return False
        i = self.index_of(title)
        return i >= 0 and default_visible(self.columns[i], list(self.rows.values()))

    def set_shown(self, title: str, shown: bool) -> None:
        """Show or hide a column; remembered (QSettings) for this and later tables."""
        (self._shown if shown else self._hidden).add(title)
        (self._hidden if shown else self._shown).discard(title)
        self._store_visibility()
        self._apply_visibility()

    def shown_titles(self) -> list[str]:
        """The titles of the columns that show, in table order."""
        return [c.title for i, c in enumerate(self.columns) if not self.isColumnHidden(i)]

    def _apply_visibility(self) -> None:
        for i, column in enumerate(self.columns):
            hidden = column.title != "Name" and not self.is_shown(column.title)
            if self.isColumnHidden(i) != hidden:
                self.setColumnHidden(i, hidden)
                if not hidden:
                    self._fit_width(i)

    def _set_columns(self, columns: list[Column]) -> None:
        """Replace the columns (as runs bring new metrics or hyperparameters); every row is
        filled again and the sort stays on the column it was on."""
        sort_title = self.columns[self.sortColumn()].title if self.columns else DATE_TITLE
        order = self.header().sortIndicatorOrder()
        self.columns = columns
        self._version += 1
        self.setColumnCount(len(columns))
        self.setHeaderLabels([c.title for c in columns])
        for i, c in enumerate(columns):
            tip = {"metric": "a metric", "hparam": "a hyperparameter"}.get(c.kind, "")
            self.headerItem().setToolTip(i, f"{c.title}: {tip}" if tip else "")
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            row = self.rows.get(item.data(0, PATH_ROLE))
            if row is not None:
                self.fill(item, row)
        self._apply_visibility()
        i = self.index_of(sort_title)
        self.sortByColumn(i if i >= 0 else self.index_of(DATE_TITLE), order)
        self.columns_changed.emit()

    def _header_menu(self, pos: QPoint) -> QMenu:
        """The header's context menu: a checkable entry per column (Name always shows)."""
        menu = QMenu(self)
        groups = (("run", "notes"), ("metric",), ("hparam",))
        for kinds in groups:
            if not menu.isEmpty():
                menu.addSeparator()
            for column in (c for c in self.columns if c.kind in kinds and c.title != "Name"):
                action = menu.addAction(column.title)
                action.setCheckable(True)
                action.setChecked(self.is_shown(column.title))
                action.toggled.connect(lambda on, t=column.title: self.set_shown(t, on))
        if pos is not None and not pos.isNull():
            menu.popup(self.header().mapToGlobal(pos))
        return menu

    # -- rows ------------------------------------------------------------------------
    def set_row(self, item: QTreeWidgetItem, row: RunRow) -> None:
        """Set a row's run data (the columns follow when it brings new ones)."""
        self.rows[item.data(0, PATH_ROLE)] = row
        self.fill(item, row)

    def update_columns(self) -> None:
        """Columns for the rows now held (call once after a batch of :meth:`set_row`)."""
        paths = {self.topLevelItem(i).data(0, PATH_ROLE) for i in range(self.topLevelItemCount())}
        for gone in [p for p in self.rows if p not in paths]:
            del self.rows[gone]
            self._filled.pop(gone, None)
        columns = table_columns(list(self.rows.values()))
        if columns != self.columns:
            self._set_columns(columns)
        else:
            self._apply_visibility()  # defaults (e.g. which hparams differ) may change
        self.apply_filter()
        self.fit_widths()

    def fill(self, item: QTreeWidgetItem, row: RunRow) -> None:
        """Set a row's texts, tooltips and sort values (only what changed is set)."""
        key = item.data(0, PATH_ROLE)
        if self._filled.get(key) == (self._version, row):
            return  # shown as it is (a re-list every few seconds costs nothing per row)
        self._filled[key] = (self._version, row)
        for i, column in enumerate(self.columns):
            text = column.text(row)
            if item.text(i) != text:
                item.setText(i, text)
            tip = str(row.run.path) if i == 0 else column.tooltip(row)
            if item.toolTip(i) != tip:
                item.setToolTip(i, tip)
            item.setData(i, SORT_ROLE, _sort_value(column, row))
            if column.kind in ("metric", "run") and column.numeric:
                item.setTextAlignment(
                    i, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                )

    def fit_widths(self) -> None:
        """Each shown column as wide as its contents (at most :data:`MAX_COLUMN_PX`)."""
        for i in range(len(self.columns)):
            if not self.isColumnHidden(i):
                self._fit_width(i)

    def _fit_width(self, i: int) -> None:
        self.resizeColumnToContents(i)
        if self.columnWidth(i) > MAX_COLUMN_PX:
            self.setColumnWidth(i, MAX_COLUMN_PX)

    def set_notes(self, path: str, notes: RunNotes) -> None:
        """A run's new tags and note, shown at once."""
        row = self.rows.get(path)
        if row is None:
            return
        row = self.rows[path] = replace(row, notes=notes)  # a new row: fill sees the change
        for i in range(self.topLevelItemCount()):
            if self.topLevelItem(i).data(0, PATH_ROLE) == path:
                self.fill(self.topLevelItem(i), row)
        self.apply_filter()

    # -- filter ------------------------------------------------------------------------
    def set_filter(self, text: str) -> str:
        """Show only the runs matching ``text``; returns "" or what is wrong with it (then
        every run shows)."""
        try:
            self.filter = parse_filter(text, self.columns) if text.strip() else None
        except FilterError as exc:
            self.filter = None
            self.apply_filter()
            return str(exc)
        self.apply_filter()
        return ""

    def apply_filter(self) -> None:
        """Hide the rows the filter does not keep (a row not read yet shows)."""
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            row = self.rows.get(item.data(0, PATH_ROLE))
            hide = self.filter is not None and row is not None and not self.filter.matches(row)
            if item.isHidden() != hide:
                item.setHidden(hide)

    def visible_rows(self) -> list[RunRow]:
        """The rows the filter keeps, in table order."""
        out = []
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            row = self.rows.get(item.data(0, PATH_ROLE))
            if row is not None and not item.isHidden():
                out.append(row)
        return out

    # -- differences -------------------------------------------------------------------
    def mark_differences(self, paths: Sequence[str]) -> set[str]:
        """Mark the hyperparameters that differ between the runs at ``paths`` (two or
        more): their header bold, their cells in those rows bold and coloured. Returns
        the titles marked."""
        picked = [self.rows[p] for p in paths if p in self.rows]
        marked = set()
        if len(picked) >= 2:
            marked = {
                c.title for c in self.columns if c.kind == "hparam" and differing(picked, c.source)
            }
        self.differing = marked
        bold, plain = QFont(), QFont()
        bold.setBold(True)
        chosen = set(paths)
        for i, column in enumerate(self.columns):
            on = column.title in marked
            self.headerItem().setFont(i, bold if on else plain)
            self.headerItem().setForeground(i, QBrush(DIFFERS) if on else QBrush())
        for r in range(self.topLevelItemCount()):
            item = self.topLevelItem(r)
            in_pick = item.data(0, PATH_ROLE) in chosen
            for i, column in enumerate(self.columns):
                if column.kind != "hparam":
                    continue
                on = in_pick and column.title in marked
                if item.font(i).bold() != on:
                    item.setFont(i, bold if on else plain)
                    item.setForeground(i, QBrush(DIFFERS) if on else QBrush())
                    item.setBackground(i, QBrush(DIFFERS_BACK) if on else QBrush())
        return marked


class NotesDialog(QDialog):
    """Edit a run's tags (comma-separated) and its note."""

    def __init__(self, name: str, notes: RunNotes, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Tags and note: {name}")
        self.tags_edit = QLineEdit(", ".join(notes.tags))
        self.tags_edit.setPlaceholderText("e.g. baseline, lr sweep")
        self.note_edit = QPlainTextEdit(notes.note)
        self.note_edit.setPlaceholderText("what this run tried, what came of it")
        form = QFormLayout(self)
        form.addRow("Tags", self.tags_edit)
        form.addRow("Note", self.note_edit)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.resize(420, 220)
