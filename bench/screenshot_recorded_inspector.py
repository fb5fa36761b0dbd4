"""README screenshot of a recorded run's weights in the inspector's views.

Records a headless run of ``mlp_classifier.py`` (``tfstudio run``), then opens
its folder the way the runs panel's **Inspector…** button does and grabs the
window.

    QT_QPA_PLATFORM=offscreen python bench/screenshot_recorded_inspector.py [OUT.png]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/recorded_inspector.png").resolve()
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.resources import examples
    from tfstudio.core.runs import list_runs
    from tfstudio.ui.panels.recorded_inspector import RecordedInspector

    script = next(p for p in examples() if p.name == "mlp_classifier.py")
    logdir = Path(tempfile.mkdtemp(prefix="tfstudio-shot-")) / "runs"
    cmd = [sys.executable, "-m", "tfstudio", "run", "--logdir", str(logdir), str(script)]
    subprocess.run([*cmd, "--epochs", "8"], check=True, stdout=subprocess.DEVNULL)
    run = list_runs(logdir)[-1]

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = RecordedInspector(run.path)
    window.resize(1200, 800)
    window.show()
    loop = QEventLoop()
    QTimer.singleShot(300, loop.quit)
    loop.exec()
    window.grab().save(str(out))
    print(f"saved {out}: {len(window.events)} events from {run.path.name}")
    window.close()
    app.processEvents()


if __name__ == "__main__":
    main()
