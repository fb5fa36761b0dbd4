"""Per-step cost of tfstudio's monitoring of ``fit``: bare vs monitored twins, steps interleaved.

In one process, several blocks; each block builds three twins of the same small MLP
(seeded: same weights, same data): two **bare** (plain Keras, no tfstudio) and one
**monitored** the way a default run monitors a ``fit``: the interceptor's
``StudioCallback`` (steps, epochs, the controls' step boundary with the NaN guard's
``train_step`` wrapper), the worker's pump thread draining the channel every 50 ms
into the live advisor, the recorder (TensorBoard event files in a temporary folder)
and a socket pair to a viewer in another process (which unpickles every batch and
counts the steps, and asks for each batch 14 times a second, as the window does before
its redraws on 2 cores: ``PULL_HZ``). The inspector is off here (``--inspector``
measures it). No loop interceptor runs here: a real run's loop wrapper of
``tf.function`` calls is taken off while a fit runs, so a
monitored fit's steps are called as here.

Each twin's ``fit`` runs as a generator (``interleave.stepped_fit``: what Keras's
``fit`` does per step, with the fit's ``CallbackList``), so single steps of the three
can be called in a fresh random order every round, each call timed; R is the ratio of
the mean step times (steps/s). The monitored side is also charged the CPU time of the
pump thread and of the pipe's sender thread per step (on 2 cores it is taken from
training's), measured over a stretch
of monitored steps alone after the interleaved rounds. A control compares the two bare
twins the same way: how far from 1 two identical sides land (the method's resolution).

    python bench/overhead.py [--blocks 2] [--rounds 1500]
    python bench/overhead.py --inspector     (bench/inspector_overhead.py)
    python bench/overhead.py --loop          (bench/loop_overhead.py)

Ends with two lines: ``control: bare/bare = C`` and ``overhead: monitored/bare = R``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio

from interleave import Interleaved, OwnClock, stepped_fit, thread_cpu  # noqa: E402

STEPS_PER_EPOCH = 100
WARM_STEPS = 20  # untimed first steps of every twin: tracing, the first epoch's set-up

VIEWER = """
import pickle, sys, threading, time
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
hz = float(sys.argv[2])
def pull():  # as the window does before each redraw (its rate on 2 cores)
    while True:
        time.sleep(1 / hz)
        try:
            conn.send(("beat",))
        except OSError:
            return
if hz > 0:
    threading.Thread(target=pull, daemon=True).start()
steps = 0
while True:
    try:
        kind, payload = conn.recv()
    except (EOFError, OSError):  # a reset, not an EOF, when the worker closes on an unread pull
        break
    for e in payload:
        name = type(e).__name__
        steps += len(e) if name == "StepColumns" else name == "StepEnded"
