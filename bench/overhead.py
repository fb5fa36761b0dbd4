"""Per-step cost of tfstudio's monitoring: steps/s of a small MLP `fit`, bare vs monitored.

Both run in this one process, interleaved in short adjacent pairs (bare then
monitored, monitored then bare, ...) on the same model, data and thread, and R is
the median of the pairs' ratios: on a shared 2-core VM the speed of TF's thread
pools jumps between regimes for seconds at a time, and short adjacent pairs
mostly see the same regime. The monitored fit goes the real way from a worker to
its viewer: the interceptor and StudioCallback emit events, the worker's pump
thread drains them every 20 ms, pickles them and sends them over a socket pair,
and a viewer in another process (as the window or ``tfstudio run`` is) reads and
unpickles every batch and counts the steps. The inspector is off here: its sampled
probes have their own benchmark (``--inspector``); this one is the per-step path
(callback, controls' step boundary) and the stream from worker to viewer.

    python bench/overhead.py [--rounds 40] [--steps 400]

Ends with one line: ``overhead: monitored/bare = R`` (R: median ratio of steps/s).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


VIEWER = """
import pickle, sys
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
steps = 0
while True:
    try:
        kind, payload = conn.recv()
    except EOFError:
        break
    for e in payload:
        name = type(e).__name__
        steps += len(e) if name == "StepColumns" else name == "StepEnded"
print(steps)
"""


class Viewer:
    """A viewer process at the other end of a socket pair, counting the steps it reads."""

    def __init__(self) -> None:
        import socket
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        mine, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", VIEWER, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdout=subprocess.PIPE,
            text=True,
        )
        theirs.close()
        self.conn = Connection(mine.detach())

    def close(self) -> int:
        """End the stream; the number of step events the viewer read."""
        self.conn.close()
        out, _ = self.proc.communicate(timeout=60)
        return int(out.strip())


def main() -> None:
    if "--loop" in sys.argv[1:]:  # custom training loops: bench/loop_overhead.py
        from loop_overhead import main as loop_main

        loop_main([a for a in sys.argv[1:] if a != "--loop"])
        return
    if "--inspector" in sys.argv[1:]:  # the inspector's benchmark lives in its own file
        from inspector_overhead import main as inspector_main

        inspector_main([a for a in sys.argv[1:] if a != "--inspector"])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="pairs of fits to compare")
    parser.add_argument("--steps", type=int, default=400, help="training steps per fit")
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    import keras
    import tensorflow as tf
    from bench_model import mlp_and_data

    from tfstudio.core.channel import Channel
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.instrument import FitInterceptor
    from tfstudio.engine.monitor import RunMonitor
    from tfstudio.worker import WorkerPump

    model, data = mlp_and_data(args.batch)
    epochs = 2
    steps_per_epoch = args.steps // epochs

    cpu_per_step: dict[str, list[float]] = {"bare": [], "monitored": []}

    def fit_rate(kind: str = "bare") -> float:
        steps = epochs * steps_per_epoch
        start, cpu0 = time.perf_counter(), time.process_time()
        model.fit(data, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0)
        cpu_per_step[kind].append((time.process_time() - cpu0) / steps)
        return steps / (time.perf_counter() - start)

    viewer = Viewer()
    pump_time = [0.0]
    # The per-step path and the worker-to-viewer stream; the inspector's sampled probes
    # are measured on their own by --inspector (bench/inspector_overhead.py).
    options = RunOptions(inspector=False)

    def monitored_rate() -> float:
        channel = Channel()
        pump = WorkerPump(viewer.conn, channel, on_stop=lambda: None)
        flush = pump.flush

        def timed_flush() -> None:  # the pump's own time, per step below
            t = time.thread_time()
            flush()
            pump_time[0] += time.thread_time() - t

        pump.flush = timed_flush  # type: ignore[method-assign]
        pump.start()
        with FitInterceptor(RunMonitor(channel, options=options)):
            rate = fit_rate("monitored")
        pump.close()
        return rate

    fit_rate()  # warm-up: tracing, allocator
    monitored_rate()
    for samples in cpu_per_step.values():
        samples.clear()
    bare: list[float] = []
    monitored: list[float] = []
    ratios: list[float] = []
    for r in range(args.rounds):
        if r % 2 == 0:
            b = fit_rate()
            m = monitored_rate()
        else:
            m = monitored_rate()
            b = fit_rate()
        bare.append(b)
        monitored.append(m)
        ratios.append(m / b)
        print(f"round {r + 1:2d}: bare {b:7.1f} steps/s  monitored {m:7.1f} steps/s", end="")
        print(f"  ratio {m / b:.4f}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; "
        f"TF {tf.__version__}, Keras {keras.__version__}; "
        f"MLP 32-128-128-10, batch {args.batch}, {epochs * steps_per_epoch} steps per fit"
    )
    # CPU time per step (all threads) does not wait on the VM's wake-ups.
    cpu_b = statistics.median(cpu_per_step["bare"]) * 1e6
    cpu_m = statistics.median(cpu_per_step["monitored"]) * 1e6
    print(
        f"process CPU time per step (median): bare {cpu_b:.0f} us, monitored {cpu_m:.0f} us "
        f"({100 * (cpu_m / cpu_b - 1):+.1f}%, includes the consumer thread)"
    )
    # The hook's own time per step, measured apart (timing it adds a little cost).
    from tfstudio.engine.callback import StudioCallback

    hook = StudioCallback.on_train_batch_end
    spent = [0.0, 0]

    def timed_hook(self, batch, logs=None):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        hook(self, batch, logs)
        spent[0] += time.perf_counter() - t
        spent[1] += 1

    StudioCallback.on_train_batch_end = timed_hook
    pump_time[0] = 0.0
    try:
        for _ in range(3):
            monitored_rate()
    finally:
        StudioCallback.on_train_batch_end = hook
    per_step_us = spent[0] / spent[1] * 1e6
    pump_us = pump_time[0] / spent[1] * 1e6
    bare_step_us = 1e6 / statistics.median(bare)
    print(
        f"StudioCallback.on_train_batch_end: {per_step_us:.1f} us per step = "
        f"{100 * per_step_us / bare_step_us:.2f}% of a bare step ({bare_step_us:.0f} us)"
    )
    print(
        f"pump (drain, pickle, send; CPU time of its thread): {pump_us:.1f} us per step = "
        f"{100 * pump_us / bare_step_us:.2f}% of a bare step; hook + pump = "
        f"{100 * (per_step_us + pump_us) / bare_step_us:.2f}%"
    )
    received = viewer.close()
    expected = (1 + args.rounds + 3) * epochs * steps_per_epoch  # warm-up, pairs, timed
    assert received == expected, f"the viewer got {received} steps, expected {expected}"
    print(f"viewer process received all {received} step events")
    q = statistics.quantiles(ratios, n=4)
    print(
        f"median: bare {statistics.median(bare):.1f} steps/s, "
        f"monitored {statistics.median(monitored):.1f} steps/s; "
        f"ratio quartiles {q[0]:.4f} / {q[1]:.4f} / {q[2]:.4f} over {len(ratios)} pairs"
    )
    print(f"overhead: monitored/bare = {statistics.median(ratios):.4f}")


if __name__ == "__main__":
    main()
