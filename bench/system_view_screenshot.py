"""Screenshot of the system view for docs/system_view.png: real CPU data, a fake GPU.

The process and machine figures are real (psutil, sampled by the panel's own
timer while this script keeps a core busy with numpy); the GPU is a fake NVML
module (no GPU machine was available), and the steps are synthetic: fast while
the fake GPU is busy, slow during a stretch where it starves (as with an input
pipeline that cannot keep up), which is what the view is for.

    QT_QPA_PLATFORM=offscreen python bench/system_view_screenshot.py docs/system_view.png
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.fake_nvml import GB, H100, FakeNvml  # noqa: E402
from tfstudio.core.events import (  # noqa: E402
    DeviceMemory,
    FitStarted,
    ModelSummary,
    RunDevices,
    RunStarted,
    StepEnded,
)
from tfstudio.core.gpu import GpuReader, IdleGpuWatch  # noqa: E402
from tfstudio.ui.panels.system import SystemPanel  # noqa: E402

SECONDS = 24.0
STARVED = (10.0, 20.0)  # the fake GPU waits for input in this stretch


def main(out: str) -> None:
    app = QApplication.instance() or QApplication([])
    nvml = FakeNvml([dict(H100, procs=[(os.getpid(), 0)])])
    device = nvml.devices[0]  # what the fake reports: changed as the "run" goes
    panel = SystemPanel(gpu_reader=GpuReader(nvml), interval_ms=500)
    panel.idle_watch = IdleGpuWatch(threshold=30, sustain_s=6)
    panel.resize(380, 700)
    panel.show()
    panel.ingest_event(RunStarted(__file__, (__file__,), str(ROOT), time.time(), 0))
    panel.ingest_event(RunDevices(("GPU 0: NVIDIA H100 80GB HBM3",)))
    model = ModelSummary("cnn", "Sequential", (), 1, 1)
    panel.ingest_event(FitStarted(0, model, 10, 0, None, 1, 0, 0.0))
    t0 = time.monotonic()
    rng = np.random.default_rng(0)
    a = rng.normal(size=(300, 300))
    step, next_tf, last_t = 0, 0.0, 0.0
    while (now := time.monotonic() - t0) < SECONDS:
        starved = STARVED[0] <= now < STARVED[1]
        device["util"] = float(rng.uniform(8, 18) if starved else rng.uniform(88, 97))
        run_mem = int(min(22.0, 6 + now * 2) * GB)
        device["used"] = run_mem + 8 * GB
        device["procs"] = [(os.getpid(), run_mem)]
        device["temp"] = 48 + min(now, 12) * (0.6 if not starved else 0.2)
        device["power_mw"] = (140_000 if starved else 520_000) + rng.uniform(-20_000, 20_000)
        per_step = rng.uniform(0.075, 0.095) if starved else rng.uniform(0.011, 0.013)
        steps = []
        while last_t + per_step <= now:
            step += 1
            last_t += per_step
            steps.append(StepEnded(0, step, 0, step, 1, {}, {}, last_t))
        if steps:
            panel.ingest_steps(steps)
        if now >= next_tf:
            current = int(min(20.5, 5 + now * 2) * GB)
            panel.ingest_event(DeviceMemory(now, ("GPU:0",), (current,), (current + GB // 2,)))
            next_tf = now + 1.0
        deadline = time.monotonic() + 0.05
        while time.monotonic() < deadline:  # real CPU work for the real CPU curves
            a = np.tanh(a @ a.T / 300.0)
        app.processEvents()
    panel.ingest_event(FitEnded_for(step, now))
    app.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    panel.grab().save(out)
    print(f"wrote {out}; {len(panel.samples)} samples; notice shown: {bool(panel.notice_text)}")
    panel.stop()


def FitEnded_for(step: int, now: float) -> object:  # noqa: N802
    from tfstudio.core.events import FitEnded

    return FitEnded(0, step, False, now)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/system_view.png")
