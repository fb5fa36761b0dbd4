"""Where a monitored graph loop's helper threads spend their CPU, part by part, a second.

The small MLP's ``tf.function`` train step of ``bench/loop_overhead.py``, two monitored
traces called in turn for ``--seconds`` with the worker side of ``bench/overhead.py``
(pump, live advisor, recorder, the pipe to a viewer process pulling 14 times a second).
Each part is timed with ``time.thread_time`` around its call, on whatever thread runs it
(``pump_split.timed``):

- the reader thread (``engine/loops/ring.py``): its beats (``sync``: reading the graph
  buffers, the ``ReadVariableOp`` reads within it, emitting the steps), its ticks (the
  quiet stretches' ends) and, the rest of its CPU, its wakes;
- the pump: receiving the viewer's pulls, and each sink's ``write``, split by whether the
  beat had events (a beat with none still lets the recorder flush on its clock), with
  the recorder's encoding and ``run.json`` within it.

Prints steps/s, both threads' CPU a second and per step, then one line per part: CPU a
second, calls a second, CPU a call. Per second is the figure to compare across runs
(steps/s jump between runs on a shared VM).

    python bench/loop_helpers.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from interleave import thread_cpu  # noqa: E402
from loop_overhead import mlp_step, traces  # noqa: E402
from overhead import WorkerSide  # noqa: E402
from pump_split import CALLS, PARTS, timed  # noqa: E402


def on_reader(part: str) -> Callable[[tuple], str | None]:
    """``part`` when called on the loop reader's thread, else not counted."""
    return lambda _args: part if threading.current_thread().name == "tfstudio-loop-reader" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    import tfstudio.engine.probes.values as values
    import tfstudio.engine.recorder as recorder
    import tfstudio.worker as worker
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor

    timed(values, "read_handle", on_reader("reader: ReadVariableOp"))
    timed(recorder.Recorder, "_write_pending", "pump: recorder: encoding steps")
    timed(recorder, "write_run_json", "pump: recorder: run.json")
    timed(worker.WorkerPump, "_receive", "pump: receiving pulls")
    x, y, step = mlp_step()
    side = WorkerSide(RunOptions(inspector=False))
    for sink in side.pump.sinks:
        label = f"pump: {type(sink).__name__}"
        timed(sink, "write", lambda a, label=label: f"{label} ({'events' if a[0] else 'none'})")
    with LoopInterceptor(side.monitor) as interceptor:
        fns = traces(step, x, y, 2)
        for k in range(40):  # the norm twins' first round traces them: untimed
            fns[k % 2](x, y)
        reader = interceptor.reader
        timed(reader, "_sync", "reader: beat (read + emit)")
        timed(reader, "_tick", "reader: tick")
        time.sleep(0.3)
        PARTS.clear()
        CALLS.clear()
        thread = reader.thread
        read0, pump0 = thread_cpu(thread), side.pump_cpu()
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < args.seconds:
            fns[n % 2](x, y)
            n += 1
        fns[0](x, y).numpy()
        seconds = time.perf_counter() - t0
        read_s, pump_s = thread_cpu(thread) - read0, side.pump_cpu() - pump0
        cpu, calls = dict(PARTS), dict(CALLS)
    side.close()
    print(
        f"{n / seconds:,.0f} steps/s; reader {1e3 * read_s / seconds:.2f} ms a second "
        f"({1e6 * read_s / n:.2f} us/step); pump + pipe sender {1e3 * pump_s / seconds:.2f} "
        f"ms a second ({1e6 * pump_s / n:.2f} us/step)"
    )
    for part in sorted(cpu):
        print(
            f"  {part:42s} {1e3 * cpu[part] / seconds:6.2f} ms a second, "
            f"{calls[part] / seconds:5.1f} calls a second, "
            f"{1e6 * cpu[part] / calls[part]:6.0f} us a call"
        )


if __name__ == "__main__":
    main()
