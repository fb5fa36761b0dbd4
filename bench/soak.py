"""Endurance soak: faults survived and a monitor that changes nothing (issue 19).

1. Checkpoint kill rounds: a run saves a ~50 MB checkpoint after every step in
   a worker; the worker is SIGKILLed at a random moment inside a save (right
   after a step's hook, while that step's save runs); the folder must restore
   (its latest checkpoint and every one its index lists load into a fresh
   model). One launcher keeps a warm spare, so rounds do not wait for imports.
2. Bit-exact: tests/scripts/bit_exact.py (seeded, op-deterministic: Dense,
   BatchNormalization, Dropout, a layer writing a variable in ``call``, a
   custom ``train_step`` and a custom GradientTape loop) under plain Python and
   in a worker with everything on (inspector every step, recording, NaN guard,
   a checkpoint every 2 steps): every saved array compared byte for byte.
3. Window runs: the real window (offscreen, this file in a process
   of its own) runs a 2-step fit ``--window-runs`` times, recording each run; its
   resident memory after each run, and the slope of a least-squares line through
   the runs after the first 10 (the first ones fill caches and pools).

    python bench/soak.py [--rounds 50] [--window-runs 100] [--worker-steps 10000000]
                         [--no-bit-exact]

4. Worker memory: ``monitor.log`` in a loop as fast as Python goes, ``--worker-steps``
   steps (``bench/soak_worker.py``): the worker's peak RSS above its baseline.

Prints four ``soak:`` lines. ``--rounds 0``, ``--window-runs 0`` or
``--worker-steps 0`` skips that part.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

from tests.e2e.checkpoint_kill import (  # noqa: E402
    kill_during_a_save,
    left_partial,
    restores,
    write_saver,
)
from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import RunEnded  # noqa: E402
from tfstudio.core.options import RunOptions  # noqa: E402
from tfstudio.core.process import ProcessLauncher  # noqa: E402

BIT_EXACT = ROOT / "tests" / "scripts" / "bit_exact.py"
WARM_RUNS = 10  # runs left out of the slope: caches, pools and the runs list settle
TINY_SCRIPT = """\
import numpy as np
import keras

x = np.zeros((8, 2), "float32")
y = np.ones((8, 1), "float32")
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
print("two steps done")
"""
SETTLE_S = 0.5  # after a run ends: the last frames, the runs list, the previous run read


def window_runs(runs: int, work: Path) -> dict:
    """Run the window ``runs`` times in a process of its own; its RSS after each run."""
    out = work / "window-runs.json"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    subprocess.run(
        [sys.executable, __file__, "--window-runs", str(runs), "--window-child", str(out)],
        cwd=work,
        env=env,
        check=True,
    )
    return json.loads(out.read_text())


def rss_mb() -> float:
    """This process's resident memory in MB (Linux: /proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_counts(window: object) -> dict[str, int]:
    """How many of the things that used to pile up run after run are alive now."""
    from PySide6.QtCore import QObject

    from tfstudio.core.run_store import RunStore

    stores = sum(isinstance(o, RunStore) for o in gc.get_objects())
    return {
        "run_stores": stores,
        "pinned_runs": len(window.runs.pinned),
        "console_folds": len(window.console.folds),
        "console_blocks": window.console.view.document().blockCount(),
        "qobjects": len(window.findChildren(QObject)),
    }


