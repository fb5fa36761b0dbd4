"""Cost of monitoring a custom training loop: bare vs monitored steps/s, side by side.

A small MLP (32-64-64-10, batch 64, Adam) trained by a custom loop
(``tf.GradientTape`` + a Keras optimizer), as a ``@tf.function`` train step and as an
eager step, in this one process, on the same model, data and thread.

``tf.function``: step by step, interleaved. Several bare traces of the step (made
before monitoring starts) and several monitored traces (made under
:class:`tfstudio.engine.loops.LoopInterceptor`, so their graphs record the loss and
gradient norm) are called in a fresh random order every round, one step each, and
every call is timed. The sampling cadence (the budget, which measures the loop's time)
runs on the monitored side's own clock (``OwnClock``: it advances only during monitored
calls), as in a run of its own. A bare call goes through the unpatched
``Function.__call__`` (what an unmonitored script runs); a monitored call goes through
the wrapper and runs the recording ops: each step's loss, and at sampled steps one call
of each trace's twin, which also writes the gradient norm (the monitored traces are the
step functions of one loop, as a GAN's two are). A
shared VM's speed jumps between regimes for seconds at a time; steps
a millisecond apart see the same regime, so the comparison resolves a few percent where
rounds of hundreds of steps could not. The monitored side is also charged, on top of
its own step times, the CPU time of the threads that work for it (the reader of the
graph buffers, and the worker side of ``bench/overhead.py``: the pump with the live
advisor and the recorder, and the pipe's sender to a viewer process) per step,
measured afterwards over a stretch of monitored steps alone (as a monitored run is):
on 2 cores their time is taken from training's. A control ratio compares half the
bare traces with the other half, the same way: how far from 1.000 two identical sides
land (the method's resolution).

Eager: the same, one model, bare and monitored steps in random order; the patches are
global while a loop is monitored, so a bare eager step runs with the run's ``in_fit``
flag set and the wrappers pass straight through (as inside a ``fit``; ~1 us a step).

Every monitored step must reach the viewer process (``steps lost 0``).
The first sample traces each monitored trace's twin (once per run, ~0.3 s each for this
MLP): the two first samples run untimed before the timing starts.

    python bench/overhead.py --loop [--steps 2500] [--traces 4] [--eager-steps 300] [--inspector]
                                    [--no-corpus]

The corpus's shape (``--corpus``, on by default): the same interleaved comparison with
the step of ``tests/scripts/loops/eager_then_graph.py``: its ``tf.function`` also
updates a Keras metric (read on the training thread after a call, when the graph reader's
beat asks for it), and it runs as the run's second loop, after an eager loop of the same
step on the same model and optimizer
(issue 53: that loop was once merged into the eager one). Its line is printed too, and
the overhead line is the lower of the two ratios.

The inspector is off by default (this is the per-step path, as ``overhead.py``
measures ``fit``); ``--inspector`` turns it on at its default 3% budget, so the
monitored side's sampled steps also record for the inspector (weight/gradient stats).

Ends with one line: ``overhead: monitored/bare = R`` (the ``@tf.function`` loops: the
lower ratio of steps/s, i.e. of mean step times, reader and pump CPU charged).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio
sys.path.insert(0, str(Path(__file__).resolve().parent))


def mlp() -> tuple[Any, Any, Any, Any, Any]:
    """The benchmark's data and model: ``(x, y, model, optimizer, loss function)``."""
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(64, 32)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, size=(64,)))
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    opt = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return x, y, model, opt, loss_fn


def mlp_step(metric: bool = False) -> tuple[Any, Any, Any]:
    """The benchmark's data and its train step (a plain Python function): ``(x, y, step)``.

    Args:
        metric: the step also updates a Keras accuracy (the corpus's shape).
    """
    import keras
    import tensorflow as tf

    x, y, model, opt, loss_fn = mlp()
    acc = keras.metrics.SparseCategoricalAccuracy() if metric else None

    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        if acc is not None:
            acc.update_state(y, logits)
        return loss

    return x, y, step


EAGER_FIRST = 32  # the corpus's shape: eager steps of the run's first loop (untimed)


def traces(step: Any, x: Any, y: Any, n: int) -> list[Any]:
    """``n`` ``tf.function``s of ``step``, each traced by a first (untimed) call.

    Made under a :class:`LoopInterceptor`, their graphs record the loss (monitored
    traces); made before it, they are bare.
    """
    import tensorflow as tf

    out = [tf.function(step) for _ in range(n)]
    for fn in out:
        fn(x, y).numpy()
    return out


