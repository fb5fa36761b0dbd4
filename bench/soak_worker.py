"""The worker's memory at any step rate: 10M steps as fast as Python goes (issue 19).

A script calls ``tfstudio.monitor.log(step, loss=..., acc=...)`` in a loop, the
fastest a script can report steps, in a worker started as the window starts it
(``ProcessLauncher``), recording on. This process is the viewer: it drains the
run's events into a :class:`RunStore`, as the window's metrics view does. The
worker's resident memory is sampled from ``/proc`` every 50 ms; the baseline is
its RSS once the script has made its first 20,000 steps (imports done, the run's
segment announced, the first blocks recorded).

    python bench/soak_worker.py [--steps 10000000] [--rate 100000]

The loop is paced to ``--rate`` steps/s (the issue's 100k); ``--rate 0`` lets it run
as fast as Python goes. Ends
``soak: worker peak rss above baseline MB = Y at S steps/s over N steps``
(target Y <= 100 at 100k steps/s over 10M steps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import ConsoleOutput, RunEnded, StepEnded  # noqa: E402
from tfstudio.core.options import RunOptions  # noqa: E402
from tfstudio.core.process import ProcessLauncher  # noqa: E402
from tfstudio.core.run_store import RunStore  # noqa: E402

try:  # absent before steps travelled as columns (this file also runs on older trees)
    from tfstudio.core.events import StepColumns  # noqa: E402
except ImportError:
    StepColumns = None  # type: ignore[assignment,misc]

SCRIPT = """\
import sys
import time

from tfstudio import monitor

n = int(sys.argv[1])
rate = float(sys.argv[2])  # steps a second at most (0: as fast as Python goes)
log = monitor.log
t0 = time.perf_counter()
for i in range(1, n + 1):
    log(i, loss=1.0 / i, acc=(i % 100) / 100.0)
    if rate and i % 1000 == 0:
        ahead = i / rate - (time.perf_counter() - t0)
        if ahead > 0:
            time.sleep(ahead)
print(f"LOOP {n} steps in {time.perf_counter() - t0:.3f} s", flush=True)
"""

BASELINE_STEPS = 20_000


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run(steps: int, rate: float = 0.0) -> dict:
    """Run the loop in a worker; the viewer's store and the worker's RSS over time."""
    with tempfile.TemporaryDirectory(prefix="tfstudio-soak-worker-") as tmp:
        script = Path(tmp) / "log_loop.py"
        script.write_text(SCRIPT)
        channel = Channel()
        launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
        store = RunStore("soak", capacity=20_000)
        seen = {"steps": 0, "coalesced": 0, "console": ""}
        ended: list[RunEnded] = []
        samples: list[tuple[float, int, float]] = []  # (time, steps seen, rss)
        launcher.start(
            str(script), (str(steps), str(rate)), RunOptions(logdir=str(Path(tmp) / "runs"))
        )
        pid = None
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                if pid is not None:
                    mb = rss_mb(pid)
                    if mb is not None:
                        samples.append((time.perf_counter(), seen["steps"], mb))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        try:
            while not ended:
                pid = pid or launcher.pid()
                events = channel.drain()
                for e in events:
                    if StepColumns is not None and type(e) is StepColumns:
                        seen["steps"] = int(e.global_step[-1])
                        seen["coalesced"] += bool(e.coalesced)
                    elif type(e) is StepEnded:
                        seen["steps"] = e.global_step
                    elif type(e) is ConsoleOutput:
                        seen["console"] += e.text
                    elif type(e) is RunEnded:
                        ended.append(e)
                store.add(events)
                time.sleep(0.02)
        finally:
            stop.set()
            launcher.shutdown()
        wall = time.perf_counter() - t0
    base = next((mb for _, n, mb in samples if n >= BASELINE_STEPS), None)
    peak = max((mb for _, n, mb in samples if n >= BASELINE_STEPS), default=None)
    loop_line = next((ln for ln in seen["console"].splitlines() if ln.startswith("LOOP")), "")
    loop_s = float(loop_line.split(" in ")[1].split()[0]) if loop_line else wall
    return {
        "ended": ended[0],
        "base": base,
        "peak": peak,
        "rate": steps / loop_s,
        "store_steps": store.global_step,
        "coalesced_blocks": seen["coalesced"],
        "samples": len(samples),
        "trace": [
            next((round(mb) for _, n, mb in samples if n >= steps * k // 10), None)
            for k in range(1, 11)
        ],
        "wall": wall,
    }


def main() -> None:
    """Print the worker-memory ``soak:`` line (``--json PATH``: also the figures, for step_path)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10_000_000)
    p.add_argument(
        "--rate", type=float, default=100_000, help="steps/s at most (0: as fast as it goes)"
    )
    p.add_argument("--json", help="write the figures to this file too")
    ns = p.parse_args()
    out = run(ns.steps, ns.rate)
    if ns.json:
        keep = ("base", "peak", "rate", "store_steps", "coalesced_blocks", "wall")
        Path(ns.json).write_text(json.dumps({k: out[k] for k in keep}))
    ended = out["ended"]
    print(
        f"run: {ended.status}, {ended.global_step} steps, {out['wall']:.0f} s wall; "
        f"viewer store at step {out['store_steps']}, "
        f"{out['coalesced_blocks']} coalesced blocks reached the viewer; "
        f"worker rss baseline {out['base']:.0f} MB, peak {out['peak']:.0f} MB "
        f"({out['samples']} samples; at each tenth of the steps: {out['trace']})",
        flush=True,
    )
    above = out["peak"] - out["base"]
    print(
        f"soak: worker peak rss above baseline MB = {above:.0f} at {out['rate']:.0f} steps/s "
        f"over {ns.steps} steps"
    )


if __name__ == "__main__":
    main()
