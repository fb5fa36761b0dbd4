"""Screenshot of the live metrics view with smoothing, for docs/metrics_smoothing.png.

A real MainWindow offscreen, fed a synthetic noisy run (two fits of 300 steps, a
falling loss and a rising accuracy with Gaussian noise, epoch means and val points)
through its channel, as a worker would; smoothing set to 0.8.

    QT_QPA_PLATFORM=offscreen python bench/smoothing_screenshot.py docs/metrics_smoothing.png
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import (  # noqa: E402
    EpochEnded,
    FitEnded,
    FitStarted,
    ModelSummary,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.ui.main_window import MainWindow  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from ui_ingest import IdleLauncher  # noqa: E402 - beside this file: a launcher that starts nothing

STEPS_PER_EPOCH = 100
EPOCHS = 3


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "metrics_smoothing.png"
    app = QApplication.instance() or QApplication(sys.argv[:1])
    settings = QSettings(
        os.path.join(tempfile.mkdtemp(prefix="tfstudio-shot-"), "s.ini"),
        QSettings.Format.IniFormat,
    )
    channel = Channel()
    window = MainWindow(channel, IdleLauncher(running=True), settings)
    window.resize(1300, 800)
    window.show()
    window.metrics.set_smoothing(0.8)
    rng = random.Random(1)
    channel.emit(RunStarted("/demo/train.py", ("train.py",), "/demo", 0.0))
    g, t = 0, 0.0
    for fit in range(2):
        model = ModelSummary(f"model_{fit}", "Sequential", (), 100, 100)
        channel.emit(FitStarted(fit, model, EPOCHS, 0, STEPS_PER_EPOCH, 1, g, t))
        for epoch in range(EPOCHS):
            for i in range(STEPS_PER_EPOCH):
                g += 1
                t += 0.01
                loss = 2.0 / (1 + 0.01 * g) + 0.25 * rng.gauss(0, 1)
                acc = min(1.0, 0.3 + 0.5 * (1 - 1 / (1 + 0.01 * g)) + 0.05 * rng.gauss(0, 1))
                values = {"loss": loss, "accuracy": acc}
                channel.emit(StepEnded(fit, g, epoch, i + 1, 1, values, values, t))
            metrics = {
                "loss": 1.0 - 0.2 * epoch - 0.1 * fit,
                "accuracy": 0.5 + 0.1 * epoch,
                "val_loss": 1.1 - 0.2 * epoch,
                "val_accuracy": 0.5 + 0.05 * epoch,
            }
            channel.emit(EpochEnded(fit, epoch, g, metrics, t))
            window.bridge.tick()
            window.bridge.flush()
        channel.emit(FitEnded(fit, g, False, t))
    channel.emit(RunEnded("finished", 0, 2, g, t, None, ""))
    window.bridge.tick()
    window.bridge.flush()
    for _ in range(5):
        app.processEvents()
    window.metrics.grab().save(out)
    print(f"wrote {out}")
    window.bridge.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
