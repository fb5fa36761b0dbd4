"""Runs panel: the picker of recorded runs (and any TensorBoard log folder).

The list shows the runs in a runs directory. Picking runs loads each into a
:class:`~tfstudio.core.run_store.RunStore` on a reading thread of its own
(:class:`~tfstudio.core.run_loading.FolderLoader`), never on the UI thread; the
metrics view draws them, each in its own colour, beside the live run, with every
tool it has for the live run. This panel draws no plots. Picked runs are re-read
every ``POLL_MS`` while "Follow" is on, reading only what was appended: a run being
recorded here or written elsewhere (a shared or synced folder) grows live.
Reading never imports TensorFlow (:mod:`tfstudio.core.runs`).

The list is a table that compares runs (:mod:`tfstudio.ui.panels.runs_table`): each
metric's last epoch mean, best and step of best, tags and note, hyperparameters; a
filter; a scatter of a metric against a hyperparameter (:mod:`.runs_scatter`). What a
row shows beyond ``run.json`` (metric figures, hyperparameters, notes) is read on a
thread of its own, read on from where it ended while a run grows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import RunEnded, RunStarted, StepEnded
from tfstudio.core.exact_points import ExactPoints, attach, detach
from tfstudio.core.keras_folders import run_of
from tfstudio.core.locations import fs_for, location
from tfstudio.core.run_loading import CHUNK_BYTES, FolderFeed, FolderLoader
from tfstudio.core.run_store import RunStore
from tfstudio.core.runs import (
    Location,
    RunInfo,
    RunReader,
    delete_run,
    describe_run,
    export_scalars_csv,
    list_runs,
    rename_run,
)
from tfstudio.ui.panels.runs_compare import RunsCompare
from tfstudio.ui.panels.runs_table import PATH_ROLE, RunItem, RunsTable
from tfstudio.ui.plotting.style import RUN_COLOURS, RunStyle, picked_style

POLL_MS = 750  # followed runs: a point shows within ~1 s, 100 of them cost < 5% of a core
LOADING_POLL_MS = 50  # while a picked run is still being read: it appears piece by piece
LIST_EVERY_S = 2.0  # re-list the runs this often while a run is live
MAX_NAMED_READING = 3  # runs named in "reading …" (then how many more)
# Picked runs' colours (the live run keeps blue): the same RunStyle colours the swatch
# and every line of the run in the metrics view.
COLOURS = RUN_COLOURS


class RunsPanel(RunsCompare, QWidget):
    """The runs dock: list, open, overlay, follow, rename, delete and export runs.

    Args:
        logdir: runs directory listed at first (may be empty: nothing listed).
        settings: where the table's shown columns are kept (default: the parent
            window's ``settings``, if it has them).
    """

    logdir_changed = Signal(str)
    picked_changed = Signal()  # the picked runs (or their colours) changed
    inspect_requested = Signal(object)  # (Location) show this run in the window's views
    data_changed = Signal()  # a picked run's store took new data
    rows_changed = Signal()  # rows read, notes saved or the filter changed

    EVENTS = (
        RunStarted,
        RunEnded,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(
        self,
        logdir: str | Path | None = None,
        parent: QWidget | None = None,
        settings: QSettings | None = None,
    ) -> None:
        super().__init__(parent)
        if settings is None:
            settings = getattr(parent, "settings", None)
            settings = settings if isinstance(settings, QSettings) else None
        self.feeds: dict[Location, FolderFeed] = {}  # picked runs: their folders' readers
        self.stores: dict[Location, RunStore] = {}  # ... and what was read of them
        self._pending: set[Location] = set()  # picked, not read to its end yet
        self._progress: dict[Location, tuple[int, int]] = {}  # bytes read, bytes in all
        self.pinned: dict[Location, tuple[FolderFeed, RunStore]] = {}  # read, not picked
        self.loader = FolderLoader()
        self.feeds_chunk_bytes = CHUNK_BYTES  # read at a time, on the reading thread
        self.extra: list[Location] = []  # folders opened by hand (any TensorBoard log dir)
        self._live_run = False
        self._relist_at: float | None = None  # when to re-list the runs next
        self._relist_held = False  # rows not added/removed while the mouse was over the list
        self._follow_at = 0.0  # when to read the followed runs again (monotonic)

        self.logdir_edit = QLineEdit()
        self.logdir_edit.setPlaceholderText("runs directory")
        self.logdir_edit.editingFinished.connect(self._on_logdir_edited)
        browse = QPushButton("Runs folder…")
        browse.clicked.connect(self._on_browse_clicked)
        open_btn = QPushButton("Open log folder…")
        open_btn.setToolTip("Open any TensorBoard log folder (tf.summary, Keras TensorBoard)")
        open_btn.clicked.connect(self._on_open_folder_clicked)
        top = QHBoxLayout()
        top.addWidget(QLabel("Runs in"))
        top.addWidget(self.logdir_edit, 1)
        top.addWidget(browse)
        top.addWidget(open_btn)

        self.tree = RunsTable(settings)
        self.tree.itemSelectionChanged.connect(self._on_selection_changed)
        self.tree.setToolTip(
            "Select several runs (Ctrl/Shift-click) to overlay them; right-click a header to "
            "show or hide columns, a run to tag it"
        )
        self.tree.viewport().installEventFilter(self)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._row_menu)
        self.tree.itemDoubleClicked.connect(self._on_double_clicked)
        self._init_compare()  # rows thread, filter box (runs_compare.py)

        self.rename_btn = QPushButton("Rename…")
        self.rename_btn.clicked.connect(self._on_rename_clicked)
        self.delete_btn = QPushButton("Delete…")
        self.delete_btn.clicked.connect(self._on_delete_clicked)
        self.csv_btn = QPushButton("Scalars to CSV…")
        self.csv_btn.clicked.connect(self._on_csv_clicked)
        self.inspect_btn = QPushButton("Show run")
        self.inspect_btn.setToolTip(
            "Show the run in every view (inspector tabs, console, system, checkpoints), "
            "as a live run is shown"
        )
        self.inspect_btn.clicked.connect(self.open_inspector)
        self.scatter_btn = QPushButton("Scatter…")
        self.scatter_btn.setToolTip("A metric against a hyperparameter, one point per listed run")
        self.scatter_btn.clicked.connect(self.open_scatter)
        self.follow_box = QCheckBox("Follow")
        self.follow_box.setToolTip("Re-read the selected runs twice a second (live or remote runs)")
        self.follow_box.setChecked(True)
        self.follow_box.toggled.connect(self._on_follow_toggled)
        buttons = QHBoxLayout()
        for w in (
            self.rename_btn,
            self.delete_btn,
            self.csv_btn,
            self.inspect_btn,
            self.scatter_btn,
            self.follow_box,
        ):
            buttons.addWidget(w)
        self.hint = QLabel("Picked runs are drawn in the Metrics view, beside the live run.")
        self.hint.setStyleSheet("color: #808080;")
        # Beside the buttons (the list keeps the rows). Neither label asks for the width of
        # its text: a long one must not widen the dock, and with it the window.
        self.progress_label = QLabel()
        self.progress_label.setStyleSheet("color: #606060;")
        self.progress_label.hide()  # shown while runs are read, in the hint's place
        for label in (self.hint, self.progress_label):
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            label.setMinimumWidth(0)
            buttons.addWidget(label, 1)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(top)
        lv.addWidget(self.filter_edit)
        lv.addWidget(self.filter_message)
        lv.addWidget(self.tree, 1)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c92a2a;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.error_label.hide()
        lv.addWidget(self.error_label)
        lv.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(left)

        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll)
        self.logdir: Location | None = None
        if logdir:
            self.set_logdir(logdir)
        self._update_buttons()

    # -- runs directory and list --------------------------------------------
    def set_logdir(self, logdir: str | Location, by_user: bool = False) -> None:
        """List the runs in ``logdir`` (it need not exist yet; a URL such as ``gs://...``
        is read through TensorBoard's file layer).

        ``by_user``: the user chose it, so runs record there from now on
        (:attr:`logdir_changed` is emitted).
        """
        self.logdir = location(logdir)
        self.logdir_edit.setText(str(self.logdir))
        self.refresh_list()
        if by_user:
            self.logdir_changed.emit(str(self.logdir))

    def runs(self) -> list[RunInfo]:
        """The listed runs: those in the runs directory, then folders opened by hand.

        A folder that cannot be read (an unsupported URL scheme, a network error) is
        left out and said in :attr:`error_label`; the panel goes on.
        """
        errors: list[str] = []
        runs: list[RunInfo] = []
        if self.logdir is not None:
            try:
                runs = list_runs(self.logdir)
            except OSError as exc:
                errors.append(f"cannot list {self.logdir}: {exc}")
        seen = {r.path for r in runs}
        for p in self.extra:
            if p in seen:
                continue
            try:
                if fs_for(p).exists(p):  # type: ignore[arg-type]
                    runs.append(describe_run(p))
            except OSError as exc:
                errors.append(f"cannot open {p}: {exc}")
        self.show_error("\n".join(errors))
        return runs

    def show_error(self, text: str) -> None:
        """Say what could not be read (empty: clear it)."""
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))

    def refresh_list(self, hold: bool = False) -> None:
        """Re-list runs in place: rows of runs still there are updated (never made again),
        so the selection, the picked runs, the current row and the scroll stay on the
        same runs.

        ``hold`` (the re-lists of a live run, while the mouse is over the list): rows are
        neither added nor removed, as the user is aiming at one (a new run at the top
        would push the others down under the pointer); they are when it leaves.
        """
        runs = self.runs()
        selected = set(self.selected_paths())
        tree = self.tree
        rows = {
            tree.topLevelItem(i).data(0, PATH_ROLE): tree.topLevelItem(i)
            for i in range(tree.topLevelItemCount())
        }
        self._relist_held = False
        anchor = None if hold else self._scroll_anchor()
        tree.blockSignals(True)
        tree.setSortingEnabled(False)  # rows go in as listed, then sort once
        for run in runs:
            item = rows.pop(str(run.path), None)
            if item is None:
                if hold:
                    self._relist_held = True
                    continue
                item = RunItem([""] * tree.columnCount())
                item.setData(0, PATH_ROLE, str(run.path))
                tree.addTopLevelItem(item)
                if run.path in selected:
                    item.setSelected(True)
            self._fill(item, run)
        for item in rows.values():  # gone from the folder (or not listed any more)
            if hold:
                self._relist_held = True
                continue
            tree.takeTopLevelItem(tree.indexOfTopLevelItem(item))
        tree.setSortingEnabled(True)
        tree.blockSignals(False)
        if anchor is not None:
            self._keep_scroll(*anchor)
        tree.update_columns()
        self._read_rows(runs)
        self._mark_colours()
        if set(self.selected_paths()) != selected:
            self._on_selection_changed()

    def _scroll_anchor(self) -> tuple[QTreeWidgetItem, int] | None:
        """The row at the top of a list scrolled down, and where it is (None at the top:
        there the newest run shows up first)."""
        if self.tree.verticalScrollBar().value() == 0:
            return None
        item = self.tree.itemAt(QPoint(1, 1))
        return None if item is None else (item, self.tree.visualItemRect(item).top())

    def _keep_scroll(self, item: QTreeWidgetItem, top: int) -> None:
        """Scroll so that ``item`` is where it was (rows added above it push nothing)."""
        if self.tree.indexOfTopLevelItem(item) < 0:
            return
        bar = self.tree.verticalScrollBar()
        bar.setValue(bar.value() + self.tree.visualItemRect(item).top() - top)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        """The mouse left the list: the rows held back while it was over it come in."""
        if (
            watched is self.tree.viewport()
            and event.type() == QEvent.Type.Leave
            and self._relist_held
        ):
            QTimer.singleShot(0, self.refresh_list)  # once Qt has cleared "under mouse"
        return super().eventFilter(watched, event)

    def selected_paths(self) -> list[Location]:
        """Paths (or URLs) of the selected runs, in list order."""
        items = [
            self.tree.topLevelItem(i)
            for i in range(self.tree.topLevelItemCount())
            if self.tree.topLevelItem(i).isSelected()
        ]
        return [location(i.data(0, PATH_ROLE)) for i in items]

    def select(self, names: Sequence[str]) -> None:
        """Select runs by folder name (replacing the selection)."""
        self.tree.blockSignals(True)
        self.tree.clearSelection()
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item.text(0) in names:
                item.setSelected(True)
        self.tree.blockSignals(False)
        self._on_selection_changed()

    def pick_folders(self, paths: Sequence[str | Location]) -> None:
        """Open these run (or TensorBoard log) folders and pick them all."""
        opened = [run_of(location(p, resolve=True)) for p in paths]  # train/ -> its run
        for p in opened:
            if p not in self.extra:
                self.extra.append(p)
        self.refresh_list()
        self.select([p.name for p in opened])

    def open_folder(self, path: str | Location) -> None:
        """Open (and select) any run or TensorBoard log folder, e.g. one written elsewhere
        (a local path, or a URL TensorBoard's file layer reads)."""
        p = run_of(location(path, resolve=True))  # a Keras run's train/ -> the run
        if p not in self.extra:
            self.extra.append(p)
        self.refresh_list()
        self.select([p.name])

    # -- picked runs ------------------------------------------------------------
    def picked(self) -> list[tuple[RunStore, str]]:
        """The picked runs' stores with their colours, in list order."""
        return [(store, style.colour) for store, style in self.picked_styles()]

    def picked_styles(self) -> list[tuple[RunStore, RunStyle]]:
        """The picked runs' stores with their styles (the swatch's colour), in list order."""
        return [
            (self.stores[p], self.style_of(p)) for p in self.selected_paths() if p in self.stores
        ]

    def loading(self) -> bool:
        """True while a picked run has not been read once."""
        return bool(self._pending)

    def _reader(self, path: Location) -> RunReader:
        """A reader of ``path`` of its own, read now (the loader's belongs to its thread)."""
        reader = RunReader(path)
        try:
            reader.update()
        except OSError as exc:  # unreachable or unsupported URL: say it, show nothing
            self.show_error(f"cannot read {path}: {exc}")
        return reader

    def style_of(self, path: Location) -> RunStyle:
        """How a run is drawn: its name, and its colour by its place among the selected
        runs (first green, then red...): its swatch here and its lines in the plots."""
        paths = self.selected_paths()
        i = paths.index(path) if path in paths else len(paths)
        store = self.stores.get(path)
        return picked_style(i, store.name if store is not None else path.name)

    def colour_of(self, path: Location) -> str:
        """A run's colour (its :meth:`style_of`)."""
        return self.style_of(path).colour

    def _mark_colours(self) -> None:
        """A colour swatch beside each selected run's name, matching its curves."""
        selected = self.selected_paths()
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            path = location(item.data(0, PATH_ROLE))
            if path in selected:
                swatch = QPixmap(10, 10)
                swatch.fill(QColor(self.style_of(path).colour))
                item.setIcon(0, QIcon(swatch))
            else:
                item.setIcon(0, QIcon())
        self.tree.resizeColumnToContents(0)

    def _pick(self) -> None:
        """Start reading newly picked runs; forget (and cancel) the ones unpicked."""
        paths = self.selected_paths()
        for gone in [p for p in self.feeds if p not in paths]:
            self._forget(gone)
        for p in paths:
            if p not in self.feeds:
                self.feeds[p] = FolderFeed(p, self.feeds_chunk_bytes)
                self.stores[p] = RunStore(p.name, path=str(p))
                # zooming in reads the exact points of the view again, from the folder
                attach(self.stores[p], ExactPoints(self.feeds[p].read_steps))
                self._pending.add(p)
                self.loader.submit(self.feeds[p])
        self._show_progress()
        if self._pending:
            self.timer.start(LOADING_POLL_MS)
        self.picked_changed.emit()

    def pin(self, path: Location) -> RunStore:
        """A store of ``path`` read once in the background, without picking it in the list
        (the previous run of the script that runs now)."""
        if path in self.pinned:
            return self.pinned[path][1]
        feed = FolderFeed(path)
        store = RunStore(path.name, path=str(path))
        attach(store, ExactPoints(feed.read_steps))
        self.pinned[path] = (feed, store)
        self.loader.submit(feed)
        if not self.timer.isActive():
            self.timer.start()
        return store

    def unpin(self, path: Location) -> None:
        """Forget a pinned run no longer drawn: its reading stops and its store is freed."""
        pinned = self.pinned.pop(path, None)
        if pinned is not None:
            pinned[0].cancel()
            if path not in self.feeds:
                self._progress.pop(path, None)

    def previous_run(self, script: str, before: float) -> Location | None:
        """The newest run of ``script`` in the runs directory started before ``before``."""
        if self.logdir is None or not script:
            return None
        try:
            runs = list_runs(self.logdir)
        except OSError:
            return None
        earlier = [
            r for r in runs if r.script == script and r.started is not None and r.started < before
        ]
        return earlier[-1].path if earlier else None

    def _show_progress(self) -> None:
        parts = []
        for p in sorted(self._pending, key=lambda p: p.name):
            done, total = self._progress.get(p, (0, 0))
            parts.append(f"{p.name} {100 * done // total}%" if total else p.name)
        text = ", ".join(parts[:MAX_NAMED_READING])
        if len(parts) > MAX_NAMED_READING:
            text += f" and {len(parts) - MAX_NAMED_READING} more"
        self.progress_label.setText(f"reading {text}…" if parts else "")
        self.progress_label.setToolTip("\n".join(parts))
        self.progress_label.setVisible(bool(parts))
        self.hint.setVisible(not parts)

    def poll(self) -> int:
        """Apply what the reading thread read; ask for more of the followed runs.

        Returns the number of new points applied. Runs on the UI thread but never reads.
        """
        new = 0
        for feed, result in self.loader.take():
            path = feed.path
            store = self.stores.get(path)
            if path in self.pinned and self.pinned[path][0] is feed:
                store = self.pinned[path][1]
            elif store is None or self.feeds.get(path) is not feed:
                continue  # unpicked meanwhile
            if isinstance(result, Exception):
                self._pending.discard(path)
                self.show_error(f"cannot read {path}: {result}")
                continue
            result.apply(store)
            new += result.points
            self._progress[path] = result.progress
            if not result.more:
                self._pending.discard(path)
            if result.notes:  # a damaged file: its good part is shown, and this says so
                # (every picked run's notes: a second damaged run does not hide the first's)
                self.show_error(
                    "\n".join(
                        f"{p.name}: {n}" for p, picked in self.stores.items() for n in picked.notes
                    )
                )
        now = time.monotonic()
        if self.follow_box.isChecked():
            # Followed runs are read every POLL_MS; what they read is taken as soon as it is
            # read (the timer ticks fast while reads are out): lag stays under a second.
            if now >= self._follow_at and self.loader.idle():
                self._follow_at = now + POLL_MS / 1000
                for path, feed in self.feeds.items():
                    if path not in self._pending:  # a run still loading is read on anyway
                        self.loader.submit(feed)
            if now >= self._rows_follow_at:  # their rows too (metric figures, status)
                self._rows_follow_at = now + LIST_EVERY_S
                self.follow_rows([p for p in self.feeds if p not in self._pending])
        elif not self._pending:
            self.timer.stop()
        self._show_progress()
        fast = self._pending or not self.loader.idle()
        wait = max(LOADING_POLL_MS, int(1000 * (self._follow_at - now)))
        self.timer.setInterval(LOADING_POLL_MS if fast else min(POLL_MS, wait))
        if new:
            self.data_changed.emit()
        return new

    # -- live run hooks (bridge panel protocol) ---------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Live steps are read back from the run folder by :meth:`poll`; nothing to do here."""

    def ingest_event(self, event: object) -> None:
        """A run started or ended here: its folder appears, its status changes."""
        if isinstance(event, RunStarted):
            self._live_run = True
            self._relist_at = time.monotonic() + LIST_EVERY_S
        elif isinstance(event, RunEnded):
            self._live_run = False
            self._relist_at = 0.0

    def refresh(self) -> None:
        """Once per frame: re-list every few seconds while a run lasts, and when it ends."""
        now = time.monotonic()
        if self._relist_at is not None and now >= self._relist_at:
            self._relist_at = now + LIST_EVERY_S if self._live_run else None
            self.refresh_list(hold=self.tree.viewport().underMouse())

    # -- actions ---------------------------------------------------------------------
    def rename_selected(self, new_name: str) -> Location:
        """Rename the (one) selected run."""
        [path] = self.selected_paths()
        new = rename_run(path, new_name)
        self._forget(path)
        if path in self.extra:
            self.extra[self.extra.index(path)] = new
        self.refresh_list()
        self.select([new.name])
        return new

    def delete_selected(self, confirm: bool = True) -> list[Location]:
        """Delete the selected runs (asking first unless ``confirm`` is False)."""
        paths = self.selected_paths()
        if not paths:
            return []
        if confirm:
            names = "\n".join(p.name for p in paths)
            answer = QMessageBox.question(
                self,
                "Delete runs",
                f"Delete {len(paths)} run folder(s) and everything in them?\n\n{names}",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                return []
        for p in paths:
            delete_run(p)
            self._forget(p)
            if p in self.extra:
                self.extra.remove(p)
        self.refresh_list()
        self._on_selection_changed()
        return paths

    def _forget(self, path: Location) -> None:
        feed = self.feeds.pop(path, None)
        if feed is not None:
            feed.cancel()
        store = self.stores.pop(path, None)
        if store is not None:
            detach(store)
        self._pending.discard(path)

    def _on_rename_clicked(self) -> None:
        paths = self.selected_paths()
        if len(paths) != 1:
            return
        name, ok = QInputDialog.getText(self, "Rename run", "New name:", text=paths[0].name)
        if ok and name and name != paths[0].name:
            try:
                self.rename_selected(name)
            except (OSError, ValueError) as exc:
                QMessageBox.warning(self, "Rename run", str(exc))

    def _on_delete_clicked(self) -> None:
        try:
            self.delete_selected()
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Delete runs", str(exc))

    def open_inspector(self) -> None:
        """Show the selected run in the window's inspector tabs (and every other view), as
        a live run is shown (the window answers ``inspect_requested``)."""
        paths = self.selected_paths()
        if len(paths) == 1:
            self.inspect_requested.emit(paths[0])

    def _on_csv_clicked(self) -> None:
        paths = self.selected_paths()
        if len(paths) != 1:
            return
        out, _ = QFileDialog.getSaveFileName(
            self, "Export scalars", f"{paths[0].name}.csv", "CSV (*.csv)"
        )
        if out:
            export_scalars_csv(paths[0], out)

    def _on_browse_clicked(self) -> None:
        start = str(self.logdir) if self.logdir else ""
        chosen = QFileDialog.getExistingDirectory(self, "Runs directory", start)
        if chosen:
            self.set_logdir(chosen, by_user=True)

    def _on_open_folder_clicked(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Open a TensorBoard log folder")
        if chosen:
            self.open_folder(chosen)

    def _on_logdir_edited(self) -> None:
        text = self.logdir_edit.text().strip()
        if text and (self.logdir is None or location(text) != self.logdir):
            self.set_logdir(text, by_user=True)

    def _on_selection_changed(self) -> None:
        self._pick()
        self._mark_colours()
        self.tree.mark_differences([str(p) for p in self.selected_paths()])
        self._update_buttons()
        self._on_follow_toggled(self.follow_box.isChecked())

    def _on_follow_toggled(self, on: bool) -> None:
        if (on and self.selected_paths()) or self._pending:
            if not self.timer.isActive():
                self.timer.start()
        else:
            self.timer.stop()

    def _update_buttons(self) -> None:
        n = len(self.selected_paths())
        self.rename_btn.setEnabled(n == 1)
        self.csv_btn.setEnabled(n == 1)
        self.inspect_btn.setEnabled(n == 1)
        self.delete_btn.setEnabled(n >= 1)

    def closeEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """Stop following (and reading) when the panel goes away."""
        self.timer.stop()
        self.rows_timer.stop()
        self.rows_source.cancel()
        self._rows_thread.shutdown(wait=False, cancel_futures=True)
        self.loader.close()
        for store in [*self.stores.values(), *(store for _, store in self.pinned.values())]:
            detach(store)
        super().closeEvent(event)