print(steps)
"""


# The window asks the worker for a batch before each redraw (the worker's pump then beats
# when asked): at most LOW_REDRAW_HZ (14) a second on a 2-core machine. 0: a viewer that
# never asks (``tfstudio run``), the pump beats every 50 ms.
PULL_HZ = 14.0


class Viewer:
    """A viewer process at the other end of a socket pair, counting the steps it reads.

    Args:
        pull_hz: asks the worker for a batch this often, as the window does (0: never).
    """

    def __init__(self, pull_hz: float | None = None) -> None:
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        mine, theirs = socket.socketpair()
        hz = PULL_HZ if pull_hz is None else pull_hz
        self.proc = subprocess.Popen(
            [sys.executable, "-c", VIEWER, str(theirs.fileno()), str(hz)],
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


class WorkerSide:
    """What a worker runs beside a monitored ``fit``: monitor, pump, advisor, recorder, viewer.

    Args:
        options: the run's options (the inspector on or off).
    """

    def __init__(self, options: Any) -> None:
        import keras

        from tfstudio.core.channel import Channel
        from tfstudio.core.events import RunStarted
        from tfstudio.engine.advisor_live import AdviceSink, LiveAdvisor
        from tfstudio.engine.instrument import FitInterceptor
        from tfstudio.engine.monitor import RunMonitor
        from tfstudio.engine.recorder import PumpRecording, Recorder
        from tfstudio.worker import WorkerPump

        self.viewer = Viewer()
        self.channel = Channel()
        self.pump = WorkerPump(self.viewer.conn, self.channel, on_stop=lambda: None)
        self.monitor = RunMonitor(self.channel, options=options)
        self.monitor.flush = self.pump.flush
        advisor = LiveAdvisor(nan_guard=options.on_nan != "ignore")
        self.pump.add_sink(AdviceSink(advisor), first=True)
        self.logdir = tempfile.TemporaryDirectory(prefix="tfstudio-bench-")
        script = str(Path(__file__).resolve())
        recorder = Recorder.for_script(self.logdir.name, script)
        recorder.write([RunStarted(script, (script,), os.getcwd(), time.time(), os.getpid())])
        self.recording = PumpRecording(recorder, self.pump)
        self.pump.start()
        interceptor = FitInterceptor(self.monitor)
        interceptor._keras = keras  # wrap stepped_fit as FitInterceptor wraps Model.fit
        self._fit = interceptor._wrap(stepped_fit)
        self.steps = 0

    def fit(self, model: Any, data: Any, epochs: int) -> Any:
        """A monitored fit as a generator of steps (the interceptor adds its StudioCallback)."""
        return self._fit(model, data, epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH, verbose=0)

    def pump_cpu(self) -> float:
        """CPU seconds the pump thread and the pipe's sender thread have used so far."""
        return thread_cpu(self.pump) + thread_cpu(self.pump.pipe._thread)  # noqa: SLF001

    def close(self) -> int:
        """End the run's stream and record; the step events the viewer received."""
        self.recording.close(None)
        self.pump.close()
        received = self.viewer.close()
        self.logdir.cleanup()
        return received


def twin(seed: int = 0, batch: int = 64) -> tuple[Any, Any]:
    """The benchmark MLP and its data, seeded: every twin starts from the same weights."""
    import keras
    from bench_model import mlp_and_data

    keras.utils.set_random_seed(seed)
    return mlp_and_data(batch)


def steps_of(generator: Any) -> Any:
    """One step of a stepped fit per call."""

    def step() -> None:
        next(generator)

    return step


def finish(generator: Any) -> None:
    """Run a stepped fit to its end (its remaining steps, untimed)."""
    for _ in generator:
        pass


@dataclass
class Result:
    """The figures of one interleaved comparison, pooled over blocks."""

    bare: list[float] = field(default_factory=list)  # step times (s), both bare twins
    bare_a: list[float] = field(default_factory=list)
    bare_b: list[float] = field(default_factory=list)
    sides: dict[str, list[float]] = field(default_factory=dict)  # the other sides' step times
    charge: dict[str, list[float]] = field(default_factory=dict)  # helper CPU s per step

    def ratio(self, side: str) -> float:
        """Bare mean step / (the side's mean step + its helper threads' CPU per step)."""
        charge = statistics.fmean(self.charge[side]) if self.charge.get(side) else 0.0
        return statistics.fmean(self.bare) / (statistics.fmean(self.sides[side]) + charge)

    def control(self) -> float:
        """Mean step of bare twin A / bare twin B (1: no difference resolved)."""
        return statistics.fmean(self.bare_a) / statistics.fmean(self.bare_b)

    def line(self, side: str) -> str:
        """One summary line for a side."""
        b, m = statistics.fmean(self.bare), statistics.fmean(self.sides[side])
        charge = statistics.fmean(self.charge[side]) if self.charge.get(side) else 0.0
        med = statistics.median(self.bare) / statistics.median(self.sides[side])
        return (
            f"{side}: bare {1 / b:,.0f} steps/s, {side} {1 / (m + charge):,.0f} steps/s, "
            f"ratio {self.ratio(side):.4f} (median steps {med:.4f}; uncharged {b / m:.4f}; "
            f"charged {charge * 1e6:.1f} us/step of helper threads' CPU), "
            f"{len(self.sides[side])} steps"
        )


