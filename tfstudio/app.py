"""Composition root of the window: builds QApplication, the process launcher and the window.

The window process never imports TensorFlow: every run happens in a worker
process (``tfstudio.worker``) started by :class:`ProcessLauncher`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from tfstudio.core.channel import Channel
from tfstudio.core.options import RunOptions
from tfstudio.core.resources import default_example

SETTLE_MS = 50  # lets Qt lay out and paint before a screenshot


def run_app(
    script: str | None,
    script_args: Sequence[str] = (),
    *,
    run: bool = False,
    quit_when_done: bool = False,
    screenshot: str | None = None,
    screenshot_at_step: int | None = None,
    options: RunOptions | None = None,
    x_axis: str | None = None,
    view: str | None = None,
    sample_every: int = 0,
    compare: Sequence[str] = (),
    smoothing: float | None = None,
) -> int:
    """Show the window (before TensorFlow is imported), open ``script`` and maybe run it.

    Returns the process exit status: with ``quit_when_done``, 0 if the run
    finished and non-zero if it failed or was stopped.
    """
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui import guards
    from tfstudio.ui.first_paint import after_first_paint
    from tfstudio.ui.main_window import MainWindow

    screenshot = os.path.abspath(screenshot) if screenshot else None
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("tfstudio")
    app.setOrganizationName("tfstudio")
    # Garbage collected on the GUI thread only, and a stall reported with every thread's stack.
    collector, watchdog = guards.install(app)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True)
    window = MainWindow(channel, launcher)
    if options is not None:
        window.run_options = options
        window.inspect_action.setChecked(options.inspector)
        window.control.set_run_options(options)  # the command line's control flags

    if x_axis:
        window.metrics.set_x_mode(x_axis)
    if smoothing is not None:
        window.metrics.set_smoothing(smoothing)
    if view:
        window.show_view(view)
    if sample_every:
        window.inspector.model.set_sample_every(sample_every)
    window.show()

    def prepare_spare() -> None:
        if not launcher.is_running():  # a run (--run) makes the spare when it ends
            launcher.prepare()

    # A spare worker imports TensorFlow in advance (Run starts at once), from the
    # window's first paint on: it does not compete with the window for the CPU.
    after_first_paint(window, prepare_spare)

    outcome = {"code": 0}
    shot_taken = [False]

    def take_screenshot() -> None:
        if not screenshot or shot_taken[0]:
            return
        shot_taken[0] = True
        window.bridge.flush()  # plots up to date even between budgeted redraws
        # Grab once Qt has laid out and painted what just changed (status texts too).
        QTimer.singleShot(SETTLE_MS, lambda: window.grab().save(screenshot))

    def on_frame(_events: int) -> None:
        if screenshot_at_step is not None:
            if window.status.tracker.progress.global_step >= screenshot_at_step:
                take_screenshot()

    def on_run_finished(status: str, exit_code: int) -> None:
        take_screenshot()
        if quit_when_done:
            outcome["code"] = exit_code if exit_code else (0 if status == "finished" else 1)
            # after the screenshot's timer (same interval, started earlier: fires first)
            QTimer.singleShot(SETTLE_MS, lambda: app.exit(outcome["code"]))

    window.run_finished.connect(on_run_finished)
    window.bridge.frame_done.connect(on_frame)
    opened = window.open_script(script if script else str(default_example()))
    if opened and script_args:  # else the arguments kept for the script (Run > Arguments…)
        window.set_script_arguments(script_args, keep=False)  # the Run button uses them too
    if compare:
        window.runs.pick_folders(compare)
    if run:
        if opened:
            QTimer.singleShot(0, lambda: window.run_script(window.script_args))
        elif quit_when_done:
            watchdog.close()
            collector.uninstall()
            return 2

    def shut_down() -> None:
        watchdog.close()  # a shutdown that takes a while is no stall
        launcher.shutdown()  # no worker outlives the window
        collector.uninstall()

    app.aboutToQuit.connect(shut_down)
    code = app.exec()
    return outcome["code"] if quit_when_done else code
