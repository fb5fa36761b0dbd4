"""The main window: toolbar, menus, metrics plots, console dock and status bar.

It holds no training logic: it starts and stops runs through a ``Launcher``
and learns what happens from the ``Channel`` (through the ``Bridge``). What a run
shows is a :class:`~tfstudio.core.run_model.RunModel` owned by the window's
:class:`~tfstudio.core.run_model.Session`: the bridge hands every event to the session
first, and every view is given the model it shows (the live run's, or a reopened run's).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMenu,
    QStyle,
    QWidget,
)

from tfstudio.core.advisor import check_source
from tfstudio.core.channel import Channel
from tfstudio.core.events import EngineStatus, MonitorError, RunEnded, RunStarted
from tfstudio.core.launcher import Launcher
from tfstudio.core.options import RunOptions
from tfstudio.core.run_model import Session
from tfstudio.core.run_store import RunStore
from tfstudio.core.runs import resolve_logdir
from tfstudio.core.scripts import ScriptPathError, check_script
from tfstudio.ui.arguments import ArgumentsDialog, store_arguments, stored_arguments
from tfstudio.ui.bridge import Bridge, Puller
from tfstudio.ui.help import ShortcutsDialog, about_dialog, open_docs
from tfstudio.ui.panels.checkpoints import CheckpointsPanel
from tfstudio.ui.panels.console import ConsolePanel
from tfstudio.ui.panels.control import ControlPanel
from tfstudio.ui.panels.inspector import VIEWS as INSPECTOR_VIEWS
from tfstudio.ui.panels.inspector import InspectorPanels
from tfstudio.ui.panels.metric_plot import RunLayer
from tfstudio.ui.panels.metrics import MetricsPanel
from tfstudio.ui.panels.notices import NoticesPanel
from tfstudio.ui.panels.runs import RunsPanel
from tfstudio.ui.panels.status import StatusPanel
from tfstudio.ui.panels.system import SystemPanel
from tfstudio.ui.shown_run import PartsPump
from tfstudio.ui.window_parts import (
    MAX_RECENT,
    MESSAGE_MS,
    RECENT_KEY,
    RunsShown,
    WindowChrome,
    end_detail,
    reserve_width,
)

__all__ = ["MAX_RECENT", "RECENT_KEY", "VIEWS", "MainWindow"]

APP_NAME = "tfstudio"
VIEWS = (*INSPECTOR_VIEWS, "system")  # what ``--view`` may show
SYSTEM_VIEW_WIDTH = 720  # the System dock, enlarged when it is the view asked for


class MainWindow(WindowChrome, RunsShown, QMainWindow):
    """tfstudio's window: open a script, run it, watch its metrics and output live.

    Args:
        channel: events of the runs this window shows (drained by its ``Bridge``).
        launcher: starts and stops runs.
        settings: where recent scripts are kept; ``QSettings("tfstudio", "tfstudio")``
            when None.
    """

    run_finished = Signal(str, int)  # RunEnded.status, RunEnded.exit_code

    def __init__(
        self,
        channel: Channel,
        launcher: Launcher,
        settings: QSettings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.channel = channel
        self.launcher = launcher
        self.settings = settings if settings is not None else QSettings(APP_NAME, APP_NAME)
        self._script: str | None = None
        self.script_args: tuple[str, ...] = ()  # what Run passes (from the command line)
        self.run_options = RunOptions()  # settings every run of this window gets
        self._running = False
        self._stopping = False
        self._stop_detail = ""
        self._run_seen = False  # RunStarted of the current run arrived
        self._engine = EngineStatus("")
        self._last_end: RunEnded | None = None

        self.session = Session()  # the run models: the live run's, the runs opened
        live = self.session.live
        self.metrics = MetricsPanel(settings=self.settings, parent=self, model=live)
        self.console = ConsolePanel(parent=self, model=live)
        self.status = StatusPanel(parent=self, model=live)
        self.inspector = InspectorPanels(self, self.metrics, live)  # model dock + inspector tabs
        self.setCentralWidget(self.inspector.tabs)
        self._console_dock = QDockWidget("Console", self)
        self._console_dock.setObjectName("consoleDock")
        self._console_dock.setWidget(self.console)
        self._console_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self._console_dock)
        self.system = SystemPanel(parent=self, model=live)
        self._system_dock = QDockWidget("System", self)
        self._system_dock.setObjectName("systemDock")
        self._system_dock.setWidget(self.system)
        self._system_dock.setFeatures(self._console_dock.features())
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self._system_dock)
        # The model tree shares the right side with the system view: the plots keep the middle.
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector.model_dock)
        self.tabifyDockWidget(self._system_dock, self.inspector.model_dock)
        self._system_dock.raise_()
        self.runs = RunsPanel(parent=self)
        self.runs.logdir_changed.connect(self._on_runs_dir_chosen)
        self.runs.picked_changed.connect(self._show_runs)
        self.runs.inspect_requested.connect(self._on_inspect_requested)
        self.runs.data_changed.connect(self._on_runs_data)
        self.metrics.previous_box.toggled.connect(self._show_runs)
        self._previous: RunStore | None = None  # the script's previous run, behind the live one
        self._layers: dict[int, RunLayer] = {}  # id(store) -> its layer in the metrics view
        self.runs_dock = QDockWidget("Runs", self)
        self.runs_dock.setObjectName("runsDock")
        self.runs_dock.setWidget(self.runs)
        self.runs_dock.setFeatures(self._console_dock.features())
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.runs_dock)
        self.tabifyDockWidget(self._console_dock, self.runs_dock)
        self.notices = NoticesPanel(parent=self, model=live)  # the advisor's (panels/notices.py)
        self.notices_dock = QDockWidget("Notices", self)
        self.notices_dock.setObjectName("noticesDock")
        self.notices_dock.setWidget(self.notices)
        self.notices_dock.setFeatures(self._console_dock.features())
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.notices_dock)
        self.tabifyDockWidget(self._console_dock, self.notices_dock)
        self.notices.count_changed.connect(
            lambda n: self.notices_dock.setWindowTitle(f"Notices ({n})" if n else "Notices")
        )
        self._console_dock.raise_()
        self.statusBar().addPermanentWidget(self.status, 1)
        self.statusBar().setSizeGripEnabled(False)

        self._make_actions()
        self._make_controls()  # pause, checkpoints, eager/graph, LR (panels/control.py)
        self._make_menus_and_toolbar()

        self.bridge = Bridge(channel, parent=self)
        if isinstance(launcher, Puller):  # runs in worker processes: the window pulls
            self.bridge.puller = launcher
            listeners = getattr(launcher, "command_listeners", None)
            if listeners is not None:  # a command's answer is awaited at the live pace
                listeners.append(self.bridge.wake)
        self.session.listeners.append(self._show_model)
        # a reopened run is read on the session's reader thread, followed while it grows
        self.parts = PartsPump(
            self.session,
            (self.metrics, self.console, self.status, self.system, self.checkpoints,
             self.notices, self.inspector),
            follow=self.runs.follow_box.isChecked,
            note=self.console.note,
            parent=self,
        )  # fmt: skip
        self.status.show_live_requested.connect(lambda: self.session.show(self.session.live))
        for panel in (
            self.session,  # first: the live model has each event before any view draws
            self.metrics,
            self.console,
            self.status,
            self.system,
            self.runs,
            self.control,
            self.checkpoints,
            self.inspector,
            self.notices,
        ):
            self.bridge.add_panel(panel)
        self.bridge.run_started.connect(self._on_run_started)
        self.bridge.run_ended.connect(self._on_run_ended)
        self.bridge.engine_status.connect(self._on_engine_status)
        self.bridge.monitor_error.connect(self._on_monitor_error)
        self.system.machine_sampled.connect(self.bridge.note_machine_cpu)  # redraw rate
        # Panels out of sight skip their redraws; a dock brought to the front catches up.
        for dock in (self._console_dock, self._system_dock):
            dock.visibilityChanged.connect(self._on_dock_shown)

        self.setAcceptDrops(True)
        self.resize(1200, 800)
        self._give_console_its_lines()
        self.resizeDocks([self._system_dock], [360], Qt.Orientation.Horizontal)
        self._update_title()
        self._update_state()
        self.bridge.start()

    # -- construction ------------------------------------------------------
    def _make_actions(self) -> None:
        icon = self.style().standardIcon
        self.open_action = QAction(icon(QStyle.StandardPixmap.SP_DialogOpenButton), "Open…", self)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.open_action.setToolTip("Open a Python training script (Ctrl+O)")
        self.open_action.triggered.connect(self._on_open_triggered)
        self.run_action = QAction(icon(QStyle.StandardPixmap.SP_MediaPlay), "Run", self)
        self.run_action.setShortcuts([QKeySequence("F5"), QKeySequence("Ctrl+R")])
        self.run_action.setToolTip("Run the script (F5)")
        self.run_action.triggered.connect(self._on_run_triggered)
        self.stop_action = QAction(icon(QStyle.StandardPixmap.SP_MediaStop), "Stop", self)
        self.stop_action.setShortcut(QKeySequence("Shift+F5"))
        self.stop_action.setToolTip("Stop training at the next step (Shift+F5)")
        self.stop_action.triggered.connect(self.stop_run)
        self.inspect_action = QAction("Inspect Weights, Gradients and Outputs", self)
        self.inspect_action.setCheckable(True)
        self.inspect_action.setChecked(self.run_options.inspector)
        self.inspect_action.setToolTip(
            "Sample weights, gradients and layer outputs during the next run "
            "(off: no probes at all, as --no-inspector)"
        )
        self.inspect_action.toggled.connect(self._on_inspect_toggled)
        self.quit_action = QAction("Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        self.arguments_action = QAction("Arguments…", self)
        self.arguments_action.setShortcut(QKeySequence("Ctrl+Shift+R"))
        self.arguments_action.setToolTip("The command-line arguments Run passes to the script")
        self.arguments_action.triggered.connect(self._on_arguments_triggered)
        self.shortcuts_action = QAction("Keyboard Shortcuts", self)
        self.shortcuts_action.setShortcut(QKeySequence.StandardKey.HelpContents)
        self.shortcuts_action.triggered.connect(lambda: self.shortcuts_dialog().exec())
        self.docs_action = QAction("Open README and Docs", self)
        self.docs_action.setToolTip("The local README.md and docs/ folder (no network)")
        self.docs_action.triggered.connect(lambda: open_docs(self))
        self.about_action = QAction("About tfstudio", self)
        self.about_action.triggered.connect(lambda: about_dialog(self).exec())
        self.clear_console_action = self.console.clear_action

    def _make_controls(self) -> None:
        """Run controls and the checkpoints dock; their logic lives in their panels."""
        self.control = ControlPanel(self.launcher, parent=self)
        self.control.state_changed.connect(self._update_state)
        self.control.notice.connect(lambda text: self.statusBar().showMessage(text, MESSAGE_MS))
        self.control.console_note.connect(self.console.note)
        self.checkpoints = CheckpointsPanel(self.launcher, parent=self, model=self.session.live)
        self._checkpoints_dock = QDockWidget("Checkpoints", self)
        self._checkpoints_dock.setObjectName("checkpointsDock")
        self._checkpoints_dock.setWidget(self.checkpoints)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self._checkpoints_dock)
        self.tabifyDockWidget(self._console_dock, self._checkpoints_dock)  # Console | Runs | …
        self._console_dock.raise_()

    def _make_menus_and_toolbar(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = QMenu("Recent", self)
        self.recent_menu.aboutToShow.connect(self._rebuild_recent_menu)
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        run_menu = self.menuBar().addMenu("&Run")
        run_menu.addAction(self.run_action)
        run_menu.addAction(self.arguments_action)
        run_menu.addAction(self.control.pause_action)
        run_menu.addAction(self.stop_action)
        run_menu.addSeparator()
        run_menu.addAction(self.control.save_action)
        run_menu.addAction(self.control.eager_action)
        run_menu.addAction(self.control.stop_at_action)
        run_menu.addAction(self.control.checkpoint_every_action)
        run_menu.addSeparator()
        run_menu.addAction(self.inspect_action)
        view_menu = self.menuBar().addMenu("&View")
        view_menu.addAction(self._console_dock.toggleViewAction())
        view_menu.addAction(self._system_dock.toggleViewAction())
        view_menu.addAction(self.runs_dock.toggleViewAction())
        view_menu.addAction(self._checkpoints_dock.toggleViewAction())
        view_menu.addAction(self.inspector.model_dock.toggleViewAction())

        view_menu.addAction(self.notices_dock.toggleViewAction())
        view_menu.addAction(self.clear_console_action)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(self.shortcuts_action)
        help_menu.addAction(self.docs_action)
        help_menu.addSeparator()
        help_menu.addAction(self.about_action)
        self.help_menu = help_menu
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.addAction(self.open_action)
        toolbar.addAction(self.run_action)
        toolbar.addAction(self.control.pause_action)
        toolbar.addAction(self.stop_action)
        toolbar.addAction(self.control.save_action)
        toolbar.addSeparator()
        toolbar.addAction(self.control.eager_action)
        toolbar.addWidget(self.control.mode_label)
        toolbar.addWidget(self.control.lr_widget)
        toolbar.addSeparator()
        toolbar.addAction(self.clear_console_action)
        self.toolbar = toolbar
        # Pause reads "Resume" while paused: the button keeps the wider text's width,
        # so Stop never slides under the cursor.
        reserve_width(toolbar, self.control.pause_action, self.control.PAUSE_TEXTS)
        self._rebuild_recent_menu()

    # -- public API (used by app.py and the CLI) ---------------------------
    @property
    def script_path(self) -> str | None:
        """Absolute path of the open script, or None."""
        return self._script

    def is_running(self) -> bool:
        """True from a successful ``run_script`` (or a RunStarted) until RunEnded."""
        return self._running

    def open_script(self, path: str) -> bool:
        """Make ``path`` the script to run; on a bad path say why (no dialog) and return False."""
        if self._running:
            self._say(f"Cannot open {path} while a run is in progress; stop it first.")
            return False
        try:
            checked = check_script(path)
        except ScriptPathError as exc:
            self._say(str(exc))
            return False
        if str(checked) != self._script:
            # arguments belong to the script they were given for: its own, kept from before
            self.set_script_arguments(stored_arguments(self.settings, str(checked)), keep=False)
        self._script = str(checked)
        self._start_clean()
        self.metrics.set_placeholder(
            f"{checked.name} is open — press Run (F5) to train it and watch its metrics here.\n"
            f"{checked.parent}"
        )
        self._add_recent(self._script)
        self.notices.start_over(check_source(checked))  # static advisor: pure Python, no TF
        self._last_end = None
        self.runs.set_logdir(resolve_logdir(self.run_options.logdir, checked.parent))
        self._show_previous(str(checked), time.time())
        self._update_title()
        self._update_state()
        self.statusBar().showMessage(f"Opened {self._script}", MESSAGE_MS)
        return True

    def _start_clean(self) -> None:
        """Forget the run shown (finished, failed or stopped alike): a script just opened
        shows its empty state, as before its first run. The console keeps its text."""
        self._run_seen = False
        self.session.new_live()  # every view shows an empty run
        self.status.reset()
        self.checkpoints.reset()
        self.control.forget_run()
        self.system.forget_run()

    def run_script(self, args: Sequence[str] = ()) -> bool:
        """Start the open script with ``args``; False (with a message) if it cannot start."""
        if self._running or self.launcher.is_running():
            self._say("A run is already in progress; stop it before starting another.")
            return False
        if self._script is None:
            self._say("No script is open: open a .py training script first.")
            return False
        try:
            script = str(check_script(self._script))
        except ScriptPathError as exc:
            self._say(str(exc))
            return False
        try:
            self.launcher.start(script, tuple(args), self._options_for_run())
        except Exception as exc:  # the launcher's refusal must not take the window down
            self._say(f"Could not start {script}: {exc}")
            return False
        self._running = True
        self._stopping = False
        self._run_seen = False
        self._last_end = None
        self._update_state()
        return True

    def _options_for_run(self) -> RunOptions:
        """The control panel's settings, recorded where the runs panel points."""
        inspector = self.inspector.run_options()
        return dataclasses.replace(
            self.control.options,
            logdir=self.run_options.logdir,
            record=self.run_options.record,
            inspector=self.run_options.inspector,
            inspector_budget=inspector.inspector_budget,
            sample_every=inspector.sample_every,
        )

    def show_view(self, name: str) -> None:
        """Bring a view to the front: an inspector view, or ``"system"`` (the dock, enlarged)."""
        if name not in VIEWS:
            raise ValueError(f"unknown view {name!r}: expected one of {', '.join(VIEWS)}")
        if name != "system":
            self.inspector.show_view(name)
            return
        self._system_dock.show()
        self._system_dock.raise_()
        self.resizeDocks([self._system_dock], [SYSTEM_VIEW_WIDTH], Qt.Orientation.Horizontal)

    def _on_inspect_toggled(self, on: bool) -> None:
        self.run_options = dataclasses.replace(self.run_options, inspector=on)

    def stop_run(self) -> None:
        """Ask the current run to stop at the next step; pressed again, stop it harder.

        The launcher escalates a stop that finds no batch boundary (SIGINT, then
        SIGTERM, then SIGKILL); each further press moves it on at once.
        """
        if not self._running and not self.launcher.is_running():
            return
        self.launcher.stop()
        if not self._stopping:
            self._stopping = True
            self._stop_detail = "at the next batch boundary"
        self._update_state()

    # -- events from the bridge --------------------------------------------
    def _on_run_started(self, event: RunStarted) -> None:
        self._running = True
        self._run_seen = True
        self._last_end = None
        self._show_previous(event.script, event.wall_time - 0.5)
        if event.script and event.script != self._script:
            self._script = event.script
            self._update_title()
        name = Path(event.script).name if event.script else "The script"
        self.metrics.set_placeholder(
            f"{name} is running — its metrics appear here from the first training step."
        )
        self._update_state()

    def _on_run_ended(self, event: RunEnded) -> None:
        self._running = False
        self._stopping = False
        self._last_end = event
        self.metrics.set_placeholder(self._ended_placeholder(event))
        self._update_state()
        self.run_finished.emit(event.status, event.exit_code)

    def _on_engine_status(self, event: EngineStatus) -> None:
        if event.state == "stopping":
            self._stop_detail = event.detail
            self._update_state()
            return
        self._engine = event
        if event.state == "error":
            self._say(f"Engine error: {event.detail or 'unknown'}", note=True)
        self._update_state()

    def _on_monitor_error(self, event: MonitorError) -> None:
        self.statusBar().showMessage(event.headline(), MESSAGE_MS)

    # -- state ---------------------------------------------------------------
    def _update_state(self) -> None:
        state, detail = self._state()
        self.status.set_state(state, detail)
        self.run_action.setEnabled(self._script is not None and not self._running)
        self.stop_action.setEnabled(self._running)
        self.stop_action.setToolTip(
            "Stop again: interrupt the script now (Shift+F5)"
            if self._stopping
            else "Stop training at the next step (Shift+F5)"
        )
        self.open_action.setEnabled(not self._running)
        self.recent_menu.setEnabled(not self._running)

    def _state(self) -> tuple[str, str]:
        loading = self._engine.state == "loading"
        if self._running:
            if self._stopping:
                return "stopping", self._stop_detail
            if self.control.state():
                return self.control.state(), self.control.state_detail()
            if loading:
                return "loading", ""
            return ("running", "") if self._run_seen else ("starting", "")
        end = self._last_end
        if end is not None:
            return end.status, end_detail(end)
        if loading:
            return "loading", ""
        if self._engine.state == "error":
            return "error", self._engine.detail
        if self._engine.state == "ready":
            return "ready", ""
        return "idle", ""

    def state(self) -> str:
        """Current state name: idle, loading, ready, starting, running, stopping, ..."""
        return self._state()[0]

    def _update_title(self) -> None:
        name = Path(self._script).name if self._script else ""
        self.setWindowTitle(f"{name} — {APP_NAME}" if name else APP_NAME)
        if self._script:
            self.setWindowFilePath(self._script)

    def _say(self, text: str, note: bool = True) -> None:
        """Tell the user something went wrong, without a blocking dialog."""
        if note:
            self.console.note(text)
        self.statusBar().showMessage(text, MESSAGE_MS)

    # -- toolbar / menu handlers -------------------------------------------
    def _on_open_triggered(self) -> None:
        start = str(Path(self._script).parent) if self._script else os.getcwd()
        path, _ = QFileDialog.getOpenFileName(
            self, "Open training script", start, "Python scripts (*.py *.pyw);;All files (*)"
        )
        if path:
            self.open_script(path)

    def _on_run_triggered(self) -> None:
        self.run_script(self.script_args)

    def set_script_arguments(self, args: Sequence[str], keep: bool = True) -> None:
        """The arguments the next Run passes to the open script (``keep``: remembered for
        that script, in the settings, for the next time it is opened)."""
        self.script_args = tuple(str(a) for a in args)
        if keep and self._script:
            store_arguments(self.settings, self._script, self.script_args)
        shown = shlex.join(self.script_args)
        self.run_action.setToolTip(
            f"Run the script with: {shown} (F5)" if shown else "Run the script (F5)"
        )

    def _on_arguments_triggered(self) -> None:
        if not self._script:
            self._say("No script is open: open a .py training script first.", note=False)
            return
        dialog = ArgumentsDialog(Path(self._script).name, self.script_args, self)
        if dialog.exec():
            self.set_script_arguments(dialog.args)

    def shortcuts_dialog(self) -> ShortcutsDialog:
        """The keyboard shortcuts, read from the menus' and the window's actions."""

        def walk(actions: Sequence[QAction]) -> list[QAction]:
            out: list[QAction] = []
            for action in actions:
                menu = action.menu()
                out.extend(walk(menu.actions()) if menu is not None else [action])
            return out

        actions = walk(self.menuBar().actions()) + self.toolbar.actions() + self.actions()
        return ShortcutsDialog(actions, self)

    # -- closing -------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop a run still going, then close (the app then ends every worker)."""
        if self._running or self.launcher.is_running():
            self.launcher.stop()
        self.bridge.stop()
        self.system.stop()
        self.parts.stop()
        super().closeEvent(event)
