"""Cost of recording a run, and how far a follower lags behind the writer.

1. Recording cost: steps/s of a small MLP ``fit``, monitored (interceptor +
   StudioCallback + a pump thread draining the channel every 20 ms, as the
   worker's pump does) with and without the pump also handing each batch to
   ``Recorder.write``. Both in this one process, interleaved in short adjacent
   pairs; R is the median of the pairs' ratios (see bench/overhead.py for why).
2. Attach lag: a subprocess records a step every 10 ms with the real Recorder
   (flush every 0.5 s); this process follows the folder as the runs panel does
   (``RunReader.update`` every 0.5 s). Lag = when a point was read minus when
   the writer emitted it (same machine clock).

    python bench/recording.py [--rounds 30] [--steps 400] [--follow-seconds 20] [--lag-only]

Ends with two lines:
``recording: recorded/monitored = R`` and ``attach lag: median X s, p99 Y s``
(``--lag-only``: the second only). The runs panel's follow test
(tests/ui/test_runs_panel.py) checks that the points arrive, in order; this is
where how late they arrive is measured.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import sys, time
from tfstudio.core.events import StepEnded
from tfstudio.engine.recorder import Recorder
rec = Recorder(sys.argv[1])
print("ready", flush=True)
base = float(sys.argv[3])  # values are seconds since base: float32 keeps ~10 us there
end = time.time() + float(sys.argv[2])
i = 0
while time.time() < end:
    i += 1
    rec.write([StepEnded(0, i, 0, i, 1, {"loss": time.time() - base}, {}, 0.0)])
    time.sleep(0.01)
rec.close(None)
"""


def recording_cost(rounds: int, steps: int, batch: int) -> float:
    """Median ratio of steps/s, recorded over not recorded (both monitored)."""
    import keras
    import tensorflow as tf
    from bench_model import mlp_and_data

    from tfstudio.core.channel import Channel
    from tfstudio.engine.instrument import FitInterceptor
    from tfstudio.engine.monitor import RunMonitor
    from tfstudio.engine.recorder import Recorder

    model, data = mlp_and_data(batch)
    epochs = 2
    per_epoch = steps // epochs
    tmp = Path(tempfile.mkdtemp(prefix="tfstudio-bench-runs-"))

    write_time = [0.0, 0]  # seconds in Recorder.write, steps recorded
    cpu_per_step: dict[bool, list[float]] = {False: [], True: []}

    def rate(record: bool) -> float:
        channel = Channel()
        recorder = Recorder.for_script(tmp, "bench.py") if record else None
        done = threading.Event()

        def pump() -> None:  # the worker's pump: drain every 20 ms, send, record
            while not done.is_set():
                batch_ = channel.drain()
                if recorder is not None:
                    t = time.thread_time()
                    recorder.write(batch_)
                    write_time[0] += time.thread_time() - t
                    write_time[1] += len(batch_)
                time.sleep(0.02)
            if recorder is not None:
                recorder.write(channel.drain())

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        start, cpu0 = time.perf_counter(), time.process_time()
        with FitInterceptor(RunMonitor(channel)):
            model.fit(data, epochs=epochs, steps_per_epoch=per_epoch, verbose=0)
        took = time.perf_counter() - start
        done.set()
        thread.join()
        cpu_per_step[record].append((time.process_time() - cpu0) / (epochs * per_epoch))
        if recorder is not None:
            recorder.close(None)
        return epochs * per_epoch / took

    rate(False)  # warm-up
    rate(True)
    write_time[:] = [0.0, 0]
    cpu_per_step[False].clear()
    cpu_per_step[True].clear()
    ratios = []
    bare_rates = []
    for r in range(rounds):
        if r % 2 == 0:
            off, on = rate(False), rate(True)
        else:
            on, off = rate(True), rate(False)
        ratios.append(on / off)
        bare_rates.append(off)
        print(
            f"round {r + 1:2d}: not recorded {off:7.1f} steps/s  recorded {on:7.1f} steps/s", end=""
        )
        print(f"  ratio {on / off:.4f}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; "
        f"TF {tf.__version__}, Keras {keras.__version__}; MLP 32-128-128-10, batch {batch}, "
        f"{epochs * per_epoch} steps per fit"
    )
    per_step = write_time[0] / max(write_time[1], 1)
    step_time = 1.0 / statistics.median(bare_rates)
    print(
        f"Recorder.write CPU time per event (pump thread): {per_step * 1e6:.1f} us = "
        f"{100 * per_step / step_time:.2f}% of a median unrecorded step ({step_time * 1e3:.2f} ms)"
    )
    cpu_off = statistics.median(cpu_per_step[False]) * 1e6
    cpu_on = statistics.median(cpu_per_step[True]) * 1e6
    print(
        f"process CPU time per step (median, all threads): not recorded {cpu_off:.0f} us, "
        f"recorded {cpu_on:.0f} us ({100 * (cpu_on / cpu_off - 1):+.1f}%)"
    )
    q = statistics.quantiles(ratios, n=4)
    print(f"ratio quartiles: {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}")
    return statistics.median(ratios)


def attach_lag(seconds: float) -> list[float]:
    """Lags (s) of every point a 0.5 s follower read from a folder a subprocess writes."""
    from tfstudio.core.runs import RunReader

    run_dir = Path(tempfile.mkdtemp(prefix="tfstudio-bench-attach-")) / "remote-run"
    base = time.time()
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="-1")
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(run_dir), str(seconds), str(base)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline().strip() == "ready"
    reader = RunReader(run_dir)
    lags: list[float] = []
    seen = 0
    while proc.poll() is None:
        time.sleep(0.5)
        reader.update()
        now = time.time()
        curve = reader.scalars.get("step/loss")
        if curve is not None:
            lags += [now - base - v for v in curve.values[seen:]]
            seen = len(curve.values)
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--follow-seconds", type=float, default=20.0)
    parser.add_argument(
        "--lag-only", action="store_true", help="measure the attach lag only (about half a minute)"
    )
    args = parser.parse_args()
    lags = attach_lag(args.follow_seconds)  # first: the fit's threads are not running yet
    r = None if args.lag_only else recording_cost(args.rounds, args.steps, args.batch)
    lags.sort()
    p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
    print(f"attach: {len(lags)} points followed over {args.follow_seconds:.0f} s")
    if r is not None:
        print(f"recording: recorded/monitored = {r:.4f}")
    print(f"attach lag: median {statistics.median(lags):.2f} s, p99 {p99:.2f} s")


if __name__ == "__main__":
    main()
