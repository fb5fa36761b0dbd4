"""What an inspector sample costs on the training thread, the variables' old read path vs the new.

A sample reads variables three ways: the weights summarised on the host copy every
trainable variable out; a layer-output probe snapshots every variable it may write and
puts it back (the eager pass: every variable of the model); the gradient probe reads
its three buffers. The old path was the public one (``variable.numpy()``,
``read_value()`` and ``assign()``), the new one a raw ``ReadVariableOp`` /
``AssignVariableOp`` (``tfstudio/engine/probes/values.py``). Both are timed here on the
same model, call by call in a fresh random order each round, with a control (the new
path against itself) that shows the method's resolution.

Two models: the benchmarks' MLP (6 variables) and a deeper one (``--layers`` Dense
layers with batch normalisation: 4 variables a layer, 2 of them trainable).

    python bench/probe_reads.py [--rounds 300] [--layers 30]

Prints, per model and part, the median time of a call each way and their ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))


@contextmanager
def old_restored(variables: list[Any]) -> Any:
    """The snapshot and restore before this change: ``read_value()`` and ``assign()``."""
    tf_vars = [getattr(v, "value", v) for v in variables]
    saved = [(v, v.read_value()) for v in tf_vars]
    try:
        yield
    finally:
        for variable, value in saved:
            variable.assign(value)


def deep_model(layers: int) -> tuple[Any, Any]:
    """``layers`` Dense + BatchNormalization blocks on 32 features, and a probe batch."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    body = []
    for _ in range(layers):
        body += [keras.layers.Dense(32, activation="relu"), keras.layers.BatchNormalization()]
    model = keras.Sequential([keras.Input((32,)), *body, keras.layers.Dense(10)])
    x = np.random.default_rng(0).normal(size=(8, 32)).astype("float32")
    model(x)
    return model, x


def parts(model: Any, inputs: Any) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """``{part: (old call, new call)}`` for one model."""
    import numpy as np

    from tfstudio.engine.probes import activations
    from tfstudio.engine.probes.activations import ActivationProbe
    from tfstudio.engine.probes.values import host_values, variables_restored

    trainable = list(model.trainable_variables)

    def host_old() -> Any:
        return [np.asarray(v.numpy(), dtype=np.float32) for v in trainable]

    def host_new() -> Any:
        return [np.asarray(x, dtype=np.float32) for x in host_values(trainable)]

    def restore_old() -> None:
        with old_restored(model.variables):
            pass

    def restore_new() -> None:
        with variables_restored(model.variables):
            pass

    probe = ActivationProbe(model, inputs, lambda text: None)
    probe.allow_trace = False  # the eager pass, as under the budget until its trace is paid

    def eager_old() -> Any:
        activations.variables_restored = old_restored
        try:
            return probe.sample(0, 1)
        finally:
            activations.variables_restored = variables_restored

    def eager_new() -> Any:
        return probe.sample(0, 1)

    return {
        "host weights (read)": (host_old, host_new),
        "snapshot + restore": (restore_old, restore_new),
        "eager layer outputs": (eager_old, eager_new),
    }


def interleave(
    calls: dict[str, Callable[[], Any]], rounds: int, seed: int = 0
) -> dict[str, list[float]]:
    """Each call once per round, in a fresh random order; every call timed."""
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for name in names:  # warm: first calls trace and allocate
        for _ in range(3):
            calls[name]()
    clock = time.perf_counter
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            t = clock()
            calls[name]()
            times[name].append(clock() - t)
    return times


def main(argv: list[str] | None = None) -> None:
    """Time each part both ways on both models and print one line a part."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--layers", type=int, default=30)
    args = parser.parse_args(argv)

    from bench_model import mlp_and_data
    from overhead import machine_line

    from tfstudio.engine.probes.activations import probe_batch

    mlp, data = mlp_and_data()
    mlp.fit(data, epochs=1, steps_per_epoch=5, verbose=0)
    models = {"MLP": (mlp, probe_batch(data))}
    deep, x = deep_model(args.layers)
    models[f"deep ({len(deep.variables)} variables)"] = (deep, x)
    print(machine_line())
    for label, (model, inputs) in models.items():
        for part, (old, new) in parts(model, inputs).items():
            times = interleave({"old": old, "new": new, "control": new}, args.rounds)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(
                f"{label}, {part}: old {med['old'] * 1e3:.3f} ms, new {med['new'] * 1e3:.3f} ms"
                f", new/old {med['new'] / med['old']:.3f} (control new/new "
                f"{med['new'] / med['control']:.3f}), {args.rounds} rounds",
                flush=True,
            )


if __name__ == "__main__":
    main()
