"""Runs panel: recorded runs (and any TensorBoard log folder), opened, overlaid and followed.

The list shows the runs in a runs directory. Selecting runs plots their scalars,
one plot per tag, one colour per run (overlay), with an EMA smoothing slider
(the raw curve stays, faint). Selected runs are re-read every ``POLL_MS`` while
"Follow" is on, reading only what was appended: a run being recorded here or
written elsewhere (a shared or synced folder) grows live. Reading never imports
TensorFlow (:mod:`tfstudio.core.runs`).
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters as pg_exporters
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import RunEnded, RunStarted, StepEnded
from tfstudio.core.locations import fs_for, location
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
from tfstudio.core.smoothing import Smoother
from tfstudio.ui.plotting.smoothing import SmoothingSlider, faint

POLL_MS = 500
LIST_EVERY_S = 2.0  # re-list the runs this often while a run is live
MAX_PLOTS = 16
COLOURS = (
    "#1f77b4",
    "#e8590c",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
COLUMNS = ("Name", "Script", "Date", "Status", "Steps", "Final loss")
PATH_ROLE = Qt.ItemDataRole.UserRole


class TagPlot:
    """One scalar tag's plot: a faint raw curve and a smoothed curve per run."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.widget = pg.PlotWidget(background="#ffffff")
        self.widget.setMinimumHeight(180)
        self.plot: pg.PlotItem = self.widget.getPlotItem()
        self.plot.setTitle(tag, color="#303030", size="10pt")
        self.plot.showGrid(x=False, y=True, alpha=0.15)
        self.plot.setLabel("bottom", "step", color="#303030")
        self.raw: dict[str, pg.PlotDataItem] = {}
        self.smooth: dict[str, pg.PlotDataItem] = {}
        self._smoothers: dict[str, Smoother] = {}
        self.histogram = False

    def set_curve(
        self, run: str, colour: str, x: Sequence[float], y: Sequence[float], weight: float
    ) -> None:
        """Draw (or redraw) ``run``'s curve, raw faint and smoothed with ``weight``."""
        raw = self.raw.get(run)
        if raw is None:
            raw = self.raw[run] = self.plot.plot(pen=pg.mkPen(faint(colour), width=1))
            smooth = self.smooth[run] = self.plot.plot(pen=pg.mkPen(colour, width=2))
        smooth = self.smooth[run]
        smooth.setPen(pg.mkPen(colour, width=2))  # colours follow the selection order
        xs = np.asarray(x, dtype=float)
        ys = np.asarray(y, dtype=float)
        marker = (
            dict(symbol="o", symbolSize=5, symbolBrush=colour, symbolPen=colour)
            if len(xs) < 40
            else dict(symbol=None)
        )
        smoother = self._smoothers.get(run)
        if smoother is None or smoother.weight != min(weight, 0.999):
            smoother = self._smoothers[run] = Smoother(weight)
        smooth.setData(xs, np.asarray(smoother.update(y), dtype=float), **marker)
        raw.setData(xs, ys)
        raw.setVisible(weight > 0)
        raw.setPen(pg.mkPen(faint(colour), width=1))

    def set_histogram(
        self, run: str, colour: str, edges: Sequence[float], counts: Sequence[float]
    ) -> None:
        """Draw ``run``'s latest histogram as a step outline."""
        self.histogram = True
        self.plot.setLabel("bottom", "value", color="#303030")
        item = self.smooth.get(run)
        if item is None:
            item = self.smooth[run] = self.plot.plot(
                stepMode="center", pen=pg.mkPen(colour, width=2)
            )
        item.setPen(pg.mkPen(colour, width=2))
        item.setData(np.asarray(edges, dtype=float), np.asarray(counts, dtype=float))

    def forget(self, run: str) -> None:
        """Remove ``run``'s curves from this plot."""
        self._smoothers.pop(run, None)
        for items in (self.smooth, self.raw):
            item = items.pop(run, None)
            if item is not None:
                self.plot.removeItem(item)

    def runs(self) -> list[str]:
        """Runs drawn in this plot, in order."""
        return list(self.smooth)

    def export(self, path: str | Path) -> None:
        """Save this plot as PNG or SVG, or its series as CSV (by the file's suffix)."""
        suffix = Path(path).suffix.lower()
        item = self.plot
        if suffix == ".svg":
            # pyqtgraph 0.14's SVGExporter fails on the path data Qt 6.11 writes; Qt's own
            # SVG generator renders the same scene.
            _export_svg(self.widget, str(path))
            return
        if suffix == ".csv":
            exporter = pg_exporters.CSVExporter(item)
        elif suffix in (".png", ".jpg", ".jpeg"):
            exporter = pg_exporters.ImageExporter(item)
        else:
            raise ValueError(f"export {path}: expected a .png, .svg or .csv file, got '{suffix}'")
        exporter.export(str(path))


