"""Cost of monitoring a custom training loop: bare vs monitored steps/s, side by side.

A small MLP trained by a custom loop (``tf.GradientTape`` + a Keras optimizer),
as a ``@tf.function`` train step and as an eager step. Rounds alternate bare and
monitored in this one process, on the same model, data and thread; R is the
median of the adjacent pairs' ratios (a shared VM's speed jumps between regimes).
The monitored rounds run under :class:`tfstudio.engine.loops.LoopInterceptor`
with a thread draining the channel every 20 ms, as a worker's pump does; each
monitored round counts the StepEnded events it produced (nothing may be lost).

    python bench/overhead.py --loop [--rounds 20] [--steps 300] [--inspector]

The inspector is off by default (this is the per-step path, as ``overhead.py``
measures ``fit``); ``--inspector`` turns it on at its default 3% budget, so the
monitored rounds also run the sampled steps (recording twin, weight/gradient stats);
each monitored round first runs 13 untimed steps, past the two first samples that trace
the twin and the weight probe (paid once per run).

Ends with one line: ``overhead: monitored/bare = R`` (the ``@tf.function`` loop).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and print one line per loop kind, then the overhead line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="pairs of rounds to compare")
    parser.add_argument("--steps", type=int, default=300, help="steps per round")
    parser.add_argument("--eager-steps", type=int, default=60, help="steps per eager round")
    parser.add_argument("--inspector", action="store_true", help="sample for the inspector too")
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    import tensorflow as tf

    from tfstudio.core.channel import Channel
    from tfstudio.core.events import StepEnded
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor
    from tfstudio.engine.monitor import RunMonitor

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

    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    def timed(fn, n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            fn(x, y)
        fn(x, y).numpy()  # wait for the last step
        return (n + 1) / (time.perf_counter() - t)

    # With the inspector, a loop's first two samples (steps 2 and 12) pay once per run for
    # tracing the recording twin and the weight probe: run them before timing, so the
    # timed steps show the steady cost of budget-spaced samples.
    warm = 13 if args.inspector else 0

    def monitored(make, n: int) -> tuple[float, int]:
        channel = Channel()
        monitor = RunMonitor(channel, options=RunOptions(inspector=args.inspector))
        done = threading.Event()
        seen = [0]

        def pump() -> None:
            while not done.wait(0.02):
                seen[0] += sum(isinstance(e, StepEnded) for e in channel.drain())

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        with LoopInterceptor(monitor):
            fn = make()
            fn(x, y).numpy()  # trace (not timed)
            for _ in range(warm):  # the inspector's first samples trace its twin (not timed)
                fn(x, y)
            rate = timed(fn, n)
        done.set()
        thread.join()
        seen[0] += sum(isinstance(e, StepEnded) for e in channel.drain())
        return rate, seen[0] - (n + 2 + warm)

    results = {}
    for kind, make, n in (
        ("tf.function", lambda: tf.function(step), args.steps),
        ("eager", lambda: step, args.eager_steps),
    ):
        bare_fn = make()
        bare_fn(x, y).numpy()
        ratios, bares, mons, lost = [], [], [], 0
        for i in range(args.rounds):
            if i % 2 == 0:
                b = timed(bare_fn, n)
                m, missing = monitored(make, n)
            else:
                m, missing = monitored(make, n)
                b = timed(bare_fn, n)
            bares.append(b)
            mons.append(m)
            ratios.append(m / b)
            lost += abs(missing)
        results[kind] = statistics.median(ratios)
        print(
            f"{kind}: bare {statistics.median(bares):,.0f} steps/s, monitored "
            f"{statistics.median(mons):,.0f} steps/s, ratio median {results[kind]:.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}), steps lost {lost}, "
            f"{args.rounds} rounds x {n} steps"
        )
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)")
    print(f"inspector: {'on (3% budget)' if args.inspector else 'off'}")
    print(f"overhead (eager loop): monitored/bare = {results['eager']:.3f}")
    print(f"overhead: monitored/bare = {results['tf.function']:.3f}")


if __name__ == "__main__":
    main()
