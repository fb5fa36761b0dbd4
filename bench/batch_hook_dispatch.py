"""What it costs a fit that a callback has a batch-end hook: Keras's two ways of calling it.

Keras 3 calls a fit's batch-end hooks one of two ways. When no callback has a
batch-end hook of its own (a bare fit: ``History`` has none, and ``verbose=0`` adds
no progress bar), or every one that has says ``async_safe = True``, each batch end is
submitted to a thread pool, where the logs are turned into floats and the hooks run.
Otherwise (tfstudio's ``StudioCallback`` has such a hook and must run on the training
thread: pause and stop happen at batch boundaries there) the training thread turns
the logs into floats itself and calls the hooks in line.

Single steps of the small MLP of ``overhead.py``, interleaved in a fresh random order
every round (``interleave.py``), ``--twins`` models per arm (each trace has its own small
speed), every call timed:

- ``bare``: no callback (the thread-pool way, nothing to call there but History);
- ``sync``: a callback whose ``on_train_batch_end`` does nothing (the in-line way: the
  logs made floats on the training thread, as with tfstudio's callback);
- ``async``: the same callback declared ``async_safe`` (the thread-pool way with it).

Prints each arm's mean and median step and their distance from bare, and a control:
half the bare twins against the other half (the method's resolution).

    python bench/batch_hook_dispatch.py [--steps 3000] [--twins 2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_model import mlp_and_data  # noqa: E402
from interleave import Interleaved, stepped_fit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--twins", type=int, default=2)
    args = parser.parse_args()
    if args.twins < 2:
        parser.error("--twins must be at least 2: the control compares bare twins")
    import keras

    class InLine(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            """Nothing: having the hook is what is measured."""

    class Pooled(InLine):
        async_safe = True

    arms: dict[str, list[str]] = {"bare": [], "sync": [], "async": []}
    fits = {}
    for i in range(args.twins):
        for arm, callbacks in (("bare", []), ("sync", [InLine()]), ("async", [Pooled()])):
            name = f"{arm}{i}"
            model, data = mlp_and_data()  # the MLP and input every bench here uses
            fits[name] = stepped_fit(
                model, data, steps_per_epoch=args.steps + 200, callbacks=callbacks
            )
            arms[arm].append(name)
    steps = Interleaved({name: fit.__next__ for name, fit in fits.items()})
    for name in fits:
        steps.warm(name, 100)
    steps.run(args.steps)
    for fit in fits.values():
        fit.close()
    base_mean, base_median = steps.mean(*arms["bare"]), steps.median(*arms["bare"])
    for arm, names in arms.items():
        mean, median = steps.mean(*names), steps.median(*names)
        print(
            f"{arm}: mean {mean * 1e6:.1f} us ({(mean - base_mean) * 1e6:+.1f}), "
            f"median {median * 1e6:.1f} us ({(median - base_median) * 1e6:+.1f}), "
            f"bare/{arm} {base_mean / mean:.4f}"
        )
    bare, half = arms["bare"], args.twins // 2
    control = steps.mean(*bare[:half]) / steps.mean(*bare[half:])
    print(f"control: bare/bare = {control:.4f}")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
