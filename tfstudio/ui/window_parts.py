"""Parts of the main window kept apart so each module has one job: which run the views
show (the session's models: the live run, a run picked or reopened, the previous run
drawn behind), the recent scripts, drag and drop, and redraws of docks brought back
into sight. Mixins of :class:`~tfstudio.ui.main_window.MainWindow`: they use its panels.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import (
    QAction,
    QDragEnterEvent,
    QDropEvent,
    QResizeEvent,
    QShowEvent,
)
from PySide6.QtWidgets import QTabBar, QToolBar

from tfstudio.core.events import RunEnded
from tfstudio.core.progress import format_duration
from tfstudio.core.run_model import RunModel
from tfstudio.core.run_store import RunStore
from tfstudio.ui.panels.metric_plot import RunLayer
from tfstudio.ui.plotting.style import RunStyle

RECENT_KEY = "recent_scripts"
MAX_RECENT = 10
MESSAGE_MS = 15_000
PREVIOUS_COLOUR = "#666666"  # the script's previous run, faint behind the live one


class RunsShown:
    """Which run the views show: the session's live model, or a run picked or reopened."""

    def _show_model(self, model: RunModel) -> None:
        """Every view shows ``model`` (the session's shown run changed)."""
        for view in (
            self.metrics,
            self.console,
            self.status,
            self.system,
            self.checkpoints,
            self.notices,
            self.inspector,
        ):
            view.show_model(model)
        if not model.live:
            self.statusBar().showMessage(f"Showing recorded run {model.path}", MESSAGE_MS)

    def show_run(
        self, run_dir: str, metrics: RunStore | None = None, wait: bool = False
    ) -> RunModel:
        """Show a recorded run in every view (its metrics, inspector, console, system,
        checkpoints, notices and status), as a live run is shown.

        Its folder is read on the session's reader thread (``wait``: here, now): the
        views show it at once, "reading…", and draw each part when the read is in
        (``self.parts``, :class:`~tfstudio.ui.shown_run.PartsPump`).
        """
        model = self.session.open(run_dir, metrics, wait=wait)
        self.session.show(model)
        self.parts.kick()
        return model

    def _show_previous(self, script: str, before: float) -> None:
        """Draw ``script``'s newest run started before ``before`` faintly behind the live
        one (only it: other pinned runs are let go)."""
        previous = self.runs.previous_run(script, before)
        for path in [p for p in self.runs.pinned if p != previous]:
            self.runs.unpin(path)  # only the previous run is drawn behind the live one
        self._previous = self.runs.pin(previous) if previous is not None else None
        self.metrics.previous_box.setVisible(self._previous is not None)
        self._show_runs()

    def _show_runs(self) -> None:
        """The metrics view shows the live run (or the first picked run) and, behind it,
        the other picked runs and the script's previous run."""
        picked = self.runs.picked_styles()
        shown: list[tuple[RunStore, RunStyle]] = []
        if self._run_seen or not picked:  # a live run, or an open script's empty state
            self.metrics.set_run_style(None)  # the live run's blue
            self.session.show(self.session.live)
            if self._previous is not None and self.metrics.previous_box.isChecked():
                shown.append((self._previous, RunStyle("previous run", PREVIOUS_COLOUR, True)))
        else:  # the first picked run on show, in its swatch's colour
            self.metrics.set_run_style(picked[0][1])
            self.show_run(picked[0][0].path, picked[0][0])
            picked = picked[1:]
        shown += picked
        layers = []
        for store, style in shown:  # every run drawn by the same plot path, in its style
            layer = self._layers.get(id(store))
            if layer is None or layer.store is not store or layer.style != style:
                layer = RunLayer.of(store, style)
            layers.append(layer)
        self._layers = {id(layer.store): layer for layer in layers}
        self.metrics.set_compared(layers)
        self.metrics.refresh()

    def _on_inspect_requested(self, path: object) -> None:
        """The Runs panel's "Show run": the run in every view, the inspector in front (the
        view looked at last: comparing runs' gradients, the Gradients tab stays)."""
        self.show_run(str(path), self.runs.stores.get(path))
        self.inspector.show_inspector()

    def _on_runs_data(self) -> None:
        if not self._run_seen and not self.runs.picked() and self._previous is None:
            return
        self.metrics.refresh()
        if not self.session.shown.live:  # a reopened run read on: its progress and steps
            self.status.refresh()
            self.system.refresh()

    def _on_runs_dir_chosen(self, path: str) -> None:
        """The user picked a runs directory in the runs panel: later runs record there."""
        self.run_options = dataclasses.replace(self.run_options, logdir=path)


