"""Screenshot of the notices panel for docs/advisor_notices.png, taken with the real window.

Opens a script that falls into several pitfalls (tests/advisor/scripts/demo_pitfalls.py):
the static advice appears at once; one live notice (a loss stuck at ln(2), as the worker sends it)
is fed through the window's channel as a run would; the shuffle/split notice is selected.

    QT_QPA_PLATFORM=offscreen python bench/advisor_screenshot.py docs/advisor_notices.png
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.ui.conftest import FakeLauncher  # noqa: E402
from tfstudio.core.advisor.live import STUCK_LOSS  # noqa: E402
from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.ui.main_window import MainWindow  # noqa: E402

DEMO = ROOT / "tests" / "advisor" / "scripts" / "demo_pitfalls.py"


def main(out: str) -> None:
    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp())
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    channel = Channel()
    window = MainWindow(channel, FakeLauncher(channel), settings)
    window.resize(1200, 800)
    window.show()
    script = tmp / "train.py"
    script.write_text(DEMO.read_text())
    window.open_script(str(script))
    channel.emit(
        STUCK_LOSS.advice(
            "the loss has stayed at 0.6931 for 3 epochs, ln(2) = 0.6931: the model predicts "
            "every one of the 2 classes with the same probability",
            str(script),
            28,
        )
    )
    window.bridge.tick()
    window.bridge.flush()
    window.notices_dock.raise_()
    window.resizeDocks([window.notices_dock], [330], Qt.Orientation.Vertical)
    window.notices.select(2)
    for _ in range(5):
        app.processEvents()
    window.grab().save(out)
    window.bridge.stop()
    window.close()
    print(f"advisor: notices screenshot -> {out} ({len(window.notices.notices())} notices)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/advisor_notices.png")
