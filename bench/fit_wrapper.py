"""What the ``tf.function`` wrapper of custom loops cost a ``fit`` step, where a run pays it.

A run watches for custom loops with a wrapper of ``tf.function``'s ``__call__``
(engine/loops/patching.py); while a fit runs, it passes every call through (the fit's
callback monitors it). Since this stop the wrapper is taken off for the fit's length,
so a fit's ``train_function`` is called by TensorFlow's own ``__call__``. This measures
what the pass-through cost, the way ``bench/loop_split.py`` does: the small MLP's train
step traced ``--traces`` times, each trace called three ways in a fresh random order
every round, one step each, every call timed, with the worker side of
``bench/overhead.py`` (pump, recorder, advisor, viewer) and a loop interceptor running:

- ``G``: TensorFlow's own ``__call__`` (a fit's step since this change);
- ``H``: the same again (the control: how far two identical ways land apart);
- ``X``: through the wrapper with the run's ``in_fit`` flag set (a fit's step before).

    python bench/fit_wrapper.py [--steps 2000] [--traces 4]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Time the three ways, interleaved, and print each one's mean and median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="rounds (calls per trace and way)")
    parser.add_argument("--traces", type=int, default=4, help="traces of the step")
    args = parser.parse_args()

    from interleave import Interleaved
    from loop_overhead import mlp_step
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor

    x, y, step = mlp_step()
    own = polymorphic_function.Function.__call__
    side = WorkerSide(RunOptions(inspector=False))
    with LoopInterceptor(side.monitor):
        import tensorflow as tf

        wrapper = polymorphic_function.Function.__call__
        assert wrapper is not own, "the loop interceptor did not wrap tf.function calls"
        fns = [tf.function(step) for _ in range(args.traces)]
        for fn in fns:
            own(fn, x, y).numpy()  # traced outside any loop's bookkeeping
        steps = {}
        for i, fn in enumerate(fns):
            steps[f"G{i}"] = lambda fn=fn: own(fn, x, y)
            steps[f"H{i}"] = lambda fn=fn: own(fn, x, y)
            steps[f"X{i}"] = lambda fn=fn: wrapper(fn, x, y)
        side.monitor.in_fit = True  # as during a fit: the wrapper passes every call through
        bench = Interleaved(steps)
        bench.run(args.steps)
        side.monitor.in_fit = False
    side.close()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus (load average "
        f"{os.getloadavg()[0]:.2f}); MLP 32-64-64-10, batch 64, Adam; {args.traces} traces x "
        f"{args.steps} rounds"
    )
    ways = {k: [f"{k}{i}" for i in range(args.traces)] for k in "GHX"}
    labels = {"G": "TensorFlow's __call__", "H": "the same (control)", "X": "the wrapper, in a fit"}
    bench.report(ways, labels, "G")
    base = bench.mean(*ways["G"])
    x_cost = bench.mean(*ways["X"]) - base
    control = bench.mean(*ways["H"]) - base
    print(f"fit wrapper: {x_cost * 1e6:+.1f} us a step (control {control * 1e6:+.1f} us)")


if __name__ == "__main__":
    main()