def compare_blocks(
    make_sides: Any, blocks: int, rounds: int, alone: int, warm: int = WARM_STEPS
) -> Result:
    """Interleave bare twins A and B with the sides ``make_sides(block)`` builds, per block.

    ``make_sides(block, epochs)`` returns ``{name: (step, clock or None, charge_cpu or None,
    finish)}``: ``charge_cpu()`` reads the CPU seconds of the side's helper threads (the
    side is then run ``alone`` steps more, by itself, to measure their CPU per step).
    Every twin first runs ``warm`` untimed steps.
    """
    result = Result()
    epochs = -(-(warm + rounds + alone + 1) // STEPS_PER_EPOCH)
    for block in range(blocks):
        bare_gens = [stepped_fit(*twin(), epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH)]
        bare_gens.append(stepped_fit(*twin(), epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH))
        sides = make_sides(block, epochs)
        steps = {"bare A": steps_of(bare_gens[0]), "bare B": steps_of(bare_gens[1])}
        clocks = {}
        for name, (step, clock, _, _) in sides.items():
            steps[name] = step
            if clock is not None:
                clocks[name] = clock
        bench = Interleaved(steps, clocks, seed=block)
        for name in steps:
            bench.warm(name, warm)
        bench.run(rounds)
        result.bare_a += bench.times["bare A"]
        result.bare_b += bench.times["bare B"]
        result.bare += bench.times["bare A"] + bench.times["bare B"]
        for name, (_, _, charge_cpu, done) in sides.items():
            result.sides.setdefault(name, []).extend(bench.times[name])
            if charge_cpu is not None:
                cpu0 = charge_cpu()
                bench.warm(name, alone)
                result.charge.setdefault(name, []).append((charge_cpu() - cpu0) / alone)
            done()
        for gen in bare_gens:
            finish(gen)
        print(
            f"block {block + 1}: bare A {1 / statistics.fmean(bench.times['bare A']):,.0f}, "
            f"bare B {1 / statistics.fmean(bench.times['bare B']):,.0f}, "
            + ", ".join(f"{n} {1 / statistics.fmean(bench.times[n]):,.0f}" for n in sides)
            + " steps/s",
            flush=True,
        )
    return result


def monitored_sides(worker: WorkerSide, name: str = "monitored") -> Any:
    """``make_sides`` for :func:`compare_blocks`: one monitored twin on ``worker``."""

    def make(block: int, epochs: int) -> dict[str, Any]:
        gen = worker.fit(*twin(), epochs=epochs)
        clock = OwnClock()
        return {name: (steps_of(gen), clock, worker.pump_cpu, lambda: finish(gen))}

    return make


def machine_line(batch: int = 64) -> str:
    """The machine and library versions, one line."""
    import keras
    import tensorflow as tf

    return (
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus "
        f"(load average {os.getloadavg()[0]:.2f}); TF {tf.__version__}, "
        f"Keras {keras.__version__}; MLP 32-128-128-10, batch {batch}"
    )


def main() -> None:
    """Run the comparison and print the control and the overhead lines."""
    if "--loop" in sys.argv[1:]:  # custom training loops: bench/loop_overhead.py
        from loop_overhead import main as loop_main

        loop_main([a for a in sys.argv[1:] if a != "--loop"])
        return
    if "--inspector" in sys.argv[1:]:  # the inspector's benchmark lives in its own file
        from inspector_overhead import main as inspector_main

        inspector_main([a for a in sys.argv[1:] if a != "--inspector"])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2, help="fresh sets of twins")
    parser.add_argument("--rounds", type=int, default=1500, help="interleaved steps per twin")
    parser.add_argument("--alone", type=int, default=1500, help="monitored steps alone (charge)")
    args = parser.parse_args()

    from tfstudio.core.options import RunOptions

    worker = WorkerSide(RunOptions(inspector=False))  # what a default run wires, inspector off
    result = compare_blocks(monitored_sides(worker), args.blocks, args.rounds, args.alone)
    received = worker.close()
    expected = args.blocks * (-(-(WARM_STEPS + args.rounds + args.alone + 1) // STEPS_PER_EPOCH))
    expected *= STEPS_PER_EPOCH
    print(machine_line())
    print(result.line("monitored"))
    print(f"viewer process received {received} of {expected} step events")
    print(f"control: bare/bare = {result.control():.4f}")
    print(f"overhead: monitored/bare = {result.ratio('monitored'):.4f}")


if __name__ == "__main__":
    main()
