"""Where the worker's helper threads spend their CPU per training step, sink by sink.

A monitored fit of the small MLP runs alone with the worker side of
``bench/overhead.py`` (pump, live advisor, recorder, the pipe to a viewer process).
After ``--warm`` steps, over ``--steps`` more, it reports per step: the CPU of the pump
thread and of the pipe's sender thread, and the pump's CPU in each part (waiting for
commands, draining the channel, the advisor, the pipe's write (a batch the socket takes
whole is sent there, on the pump's thread; else it is queued for the sender thread), the
recorder and, within it, encoding the steps and writing ``run.json``), each timed with
``time.thread_time`` around the call; and both threads' CPU a second of the stretch
(steps/s jump between runs on a shared VM: the per-second figure is the one to compare).
Then, for comparison, what the recorder's encoding of the same kind of steps costs on
an idle core (``--encode-rows`` rows).

    python bench/pump_split.py [--interval 0.05] [--steps 3000] [--inspector]

To measure an older tree, copy this file into that checkout's ``bench/`` and run it
there (parts that tree does not have are left out).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from interleave import thread_cpu  # noqa: E402
from overhead import WorkerSide, machine_line, twin  # noqa: E402

PARTS: dict[str, float] = {}  # part -> thread CPU seconds
CALLS: dict[str, int] = {}  # part -> calls timed


def timed(owner: Any, name: str, part: str | Callable[[tuple], str | None]) -> None:
    """Wrap ``owner.name`` so its thread CPU adds up under ``part`` in :data:`PARTS` and
    its calls in :data:`CALLS` (absent: not timed, e.g. in an older tree run with this
    script). ``part`` may be a function of the call's arguments giving the name (None:
    this call is not counted)."""
    original = getattr(owner, name, None)
    if original is None:
        return

    def call(*args: Any, **kwargs: Any) -> Any:
        key = part(args) if callable(part) else part
        t = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            if key is not None:
                PARTS[key] = PARTS.get(key, 0.0) + time.thread_time() - t
                CALLS[key] = CALLS.get(key, 0) + 1

    setattr(owner, name, call)


def encode_alone(rows: int) -> float:
    """Microseconds a row to encode and write ``rows`` steps (blocks of 35) on an idle core."""
    from tfstudio.core.channel import StepRows
    from tfstudio.engine.recorder import Recorder

    with tempfile.TemporaryDirectory() as folder:
        rec = Recorder(folder)
        blocks = []
        for start in range(0, rows, 35):
            block = [
                (0, g, 0, g, 1, g * 1e-3, {"loss": 1.0 / g, "acc": 0.5}, {"loss": 1.0, "acc": 0.5})
                for g in range(start + 1, min(start + 36, rows + 1))
            ]
            blocks += StepRows(block).columns()
        rec.write(blocks[:1])
        rec.flush()  # tags described: the rest takes the usual path
        t = time.perf_counter()
        rec.write(blocks[1:])
        try:
            rec.flush(info=False)
        except TypeError:  # an older tree's recorder: run.json every flush
            rec.flush()
        took = time.perf_counter() - t
        rec.close()
    return took / max(rows - 35, 1) * 1e6


def main() -> None:
    """Run the fit, then print the split and the idle-core encoding cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=None, help="pump beat (s)")
    parser.add_argument("--warm", type=int, default=50)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--encode-rows", type=int, default=2800)
    parser.add_argument(
        "--inspector", action="store_true", help="the inspector on, at its default budget"
    )
    args = parser.parse_args()

    import tfstudio.core.channel as channel
    import tfstudio.engine.advisor_live as advisor
    import tfstudio.engine.recorder as recorder
    import tfstudio.worker as worker
    from tfstudio.core.options import RunOptions

    timed(channel.Channel, "drain", "drain")
    timed(advisor.AdviceSink, "write", "advisor")
    timed(worker.PipeSink, "write", "pipe (sent whole on the pump's thread, or queued)")
    timed(worker.WorkerPump, "_receive", "commands wait")
    timed(recorder.Recorder, "write", "recorder")
    timed(recorder.Recorder, "_write_pending", "recorder: encoding steps")
    timed(recorder, "write_run_json", "recorder: run.json")

    side = WorkerSide(RunOptions(inspector=args.inspector))
    if args.interval is not None:
        side.pump.interval = args.interval
    fit = side.fit(*twin(), epochs=-(-(args.warm + args.steps + 1) // 100))
    for _ in range(args.warm):
        next(fit)
    PARTS.clear()
    pump0, pipe0 = thread_cpu(side.pump), thread_cpu(side.pump.pipe._thread)  # noqa: SLF001
    t0 = time.perf_counter()
    for _ in range(args.steps):
        next(fit)
    wall = time.perf_counter() - t0
    pump = thread_cpu(side.pump) - pump0
    pipe = thread_cpu(side.pump.pipe._thread) - pipe0  # noqa: SLF001
    n = args.steps
    print(machine_line())
    print(
        f"{n / wall:,.0f} steps/s, pump beat {side.pump.interval * 1e3:.0f} ms: "
        f"pump {pump / n * 1e6:.1f} + pipe sender {pipe / n * 1e6:.1f} us/step "
        f"({(pump + pipe) / wall * 1e3:.1f} ms a second: the figure to compare across runs "
        "whose steps/s differ)"
    )
    for part, seconds in PARTS.items():
        print(f"  {part}: {seconds / n * 1e6:.1f} us/step")
    print(f"encoding steps on an idle core: {encode_alone(args.encode_rows):.2f} us a row")
    side.viewer.proc.kill()
    os._exit(0)  # the stepped fit and the viewer are left as they are


if __name__ == "__main__":
    main()
