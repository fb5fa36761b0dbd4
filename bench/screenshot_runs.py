"""README screenshot of the runs panel: two runs of a bundled example, overlaid.

Runs ``mlp_classifier.py`` twice in the real window (real engine, recording on),
renames the two run folders, selects both in the runs panel and grabs the window.

    QT_QPA_PLATFORM=offscreen python bench/screenshot_runs.py [docs/runs_panel.png]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/runs_panel.png").resolve()
    from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.channel import Channel
    from tfstudio.core.options import RunOptions
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.core.resources import examples
    from tfstudio.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="tfstudio-shot-"))
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    win = MainWindow(channel, launcher, QSettings(str(tmp / "s.ini"), QSettings.IniFormat))
    win.run_options = RunOptions(logdir=str(tmp / "runs"))
    win.resize(1400, 950)
    win.show()
    script = next(p for p in examples() if p.name == "mlp_classifier.py")
    win.open_script(str(script))

    def run(args: list[str]) -> None:
        loop = QEventLoop()
        win.run_finished.connect(loop.quit)
        win.run_script(args)
        loop.exec()
        win.run_finished.disconnect(loop.quit)

    names = []
    for samples in ("1500", "6000"):
        run(["--epochs", "4", "--samples", samples])
        win.runs.refresh_list()
        newest = win.runs.runs()[-1]
        win.runs.select([newest.name])
        names.append(win.runs.rename_selected(f"mlp-{samples}-samples").name)
    win.runs.select(names)
    win.runs_dock.raise_()
    win.resizeDocks([win.runs_dock], [620], Qt.Orientation.Vertical)
    loop = QEventLoop()
    QTimer.singleShot(500, loop.quit)
    loop.exec()
    win.grab().save(str(out))
    print(f"saved {out}")
    win.bridge.stop()
    launcher.shutdown()
    app.processEvents()


if __name__ == "__main__":
    main()
