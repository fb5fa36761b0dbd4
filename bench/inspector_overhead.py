"""What the inspector costs a training run: bare vs monitored ``fit``, side by side.

In one process, on the same model and data, adjacent fits in rotating order:

- ``bare``: plain ``model.fit``;
- ``budget``: tfstudio's monitoring with the inspector at its default budget (3%);
- ``every10``: the inspector sampling every 10 steps (weights, gradients, layer outputs);
- ``tensorboard``: Keras's ``TensorBoard(update_freq="batch", histogram_freq=1)``, what
  users run today to see weights (no tfstudio).

Steps/s are timed from the end of the first batch to the end of the fit (a callback
placed first), so each variant's one-off ``train_function`` tracing is left out but
everything the monitoring does after it (the inspector's first sample included) counts.
The monitored fits go through the real interceptor and callback, with a thread
draining the channel at 60 Hz as the window does. R is the median of the per-round
ratios variant/bare. Models: the small MLP of ``bench_model.py`` and the CNN of
``resources/examples/cnn_shapes.py`` (same layers, random 28x28 images).

    python bench/inspector_overhead.py [--rounds 6]      (or: python bench/overhead.py --inspector)

Ends with one line: ``overhead: monitored/bare = R`` (MLP, default budget).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("bare", "budget", "every10", "tensorboard")


def cnn_and_data(batch: int = 32) -> tuple[Any, Any]:
    """The CNN of resources/examples/cnn_shapes.py on an endless pipeline of random images."""
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((batch * 20, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 3, size=len(x)).astype("int32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).repeat().prefetch(4)
    model = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv1"),
            keras.layers.MaxPooling2D(name="pool1"),
            keras.layers.Conv2D(16, 3, activation="relu", name="conv2"),
            keras.layers.MaxPooling2D(name="pool2"),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ],
        name="shapes_cnn",
    )
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model, data


class Bench:
    """Runs the variants of one model and keeps their steps/s."""

    def __init__(self, name: str, model: Any, data: Any, steps: int) -> None:
        self.name = name
        self.model = model
        self.data = data
        self.epochs = 2
        self.steps_per_epoch = steps // 2
        self.rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
        self.cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}  # CPU s per step
        self.status: dict[str, Any] = {}
        self.largest = 0
        self.tb_dir = tempfile.mkdtemp(prefix="tfstudio-bench-tb-")

    def run(self, variant: str) -> float:
        """One fit of ``variant``; returns its steps/s."""
        import keras

        from tfstudio.core.channel import Channel
        from tfstudio.core.events import InspectorStatus
        from tfstudio.core.options import RunOptions
        from tfstudio.engine.instrument import FitInterceptor
        from tfstudio.engine.monitor import RunMonitor

        stamps: list[float] = []
        cpu: list[float] = []

        class Timer(keras.callbacks.Callback):
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if not stamps:
                    stamps.append(time.perf_counter())
                    cpu.append(time.process_time())

            def on_train_end(self, logs: Any = None) -> None:
                stamps.append(time.perf_counter())
                cpu.append(time.process_time())

        callbacks: list[Any] = [Timer()]
        if variant == "tensorboard":
            callbacks.append(
                keras.callbacks.TensorBoard(self.tb_dir, update_freq="batch", histogram_freq=1)
            )

        def fit() -> None:
            self.model.fit(
                self.data,
                epochs=self.epochs,
                steps_per_epoch=self.steps_per_epoch,
                verbose=0,
                callbacks=callbacks,
            )

        if variant in ("budget", "every10"):
            options = RunOptions(sample_every=10 if variant == "every10" else 0)
            channel = Channel()
            done = threading.Event()
            last: list[Any] = [None]

            def consume() -> None:  # what the viewer does: drain at frame rate
                while True:
                    for event in channel.drain():
                        if isinstance(event, InspectorStatus):
                            last[0] = event
                    if done.is_set():
                        return
                    time.sleep(1 / 60)

            consumer = threading.Thread(target=consume, daemon=True)
            consumer.start()
            with FitInterceptor(RunMonitor(channel, options=options)):
                fit()
            done.set()
            consumer.join()
            if last[0] is not None:
                self.status[variant] = last[0]
                self.largest = max(self.largest, last[0].largest_message)
        else:
            fit()
        steps = self.epochs * self.steps_per_epoch - 1
        self.cpu[variant].append((cpu[-1] - cpu[0]) / steps)
        return steps / (stamps[-1] - stamps[0])

    def round(self, r: int) -> None:
        """One round: every variant once, order rotated by round."""
        order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
        n = len(self.cpu["bare"])
        got = {v: self.run(v) for v in order}
        for v in VARIANTS:  # keep only this round's CPU samples in step with the rates
            del self.cpu[v][n:-1]
        for v in VARIANTS:
            self.rates[v].append(got[v])
        print(
            f"{self.name} round {r + 1:2d}: "
            + "  ".join(f"{v} {got[v]:7.1f}" for v in VARIANTS)
            + " steps/s",
            flush=True,
        )

    def cpu_ratio(self, variant: str) -> float:
        """Median over rounds of bare/variant process CPU time per step (all threads)."""
        return statistics.median(
            b / m for m, b in zip(self.cpu[variant], self.cpu["bare"], strict=True)
        )

    def ratio(self, variant: str) -> float:
        """Median over rounds of variant/bare."""
        return statistics.median(
            m / b for m, b in zip(self.rates[variant], self.rates["bare"], strict=True)
        )


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table and the final overhead line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--mlp-steps", type=int, default=1000)
    parser.add_argument("--cnn-steps", type=int, default=300)
    args = parser.parse_args(argv)

    import keras
    import tensorflow as tf
    from bench_model import mlp_and_data

    benches = [
        Bench("mlp", *mlp_and_data(64), steps=args.mlp_steps),
        Bench("cnn", *cnn_and_data(32), steps=args.cnn_steps),
    ]
    for bench in benches:
        for v in VARIANTS:  # warm-up: tracing, allocators, TensorBoard writer
            bench.run(v)
        for samples in bench.cpu.values():
            samples.clear()
        for r in range(args.rounds):
            bench.round(r)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus "
        f"(shared with other jobs); TF {tf.__version__}, Keras {keras.__version__}"
    )
    print("steps/s ratios variant/bare (median of rounds); in brackets: the same from CPU time")
    print("| model | bare steps/s | budget 3% / bare | every 10 / bare | TensorBoard / bare |")
    print("| --- | --- | --- | --- | --- |")
    for b in benches:
        cells = " | ".join(
            f"{b.ratio(v):.4f} ({b.cpu_ratio(v):.4f})" for v in ("budget", "every10", "tensorboard")
        )
        print(f"| {b.name} | {statistics.median(b.rates['bare']):.1f} | {cells} |")
    for b in benches:
        s = b.status.get("budget")
        if s is not None:
            print(
                f"{b.name}: default budget ended sampling every {s.every} steps, inspector's "
                f"own measured overhead {s.overhead:.2%}, last sample {s.probe_ms:.1f} ms"
            )
        cost_tb = 1 - b.ratio("tensorboard")
        cost_in = 1 - b.ratio("budget")
        if cost_in > 0:
            print(f"{b.name}: TensorBoard's cost / inspector's cost = {cost_tb / cost_in:.1f}x")
    print(f"largest inspector message: {max(b.largest for b in benches) / 1024:.1f} kB")
    print(f"overhead: monitored/bare = {benches[0].ratio('budget'):.4f}")


if __name__ == "__main__":
    main()
