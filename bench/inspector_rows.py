"""The Weights view's CPU per inspector sample: every row drawn, or only the rows in view.

One offscreen ``WeightsView`` (800 x 500 px, the size of the window's tab) over a store
of ``--rows`` 64 x 64 kernels; each sample adds one ``WeightStats`` and times the view's
``refresh`` and the paint that follows (thread CPU). The two ways alternate sample by
sample in one view: ``every row`` (each row drawn at every sample, as before
2026-11-28) and ``in view`` (rows scrolled out of sight wait until scrolled to); a
third, ``in view again``, repeats the second as the control of the method's resolution.

    python bench/inspector_rows.py [--rows 24] [--samples 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Feed the samples, time each refresh, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24, help="variables (24 are drawn at most)")
    parser.add_argument("--samples", type=int, default=60, help="samples per way")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    from PySide6.QtWidgets import QApplication

    import tfstudio.ui.panels.variable_rows as variable_rows
    from tfstudio.core.events import VariableStats, WeightStats
    from tfstudio.core.inspector_store import InspectorStore
    from tfstudio.ui.panels.weights import WeightsView

    app = QApplication.instance() or QApplication([])
    store = InspectorStore()
    view = WeightsView(store, [0.0])
    view.resize(800, 500)
    view.show()
    app.processEvents()
    rng = np.random.default_rng(0)

    def sample(step: int) -> WeightStats:
        variables = []
        for i in range(args.rows):
            k = rng.normal(0, 0.2, 4096)
            counts = tuple(int(c) for c in np.histogram(k, 30)[0])
            variables.append(
                VariableStats(
                    f"model/dense_{i}/kernel", (64, 64), float(k.mean()), float(k.std()),
                    float(k.min()), float(k.max()), float(np.linalg.norm(k)), 0.0, counts,
                )
            )  # fmt: skip
        return WeightStats(0, step, tuple(variables))

    in_view = variable_rows.in_scroll_view
    ways = {
        "every row": lambda widget, scroll: True,
        "in view": in_view,
        "in view again": in_view,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    step = 0
    for _ in range(5):  # warm-up: rows made, first paints
        step += 10
        store.ingest(sample(step))
        view.refresh()
        app.processEvents()
    for _ in range(args.samples):
        for name, test in ways.items():
            variable_rows.in_scroll_view = test
            step += 10
            store.ingest(sample(step))
            started = time.thread_time()
            view.refresh()
            app.processEvents()
            times[name].append(time.thread_time() - started)
    variable_rows.in_scroll_view = in_view
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; rows {len(view.rows)}")
    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    for name, ms in med.items():
        print(f"{name}: {ms:.1f} ms CPU per sample (median of {len(times[name])})")
    print(f"control: in view again / in view = {med['in view again'] / med['in view']:.3f}")
    print(f"rows: in view / every row = {med['in view'] / med['every row']:.3f}")


if __name__ == "__main__":
    main()