class WindowChrome:
    """What a run's state says when it ended, recent scripts, drag and drop, docks' redraws."""

    def _ended_placeholder(self, end: RunEnded) -> str:
        """What the empty metrics area says once a run ended without a metric to show."""
        name = Path(self._script).name if self._script else "The script"
        again = "Press Run (F5) to run it again."
        if end.status == "failed":
            err = end.error
            if err is not None:
                why = f"{err.type_name}: {err.headline()}\nat {err.location()}"
            else:
                why = end.message or f"exit code {end.exit_code}"
            return f"{name} failed — {why}\nThe console has the details. {again}"
        if end.status == "stopped":
            return f"{name} was stopped before a metric arrived. {again}"
        if end.fits == 0 and end.loops == 0:
            return f"{name} finished without training a model (no fit or loop ran). {again}"
        return f"{name} finished without reporting a metric. {again}"

    # -- recent scripts ------------------------------------------------------
    def recent_scripts(self) -> list[str]:
        """Recently opened scripts, newest first, missing files left out."""
        value = self.settings.value(RECENT_KEY, [])
        if isinstance(value, str):
            value = [value] if value else []
        paths = [str(p) for p in (value or []) if p]
        kept = [p for p in paths if os.path.isfile(p)][:MAX_RECENT]
        if kept != paths:
            self._store_recent(kept)
        return kept

    def _add_recent(self, path: str) -> None:
        paths = [path] + [p for p in self.recent_scripts() if p != path]
        self._store_recent(paths[:MAX_RECENT])
        self._rebuild_recent_menu()

    def _store_recent(self, paths: list[str]) -> None:
        self.settings.setValue(RECENT_KEY, paths)
        self.settings.sync()

    def _clear_recent(self) -> None:
        self._store_recent([])
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        paths = self.recent_scripts()
        for i, path in enumerate(paths):
            label = f"&{(i + 1) % 10}  {Path(path).name}  —  {Path(path).parent}"
            action = self.recent_menu.addAction(label)
            action.setData(path)
            action.setToolTip(path)
            action.triggered.connect(lambda _=False, p=path: self.open_script(p))
        if not paths:
            empty = self.recent_menu.addAction("No recent scripts")
            empty.setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear recent", self._clear_recent)

    # -- drag and drop -------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        """Accept dragged local files; whether they are scripts is checked on drop."""
        mime = event.mimeData()
        if mime.hasUrls() and any(url.isLocalFile() for url in mime.urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        """Open a dropped .py file; say why anything else is refused."""
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        event.acceptProposedAction()
        if len(paths) != 1:
            self._say(f"Drop one Python script (.py file) at a time; got {len(paths)} files.")
            return
        self.open_script(paths[0])

    # -- redraws of panels that were out of sight ------------------------------
    def _on_dock_shown(self, shown: bool) -> None:
        if shown:
            self.console.catch_up()
            self.system.catch_up()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt API)
        """Shown: the console gets its lines (a height given before the window was laid out
        is shared out again by the layout)."""
        super().showEvent(event)
        self._give_console_its_lines()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        """A taller window (maximised, say) gives a console lower than its lines more room
        (Qt gives the central widget all of it)."""
        super().resizeEvent(event)
        self._give_console_its_lines()

    def _give_console_its_lines(self) -> None:
        """The console dock as tall as its lines need (when the window has the room)."""
        dock, console = self._console_dock, self.console
        lines = console.wanted_height()
        if dock.isHidden() or dock.isFloating():  # closed, or a window of its own
            return
        if dock.isVisible() and console.height() >= lines:
            return
        extra = 0  # what the dock's height holds besides the console: its title, its tabs
        if dock.isVisible():
            extra = max(0, dock.height() - console.height())
            for bar in self.findChildren(QTabBar):
                if bar.isVisible() and dock.windowTitle() in map(bar.tabText, range(bar.count())):
                    extra += bar.height()
        self.resizeDocks([dock], [lines + extra], Qt.Orientation.Vertical)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        """Back from minimised: the panels draw what arrived meanwhile."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.WindowStateChange and not self.isMinimized():
            self.metrics.refresh()
            self.console.catch_up()
            self.system.catch_up()


def reserve_width(toolbar: QToolBar, action: QAction, texts: Sequence[str]) -> None:
    """Give ``action``'s toolbar button the width of its widest text, so it never resizes."""
    button = toolbar.widgetForAction(action)
    if button is None:
        return
    current = action.text()
    widths = []
    for text in texts:
        action.setText(text)
        widths.append(button.sizeHint().width())
    action.setText(current)
    button.setMinimumWidth(max(widths))


def end_detail(end: RunEnded) -> str:
    if end.status == "failed":
        err = end.error
        if err is None:
            return end.message or f"exit code {end.exit_code}"
        where = f"{os.path.basename(err.filename)}:{err.lineno}" if err.filename else "<unknown>"
        return f"{err.type_name} at {where}"
    if end.status == "finished" and end.fits == 0 and end.loops == 0:
        return "no fit was monitored"
    return f"{end.steps_text(',')} in {format_duration(end.time)}"