class RunsPanel(QWidget):
    """The runs dock: list, open, overlay, follow, rename, delete and export runs.

    Args:
        logdir: runs directory listed at first (may be empty: nothing listed).
    """

    logdir_changed = Signal(str)

    EVENTS = (
        RunStarted,
        RunEnded,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(self, logdir: str | Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.readers: dict[Location, RunReader] = {}
        self.extra: list[Location] = []  # folders opened by hand (any TensorBoard log dir)
        self.plots: dict[str, TagPlot] = {}
        self._live_run = False
        self._relist_at: float | None = None  # when to re-list the runs next

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

        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.itemSelectionChanged.connect(self._on_selection_changed)
        self.tree.setToolTip("Select several runs (Ctrl/Shift-click) to overlay them")

        self.rename_btn = QPushButton("Rename…")
        self.rename_btn.clicked.connect(self._on_rename_clicked)
        self.delete_btn = QPushButton("Delete…")
        self.delete_btn.clicked.connect(self._on_delete_clicked)
        self.csv_btn = QPushButton("Scalars to CSV…")
        self.csv_btn.clicked.connect(self._on_csv_clicked)
        self.inspect_btn = QPushButton("Inspector…")
        self.inspect_btn.setToolTip(
            "The run's recorded weights and gradients, as the inspector drew them"
        )
        self.inspect_btn.clicked.connect(self.open_inspector)
        self.inspectors: list[QWidget] = []  # open recorded-inspector windows
        self.follow_box = QCheckBox("Follow")
        self.follow_box.setToolTip("Re-read the selected runs twice a second (live or remote runs)")
        self.follow_box.setChecked(True)
        self.follow_box.toggled.connect(self._on_follow_toggled)
        self.smoothing = SmoothingSlider()
        self.smoothing.changed.connect(self._on_smoothing_changed)
        buttons = QHBoxLayout()
        for w in (
            self.rename_btn,
            self.delete_btn,
            self.csv_btn,
            self.inspect_btn,
            self.follow_box,
        ):
            buttons.addWidget(w)
        buttons.addStretch(1)
        buttons.addWidget(self.smoothing)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(top)
        lv.addWidget(self.tree, 1)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c92a2a;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        lv.addWidget(self.error_label)
        lv.addLayout(buttons)

        self._grid_host = QWidget()
        self._grid = QGridLayout(self._grid_host)
        self._grid.setContentsMargins(2, 2, 2, 2)
        self._placeholder = QLabel("Select a run to see its plots; several to overlay them.")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setStyleSheet("color: #808080;")
        self._grid.addWidget(self._placeholder, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self._grid_host)
        # One legend for every plot: the runs drawn, in their colours.
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.legend)
        rv.addWidget(scroll, 1)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(splitter)

        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll)
        self._on_smoothing_changed(self.smoothing.weight())
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

    def refresh_list(self) -> None:
        """Re-list runs, keeping the selection."""
        selected = set(self.selected_paths())
        self.tree.blockSignals(True)
        self.tree.clear()
        for run in self.runs():
            loss = "" if run.final_loss is None else f"{run.final_loss:.4g}"
            steps = "" if run.steps is None else str(run.steps)
            script = Path(run.script).name if run.script else ""
            item = QTreeWidgetItem([run.name, script, run.date(), run.status, steps, loss])
            item.setData(0, PATH_ROLE, str(run.path))
            item.setToolTip(0, str(run.path))
            self.tree.addTopLevelItem(item)
            if run.path in selected:
                item.setSelected(True)
        self.tree.blockSignals(False)
        self._mark_colours()
        for col in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(col)
        if set(self.selected_paths()) != selected:
            self._on_selection_changed()

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

    def open_folder(self, path: str | Location) -> None:
        """Open (and select) any run or TensorBoard log folder, e.g. one written elsewhere
        (a local path, or a URL TensorBoard's file layer reads)."""
        p = location(path, resolve=True)
        if p not in self.extra:
            self.extra.append(p)
        self.refresh_list()
        self.select([p.name])

    # -- plots ----------------------------------------------------------------
    def smoothing_weight(self) -> float:
        """The EMA weight the slider sets (0 = raw)."""
        return self.smoothing.weight()

    def _reader(self, path: Location) -> RunReader:
        reader = self.readers.get(path)
        if reader is None:
            reader = self.readers[path] = RunReader(path)
            try:
                reader.update()
            except OSError as exc:  # unreachable or unsupported URL: say it, show nothing
                self.show_error(f"cannot read {path}: {exc}")
        return reader

    def colour_of(self, path: Location) -> str:
        """A run's colour: by its place among the selected runs (first blue, then orange...)."""
        paths = self.selected_paths()
        i = paths.index(path) if path in paths else len(paths)
        return COLOURS[i % len(COLOURS)]

    def _mark_colours(self) -> None:
        """A colour swatch beside each selected run's name, matching its curves."""
        selected = self.selected_paths()
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            path = location(item.data(0, PATH_ROLE))
            if path in selected:
                swatch = QPixmap(10, 10)
                swatch.fill(QColor(self.colour_of(path)))
                item.setIcon(0, QIcon(swatch))
            else:
                item.setIcon(0, QIcon())
        self.tree.resizeColumnToContents(0)

    def redraw(self) -> None:
        """Rebuild the plot grid for the selected runs."""
        paths = self.selected_paths()
        readers = [(p, self._reader(p)) for p in paths]
        tags: list[str] = []
        for _, r in readers:
            for tag in list(r.scalars) + list(r.histograms):
                if tag not in tags:
                    tags.append(tag)
        tags = sorted(tags, key=_tag_order)[:MAX_PLOTS]
        if list(self.plots) != tags:
            self._rebuild_grid(tags)
        weight = self.smoothing_weight()
        for tag, plot in self.plots.items():
            wanted = {p.name for p, _ in readers}
            for gone in [name for name in plot.runs() if name not in wanted]:
                plot.forget(gone)
            for p, r in readers:
                curve = r.scalars.get(tag)
                if curve is not None and curve.steps:
                    w = weight if is_per_step(tag) else 0.0
                    plot.set_curve(p.name, self.colour_of(p), curve.steps, curve.values, w)
                hists = r.histograms.get(tag)
                if hists:
                    h = hists[-1]
                    plot.set_histogram(p.name, self.colour_of(p), h.edges, h.counts)
        self._placeholder.setVisible(not self.plots)
        self.legend.setText(
            "&nbsp;&nbsp;&nbsp;".join(
                f'<span style="color:{self.colour_of(p)}; font-size:14pt">&#9632;</span> '
                f"{html.escape(p.name)}"
                for p in paths
            )
        )

    def _rebuild_grid(self, tags: list[str]) -> None:
        for plot in self.plots.values():
            self._grid.removeWidget(plot.widget)
            plot.widget.deleteLater()
        self.plots = {}
        for i, tag in enumerate(tags):
            plot = self.plots[tag] = TagPlot(tag)
            self._grid.addWidget(plot.widget, 1 + i // 2, i % 2)

    def poll(self) -> int:
        """Read what was appended to the selected runs; redraw if anything came. Returns count."""
        new = 0
        for p in self.selected_paths():
            reader = self.readers.get(p)
            if reader is not None:
                try:
                    new += reader.update()
                except OSError as exc:  # a remote folder gone or unreachable: say it, go on
                    self.show_error(f"cannot read {p}: {exc}")
        if new:
            self.redraw()
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
            self.refresh_list()

    # -- actions ---------------------------------------------------------------------
    def rename_selected(self, new_name: str) -> Location:
        """Rename the (one) selected run."""
        [path] = self.selected_paths()
        new = rename_run(path, new_name)
        self.readers.pop(path, None)
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
            self.readers.pop(p, None)
            if p in self.extra:
                self.extra.remove(p)
        self.refresh_list()
        self._on_selection_changed()
        return paths

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

    def open_inspector(self) -> QWidget | None:
        """Open the selected run's recorded weights and gradients in a window of their own."""
        from tfstudio.ui.panels.recorded_inspector import RecordedInspector

        paths = self.selected_paths()
        if len(paths) != 1:
            return None
        window = RecordedInspector(paths[0], self._reader(paths[0]), self)
        self.inspectors = [w for w in self.inspectors if w.isVisible()] + [window]
        window.show()
        return window

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
        self.redraw()
        self._mark_colours()
        self._update_buttons()
        self._on_follow_toggled(self.follow_box.isChecked())

    def _on_follow_toggled(self, on: bool) -> None:
        if on and self.selected_paths():
            if not self.timer.isActive():
                self.timer.start()
        else:
            self.timer.stop()

    def _on_smoothing_changed(self, weight: float) -> None:
        if hasattr(self, "plots") and self.plots:
            self.redraw()

    def _update_buttons(self) -> None:
        n = len(self.selected_paths())
        self.rename_btn.setEnabled(n == 1)
        self.csv_btn.setEnabled(n == 1)
        self.inspect_btn.setEnabled(n == 1)
        self.delete_btn.setEnabled(n >= 1)

    def closeEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """Stop following when the panel goes away."""
        self.timer.stop()
        super().closeEvent(event)


def _export_svg(widget: pg.PlotWidget, path: str) -> None:
    """Render a plot widget's scene into an SVG file."""
    from PySide6.QtCore import QRect, QSize
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator

    size = widget.size()
    gen = QSvgGenerator()
    gen.setFileName(path)
    gen.setSize(QSize(size.width(), size.height()))
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle("tfstudio plot")
    painter = QPainter(gen)
    try:
        widget.render(painter)
    finally:
        painter.end()


def is_per_step(tag: str) -> bool:
    """Whether a tag is a per-step curve (smoothed) rather than one point per epoch."""
    base = tag.rsplit("/", 1)[-1]
    return not (tag.startswith("epoch/") or base.startswith("epoch_") or "/epoch" in tag)


def _tag_order(tag: str) -> tuple[int, str, str]:
    """Per-step tags first, loss first within a group."""
    group = 0 if tag.startswith("step/") else 1 if tag.startswith("epoch/") else 2
    base = tag.rsplit("/", 1)[-1]
    return (group, "" if base in ("loss", "epoch_loss") else base, tag)