def run_many(runs: int, work: Path) -> dict:
    """The window child: a 2-step fit run ``runs`` times in one window, a warm spare kept
    (as the app keeps one); RSS after each run (settled, then a full collection: what
    stays) and what is alive at the end."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings
    from PySide6.QtWidgets import QApplication

    from tfstudio.ui.main_window import MainWindow

    script = work / "two_steps.py"
    script.write_text(TINY_SCRIPT)
    app = QApplication.instance() or QApplication([])
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    window = MainWindow(channel, launcher, QSettings(os.devnull, QSettings.Format.IniFormat))
    window.run_options = dataclasses.replace(window.run_options, logdir=str(work / "w"))
    window.show()
    if not window.open_script(str(script)):
        raise SystemExit(f"cannot open {script}: {window.console.text()[-500:]}")
    launcher.prepare()
    exits: list[int] = []
    rss: list[float] = []
    loop = QEventLoop()
    window.run_finished.connect(lambda _status, code: (exits.append(code), loop.quit()))
    started = time.perf_counter()
    try:
        for i in range(runs):
            if not window.run_script(()):
                raise SystemExit(f"run {i + 1} did not start: {window.console.text()[-500:]}")
            loop.exec()
            settle_until = time.monotonic() + SETTLE_S
            while time.monotonic() < settle_until:
                app.processEvents()
                time.sleep(0.02)
            gc.collect()
            rss.append(rss_mb())
            print(f"window run {i + 1}/{runs}: rss {rss[-1]:.1f} MB", flush=True)
        live = live_counts(window)
    finally:
        launcher.shutdown()
        window.bridge.stop()
        window.close()
    return {"rss_mb": rss, "exits": exits, "seconds": time.perf_counter() - started, "live": live}


def growth_per_run(rss_mb: list[float], skip: int = WARM_RUNS) -> float:
    """Least-squares slope (MB a run) of RSS over the runs after the first ``skip``."""
    import numpy as np

    ys = np.asarray(rss_mb[skip:], dtype=float)
    if len(ys) < 2:
        return float("nan")
    xs = np.arange(skip + 1, skip + 1 + len(ys), dtype=float)
    return float(np.polyfit(xs, ys, 1)[0])


def checkpoint_kill_rounds(rounds: int, work: Path, seed: int) -> tuple[int, int, float]:
    """Kill ``rounds`` workers inside a save; returns (restorable, killed inside a save, s)."""
    script = write_saver(work)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    launcher.prepare()
    rng = random.Random(seed)
    restorable = inside = 0
    started = time.perf_counter()
    try:
        for i in range(rounds):
            folder = work / f"checkpoints-{i}"
            saves = kill_during_a_save(launcher, channel, script, folder, rng)
            partial = left_partial(folder)
            ok, detail = restores(folder, script)
            restorable += ok
            inside += partial
            print(
                f"round {i + 1}/{rounds}: {len(saves)} saves, "
                f"{'inside a save' if partial else 'between saves'}, "
                f"{'restorable' if ok else 'NOT restorable'} ({detail})",
                flush=True,
            )
    finally:
        launcher.shutdown()
    return restorable, inside, time.perf_counter() - started


def bit_exact(work: Path) -> tuple[bool, str]:
    """Plain Python vs a worker with everything on: the same bytes in every saved array?"""
    import numpy as np

    env = {k: v for k, v in os.environ.items() if not k.startswith("TFSTUDIO")}
    plain = subprocess.run(
        [sys.executable, str(BIT_EXACT), str(work / "plain.npz")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if plain.returncode != 0:
        return False, f"plain Python failed: {plain.stderr[-2000:]}"
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    options = RunOptions(
        logdir=str(work / "runs"),
        record=True,
        inspector=True,
        sample_every=1,
        checkpoint_every=2,
        checkpoint_dir=str(work / "bit-exact-checkpoints"),
        on_nan="stop",
    )
    try:
        launcher.start(str(BIT_EXACT), (str(work / "studio.npz"),), options)
        ended = None
        while ended is None:
            ended = next((e for e in channel.drain() if isinstance(e, RunEnded)), None)
            time.sleep(0.02)
    finally:
        launcher.shutdown()
    if ended.status != "finished":
        return False, f"under tfstudio: {ended.summary()}"
    want, got = np.load(work / "plain.npz"), np.load(work / "studio.npz")
    if sorted(want.files) != sorted(got.files):
        return False, "the scripts saved different arrays"
    different = [k for k in want.files if want[k].tobytes() != got[k].tobytes()]
    if different:
        return False, "differ: " + ", ".join(different)
    return True, f"{len(want.files)} arrays equal byte for byte"


def worker_memory(steps: int, rate: float) -> dict:
    """bench/soak_worker.py's figures for a loop of ``steps`` steps at ``rate`` steps/s."""
    sys.path.insert(0, str(ROOT / "bench"))
    from soak_worker import run

    return run(steps, rate)


def main() -> None:
    """Run the soak and print the ``soak:`` lines."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=50, help="checkpoint kill rounds (default 50)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--window-runs", type=int, default=100, help="runs in one window (default 100; 0: skip)"
    )
    p.add_argument("--no-bit-exact", action="store_true", help="skip the bit-exact comparison")
    p.add_argument(
        "--worker-steps",
        type=int,
        default=10_000_000,
        help="steps of the fast monitor.log loop (default 10,000,000; 0: skip)",
    )
    p.add_argument("--worker-rate", type=float, default=100_000, help="its steps/s (0: unpaced)")
    p.add_argument("--window-child", help=argparse.SUPPRESS)  # the window runs' own process
    ns = p.parse_args()
    if ns.window_child:
        result = run_many(ns.window_runs, Path(ns.window_child).parent)
        Path(ns.window_child).write_text(json.dumps(result))
        return
    lines = []
    with tempfile.TemporaryDirectory(prefix="tfstudio-soak-") as tmp:
        work = Path(tmp)
        if ns.window_runs > 0:
            window = window_runs(ns.window_runs, work)
            rss = window["rss_mb"]
            slope = growth_per_run(rss)
            failed = sum(code != 0 for code in window["exits"])
            at = min(WARM_RUNS, len(rss))
            print(
                f"window runs: {len(rss)} in {window['seconds']:.0f} s "
                f"({window['seconds'] / max(len(rss), 1):.1f} s a run, {failed} not exit 0); "
                f"rss at run {at} {rss[at - 1]:.1f} MB, at run {len(rss)} {rss[-1]:.1f} MB; "
                f"alive at the end: {window['live']}",
                flush=True,
            )
            lines.append(f"soak: window rss growth per run MB = {slope:.3f} over {len(rss)} runs")
        else:
            lines.append("soak: window rss growth per run MB = not measured (--window-runs 0)")
        if ns.worker_steps > 0:
            out = worker_memory(ns.worker_steps, ns.worker_rate)
            print(
                f"worker: rss {out['base']:.0f} MB at step 20000, peak {out['peak']:.0f} MB; "
                f"the viewer saw step {out['store_steps']}, "
                f"{out['coalesced_blocks']} blocks coalesced for it; {out['wall']:.0f} s",
                flush=True,
            )
            lines.append(
                f"soak: worker peak rss above baseline MB = {out['peak'] - out['base']:.0f} "
                f"at {out['rate']:.0f} steps/s over {ns.worker_steps} steps"
            )
        else:
            lines.append("soak: worker peak rss above baseline MB = not measured (skipped)")
        if ns.rounds > 0:
            restorable, inside, seconds = checkpoint_kill_rounds(ns.rounds, work, ns.seed)
            print(
                f"checkpoint kill rounds: {inside}/{ns.rounds} killed inside a save, "
                f"{seconds:.0f} s"
            )
            lines.append(f"soak: checkpoint kill rounds restorable = {restorable}/{ns.rounds}")
        if not ns.no_bit_exact:
            same, detail = bit_exact(work)
            print(f"bit-exact: {detail}", flush=True)
            lines.append(f"soak: bit-exact with everything on = {'yes' if same else 'no'}")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