def _cpu(thread: threading.Thread | None) -> float:
    """CPU seconds a live thread has used (0 for none)."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return 0.0
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _helper_clock(*threads: threading.Thread | None) -> Any:
    """A function giving the CPU seconds the live ``threads`` have used, together."""
    clocks = [
        time.pthread_getcpuclockid(t.ident)
        for t in threads
        if t is not None and t.ident is not None and t.is_alive()
    ]
    return lambda: sum(time.clock_gettime(c) for c in clocks)


def graph_interleaved(args: argparse.Namespace, corpus: bool = False) -> tuple[float, str]:
    """The ``tf.function`` loop, step by step in random order: ``(R, summary line)``.

    Args:
        corpus: the corpus's shape: the step updates a metric, and the monitored traces
            are the run's second loop, after an eager loop of the same step (untimed).
    """
    from interleave import OwnClock
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loop_inspect import LoopInspector
    from tfstudio.engine.loops import LoopInterceptor

    x, y, step = mlp_step(metric=corpus)
    eager_first = EAGER_FIRST if corpus else 0
    original = polymorphic_function.Function.__call__  # unpatched: the bare call
    bare = traces(step, x, y, args.traces)
    side = WorkerSide(RunOptions(inspector=args.inspector))  # pump, recorder, viewer
    monitor = side.monitor
    # The two first samples (steps 2 and 12) trace a twin of every monitored trace (they
    # are step functions of one loop, as a GAN's two are): paid once per run, untimed.
    warm = 13 * args.traces
    # The sampling budget measures the loop's time on the monitored side's own clock:
    # with bare steps interleaved, the wall clock would also run through theirs, and
    # samples would come twice as often per monitored step as in a run of its own.
    own = OwnClock()
    saved = LoopInspector.clock
    LoopInspector.clock = own
    with LoopInterceptor(monitor) as interceptor:
        own.enter()
        for _ in range(eager_first):  # the corpus's eager loop before (loop 1)
            step(x, y)
        mons = traces(step, x, y, args.traces)
        for k in range(warm):
            mons[k % len(mons)](x, y)
        own.leave()
        calls = [(i, True, fn) for i, fn in enumerate(mons)]
        calls += [(i, False, fn) for i, fn in enumerate(bare)]
        times: dict[tuple[int, bool], list[float]] = {(i, m): [] for i, m, _ in calls}
        cpus: dict[tuple[int, bool], list[float]] = {(i, m): [] for i, m, _ in calls}
        order = random.Random(0)
        clock, process = time.perf_counter, time.process_time
        # a full collection of the process's ~400k objects (TensorFlow's graphs) pauses
        # for ~0.5 s and lands on one side's call at random: none while timed
        gc.collect()
        gc.freeze()
        helpers = _helper_clock(interceptor.reader.thread, side.pump, side.pump.pipe._thread)  # noqa: SLF001
        for _ in range(args.steps):
            order.shuffle(calls)
            for i, monitored, fn in calls:
                p, h = process(), helpers()
                if monitored:
                    own.enter()
                    t = clock()
                    fn(x, y)
                    times[i, True].append(clock() - t)
                    own.leave()
                else:
                    t = clock()
                    original(fn, x, y)
                    times[i, False].append(clock() - t)
                # the training's own CPU (TensorFlow's pools included, the helpers not)
                cpus[i, monitored].append(process() - p - (helpers() - h))
        gc.unfreeze()
        # What the reader and the pump cost per step of a run that is all monitored: a
        # stretch of monitored steps alone, their threads' CPU time over its steps.
        reader, alone = interceptor.reader.thread, args.steps
        read0, pump0 = _cpu(reader), side.pump_cpu()
        own.enter()  # all monitored now: its own time is the wall's
        for k in range(alone):
            mons[k % len(mons)](x, y)
        mons[0](x, y).numpy()
        own.leave()
        read_cost = (_cpu(reader) - read0) / (alone + 1)
        pump_cost = (side.pump_cpu() - pump0) / (alone + 1)
        charge = read_cost + pump_cost
    seen = side.close()
    LoopInspector.clock = saved
    made = eager_first + args.traces * (args.steps + 1) + warm + alone + 1
    loops = len(interceptor.book.loops)
    assert loops == (2 if corpus else 1), f"{loops} loops"
    pool = [t for (_, m), ts in times.items() if m for t in ts]
    bare_pool = [t for (_, m), ts in times.items() if not m for t in ts]
    half = args.traces // 2
    mean_b, mean_m = statistics.fmean(bare_pool), statistics.fmean(pool) + charge
    med_b, med_m = statistics.median(bare_pool), statistics.median(pool) + charge
    a = [t for i in range(half) for t in times[i, False]]
    b = [t for i in range(half, args.traces) for t in times[i, False]]
    control = statistics.fmean(b) / statistics.fmean(a)
    ratio = mean_b / mean_m
    cpu_b = statistics.fmean([t for (_, m), ts in cpus.items() if not m for t in ts])
    cpu_m = statistics.fmean([t for (_, m), ts in cpus.items() if m for t in ts]) + charge
    cpu_a = [t for i in range(half) for t in cpus[i, False]]
    cpu_control = statistics.fmean([t for i in range(half, args.traces) for t in cpus[i, False]])
    cpu_control /= statistics.fmean(cpu_a)
    kind = "tf.function after an eager loop, with a metric" if corpus else "tf.function"
    line = (
        f"{kind}: bare {1 / mean_b:,.0f} steps/s, monitored {1 / mean_m:,.0f} steps/s, "
        f"ratio {ratio:.3f} (median steps {med_b / med_m:.3f}; uncharged "
        f"{mean_b / (mean_m - charge):.3f}; charged: reader {read_cost * 1e6:.1f} + pump "
        f"{pump_cost * 1e6:.1f} us/step), control bare/bare {control:.3f}; CPU per step "
        f"{cpu_b / cpu_m:.3f} (control {cpu_control:.3f}), "
        f"steps lost {made - seen}, {args.traces}+{args.traces} traces x {args.steps} "
        "steps interleaved"
    )
    return ratio, line


def eager_interleaved(args: argparse.Namespace) -> tuple[float, str]:
    """The eager loop, step by step in random order: ``(R, summary line)``.

    The patches are global while a loop is monitored, so a bare eager step runs with the
    run's ``in_fit`` flag set: the wrappers pass straight through to TensorFlow (three
    attribute checks, ~1 us, on a step of tens of ms), as they do inside a ``fit``.
    """
    from overhead import WorkerSide

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor

    x, y, step = mlp_step()
    warm = 13 if args.inspector else 0
    side = WorkerSide(RunOptions(inspector=args.inspector))  # pump, recorder, viewer
    monitor = side.monitor
    times: dict[bool, list[float]] = {True: [], False: []}
    order = random.Random(0)
    clock = time.perf_counter
    with LoopInterceptor(monitor):
        for _ in range(1 + warm):  # the first step announces the loop (not timed)
            step(x, y)
        sides = [True, False]
        for _ in range(args.eager_steps):
            order.shuffle(sides)
            for monitored in sides:
                monitor.in_fit = not monitored
                t = clock()
                step(x, y).numpy()
                times[monitored].append(clock() - t)
        monitor.in_fit = False
        # the pump's CPU per step of a run that is all monitored (as for tf.function)
        alone = max(1, args.eager_steps // 5)
        pump0 = side.pump_cpu()
        for _ in range(alone):
            step(x, y)
        step(x, y).numpy()
        pump_cost = (side.pump_cpu() - pump0) / (alone + 1)
    lost = 1 + warm + args.eager_steps + alone + 1 - side.close()
    mean_b = statistics.fmean(times[False])
    mean_m = statistics.fmean(times[True]) + pump_cost
    ratio = mean_b / mean_m
    line = (
        f"eager: bare {1 / mean_b:,.1f} steps/s, monitored {1 / mean_m:,.1f} steps/s, "
        f"ratio {ratio:.3f} (median steps "
        f"{statistics.median(times[False]) / statistics.median(times[True]):.3f}; charged: "
        f"pump {pump_cost * 1e6:.1f} us/step), steps lost {lost}, {args.eager_steps} steps "
        "each interleaved"
    )
    return ratio, line


def main(argv: list[str] | None = None) -> None:
    """Run both comparisons and print one line per loop kind, then the overhead line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2500, help="graph steps per trace")
    parser.add_argument("--traces", type=int, default=4, help="graph traces per side")
    parser.add_argument("--eager-steps", type=int, default=300, help="eager steps per side")
    parser.add_argument("--inspector", action="store_true", help="sample for the inspector too")
    parser.add_argument(
        "--no-corpus", dest="corpus", action="store_false", help="skip the corpus's shape"
    )
    args = parser.parse_args(argv)

    graph, graph_line = graph_interleaved(args)
    print(graph_line, flush=True)
    if args.corpus:
        shaped, shaped_line = graph_interleaved(args, corpus=True)
        print(shaped_line, flush=True)
        graph = min(graph, shaped)
    eager, eager_line = eager_interleaved(args)
    print(eager_line)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)")
    print(f"inspector: {'on (3% budget)' if args.inspector else 'off'}")
    print(f"overhead (eager loop): monitored/bare = {eager:.3f}")
    print(f"overhead: monitored/bare = {graph:.3f}")


if __name__ == "__main__":
    main()
