"""What tfstudio's ``tf.function`` wrapper costs a graph loop's step, against a bare wrapper.

The small MLP's train step of ``bench/loop_overhead.py`` traced ``--traces`` times under
:class:`LoopInterceptor` (monitored traces: their graphs write each step's loss), with
the worker side of ``bench/overhead.py`` running. Each trace is called five ways in a
fresh random order every round, one step each, every call timed:

- ``G``: TensorFlow's own ``__call__`` (the graph's write alone);
- ``H``: the same again (the control: how far two identical ways land apart);
- ``P``: through a wrapper that only passes the call on (what any Python wrapper costs);
- ``Q``: through a copy of the wrapper's quiet path (its one comparison, no counting);
- ``M``: a monitored step as a run calls it: through tfstudio's wrapper (its quiet path,
  and in rounds of at most 10 twin calls a second the traces' norm twins), or, in a
  quiet stretch that runs without the wrapper, TensorFlow's own ``__call__``.

``--gap S`` sets the norm twins' least gap (``NORM_MIN_GAP_S``, 0.1 s now: at most 10
twin calls a second); ``--gap 3600`` leaves them out, so ``M`` shows the wrapper alone.

    python bench/loop_wrapper.py [--steps 2000] [--traces 4] [--gap S]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Time the five ways, interleaved, and print each one's mean and median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="rounds (calls per trace and way)")
    parser.add_argument("--traces", type=int, default=4, help="monitored traces of the step")
    parser.add_argument("--gap", type=float, default=None, help="the norm twins' least gap, s")
    args = parser.parse_args()

    from interleave import Interleaved
    from loop_overhead import mlp_step, traces
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor, sampling
    from tfstudio.engine.loops.ring import NORM_EVERY

    if args.gap is not None:
        sampling.NORM_MIN_GAP_S = args.gap
    x, y, step = mlp_step()
    own = polymorphic_function.Function.__call__
    side = WorkerSide(RunOptions(inspector=False))
    commands = side.monitor.channel.command_queue

    def passthrough(function: Any, *a: Any, **k: Any) -> Any:
        return own(function, *a, **k)

    with LoopInterceptor(side.monitor) as interceptor:
        sampler = interceptor.sampler
        fns = traces(step, x, y, args.traces)
        for k in range((NORM_EVERY + 1) * len(fns)):  # the norm twins' traces, untimed
            fns[k % len(fns)](x, y)

        def quiet(function: Any, *a: Any, **k: Any) -> Any:
            if sampler.calls + 1 < 1 << 62 and not commands and id(function) in sampler.step_fns:
                return own(function, *a, **k)
            return own(function, *a, **k)

        steps = {}
        for i, fn in enumerate(fns):
            steps[f"G{i}"] = lambda fn=fn: own(fn, x, y)
            steps[f"H{i}"] = lambda fn=fn: own(fn, x, y)
            steps[f"P{i}"] = lambda fn=fn: passthrough(fn, x, y)
            steps[f"Q{i}"] = lambda fn=fn: quiet(fn, x, y)
            steps[f"M{i}"] = lambda fn=fn: fn(x, y)
        bench = Interleaved(steps)
        bench.run(args.steps)
    side.close()
    print(
        f"machine: {os.cpu_count()} cpus (load average {os.getloadavg()[0]:.2f}); MLP "
        f"32-64-64-10, batch 64, Adam; {args.traces} traces x {args.steps} rounds; norm twins "
        f"at most {1 / sampling.NORM_MIN_GAP_S:g} calls a second"
    )
    labels = {
        "G": "TensorFlow's __call__",
        "H": "the same (control)",
        "P": "a pass-through wrapper",
        "Q": "the quiet path's test",
        "M": "tfstudio's wrapper",
    }
    bench.report({k: [f"{k}{i}" for i in range(args.traces)] for k in labels}, labels, "G")


if __name__ == "__main__":
    main()
