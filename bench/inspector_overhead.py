"""What the inspector costs a training run: interleaved twins, its own share, and TensorBoard.

Three measurements on the small MLP of ``bench_model.py``, in one process:

1. **R with the inspector on** at its default budget (3%): the method of
   ``bench/overhead.py`` (bare twins A and B and a monitored twin, single steps in
   random order, the pump's CPU charged, the bare/bare control), the monitored twin
   now a default run *with* the inspector. Its budget is scheduled on the monitored
   twin's own clock (``Inspector.clock``), as in a run of its own: interleaved, the
   wall clock would also run through the bare twins' steps.
2. **The inspector's own share of a 2,000-step fit**, first sample and traces
   included: a fresh model's first ``model.fit`` (the real one, through the
   interceptor, with the worker's pump, advisor, recorder and viewer), timing every
   call into the inspector on the training thread (set-up, arming, samples, its end)
   plus the extra time of each step that recorded the gradients (an armed step: its
   time minus the median unarmed step) and the time the recording added to Keras's
   trace of the step (``GradientProbe.trace_seconds``), over the fit's wall time minus
   that. The cost of the untaken branch in every step is in R (1.), not here.
3. **TensorBoard at equal information**: every N steps (``--every``), weights and
   gradients as histograms, both ways, interleaved step by step with bare twins and
   a monitored twin with the inspector off. TensorBoard side: a Keras callback that
   every N steps writes ``tf.summary.histogram`` of every trainable variable and of
   its gradient (one traced ``tf.function``: a forward/backward pass on a fixed batch
   of the data, then the histograms; Keras's ``TensorBoard(histogram_freq=...)``
   only writes weights, per epoch). Inspector side: ``sample_every=N`` (weights:
   stats and a 30-bin histogram; gradients: norm, min, max and a 30-bin histogram of
   the step's own gradients).
   Layer outputs are switched off on the inspector side for this comparison
   (``--with-outputs`` keeps them). Costs: TensorBoard's = its step time over bare;
   the inspector's = the twin with the inspector over the twin without it (both
   monitored, pump charged). Both sides' traces are made before timing (2N+1 untimed steps).

    python bench/inspector_overhead.py   (= python bench/overhead.py --inspector)

Ends: ``overhead: tensorboard cost / inspector cost = X``, the share line, the time
of the calls into the inspector during (1.) (its share of the monitored twins' own
time: what of R is the inspector's budget at work), the control and
``overhead: monitored/bare = R`` (1).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from interleave import OwnClock, stepped_fit  # noqa: E402
from overhead import (  # noqa: E402
    STEPS_PER_EPOCH,
    WorkerSide,
    compare_blocks,
    finish,
    machine_line,
    steps_of,
    twin,
)


def inspector_sides(worker: WorkerSide, name: str) -> Any:
    """``make_sides``: one monitored twin on ``worker``, the inspector on its own clock."""
    from tfstudio.engine.probes.inspector import Inspector

    def make(block: int, epochs: int) -> dict[str, Any]:
        clock = OwnClock()
        Inspector.clock = clock
        gen = worker.fit(*twin(), epochs=epochs)
        return {name: (steps_of(gen), clock, worker.pump_cpu, lambda: finish(gen))}

    return make


class InspectorCalls:
    """While entered, the wall time of the calls into the inspector (its hooks from the
    batch callback: ``begin``, ``at_step``, ``end``, on the training thread) made during
    the interleaved rounds (``Interleaved.run``: the steps R is computed from)."""

    HOOKS = ("begin", "at_step", "end")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._rounds = False
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> InspectorCalls:
        from interleave import Interleaved

        from tfstudio.engine.probes.inspector import Inspector

        for hook in self.HOOKS:
            self._patch(Inspector, hook, self._timed(getattr(Inspector, hook)))
        self._patch(Interleaved, "run", self._rounds_of(Interleaved.run))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    def _rounds_of(self, original: Any) -> Any:
        def run(bench: Any, *args: Any, **kwargs: Any) -> Any:
            self._rounds = True
            try:
                return original(bench, *args, **kwargs)
            finally:
                self._rounds = False

        return run

    def _timed(self, original: Any) -> Any:
        def call(inspector: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._rounds:
                return original(inspector, *args, **kwargs)
            started = time.perf_counter()
            try:
                return original(inspector, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        return call


class HistogramWriter:
    """A Keras callback writing weight and gradient histograms every ``every`` steps.

    Gradients come from one forward/backward pass on a fixed batch (the data's first),
    inside one traced ``tf.function`` that also writes every histogram.
    """

    def __init__(self, model: Any, data: Any, every: int, logdir: str) -> None:
        import keras
        import tensorflow as tf

        x, y = next(iter(data))
        writer = tf.summary.create_file_writer(logdir)
        variables = model.trainable_variables
        loss_fn = model.loss

        @tf.function
        def write(step: Any) -> None:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, variables)
            with writer.as_default(step=step):
                for v, g in zip(variables, grads, strict=True):
                    tf.summary.histogram(v.path, v)
                    tf.summary.histogram(f"{v.path}/gradient", g)

        class Callback(keras.callbacks.Callback):
            def __init__(self) -> None:
                super().__init__()
                self.step = 0

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                self.step += 1
                if self.step % every == 0:
                    write(tf.constant(self.step, tf.int64))

        self.callback = Callback()
        self.writer = writer


def equal_information(args: argparse.Namespace) -> tuple[float, float, float, str]:
    """TensorBoard vs inspector, every N steps: ``(tb cost, inspector cost, control, line)``."""
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.probes.activations import ActivationProbe

    sample_outputs = ActivationProbe.sample
    if not args.with_outputs:  # equal information: weights and gradients only
        ActivationProbe.sample = lambda self, fit_index, step: None  # type: ignore[method-assign]
    with_inspector = WorkerSide(RunOptions(sample_every=args.every))
    without = WorkerSide(RunOptions(inspector=False))
    tb_dir = tempfile.TemporaryDirectory(prefix="tfstudio-bench-tb-")

    def make(block: int, epochs: int) -> dict[str, Any]:
        model, data = twin()
        writer = HistogramWriter(model, data, args.every, f"{tb_dir.name}/{block}")
        tb = stepped_fit(
            model,
            data,
            epochs=epochs,
            steps_per_epoch=STEPS_PER_EPOCH,
            callbacks=[writer.callback],
        )
        insp = with_inspector.fit(*twin(), epochs=epochs)
        mon = without.fit(*twin(), epochs=epochs)
        return {
            "tensorboard": (steps_of(tb), None, None, lambda: finish(tb)),
            "inspector": (steps_of(insp), None, with_inspector.pump_cpu, lambda: finish(insp)),
            "monitored": (steps_of(mon), None, without.pump_cpu, lambda: finish(mon)),
        }

    # Both sides' traces are made before timing: 2N+1 untimed steps.
    result = compare_blocks(make, args.blocks, args.rounds, args.alone, warm=2 * args.every + 1)
    ActivationProbe.sample = sample_outputs  # type: ignore[method-assign]
    with_inspector.close()
    without.close()
    tb_dir.cleanup()
    bare = statistics.fmean(result.bare)

    def charged(side: str) -> float:
        return statistics.fmean(result.sides[side]) + statistics.fmean(result.charge[side])

    tb_cost = statistics.fmean(result.sides["tensorboard"]) / bare - 1
    insp_cost = charged("inspector") / charged("monitored") - 1
    what = "weights, gradients and layer outputs" if args.with_outputs else "weights, gradients"
    line = (
        f"every {args.every} steps ({what}): TensorBoard histograms cost {tb_cost:+.2%} "
        "of a bare step, "
        f"the inspector {insp_cost:+.2%} of a monitored step "
        f"(bare {1 / bare:,.0f}, tensorboard "
        f"{1 / statistics.fmean(result.sides['tensorboard']):,.0f}, monitored "
        f"{1 / charged('monitored'):,.0f}, inspector {1 / charged('inspector'):,.0f} steps/s)"
    )
    return tb_cost, insp_cost, result.control(), line


def own_share(steps: int) -> tuple[float, str]:
    """The inspector's share of a fresh model's first ``steps``-step fit: ``(share, line)``."""
    import keras

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.instrument import FitInterceptor
    from tfstudio.engine.probes.inspector import Inspector, _gradient_probes

    Inspector.clock = time.perf_counter
    spent = [0.0]
    saved = {name: getattr(Inspector, name) for name in ("begin", "at_step", "end")}

    def timed(method: Any) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return method(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t

        return call

    step_times: list[float] = []
    armed: list[bool] = []
    began = [0.0]
    model, data = twin(seed=1)

    class Before(keras.callbacks.Callback):  # last batch-begin hook before the step
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            probe = _gradient_probes.get(model)
            armed.append(bool(probe is not None and probe.armed))
            began[0] = time.perf_counter()

    class After(keras.callbacks.Callback):  # first batch-end hook after it
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            step_times.append(time.perf_counter() - began[0])

    worker = WorkerSide(RunOptions())
    for name, method in saved.items():
        setattr(Inspector, name, timed(method))
    try:
        with FitInterceptor(worker.monitor):
            start = time.perf_counter()
            model.fit(
                data,
                epochs=steps // STEPS_PER_EPOCH,
                steps_per_epoch=STEPS_PER_EPOCH,
                verbose=0,
                callbacks=[After(), Before()],
            )
            wall = time.perf_counter() - start
    finally:
        for name, method in saved.items():
            setattr(Inspector, name, method)
    worker.close()
    probe = _gradient_probes.get(model)
    traced = probe.trace_seconds if probe is not None else 0.0
    plain = statistics.median(t for t, a in zip(step_times, armed, strict=False) if not a)
    # the first step is Keras's trace (the recording's part of it is ``traced``)
    recorded = [t for t, a in list(zip(step_times, armed, strict=False))[1:] if a]
    extra = sum(max(t - plain, 0.0) for t in recorded)
    inspector = spent[0] + extra + traced
    share = inspector / (wall - inspector)
    if probe is not None and probe._derived and probe._flag is None:
        way = "gradients derived from the optimizer's state: no op in the step"
    else:
        way = "gradients recorded in the step: its per-step cost is in R, not here"
    line = (
        f"inspector's own share of a {steps}-step first fit (first sample included): "
        f"{share:.2%} (inspector calls {spent[0] * 1e3:.0f} ms + recording steps' extra "
        f"{extra * 1e3:.0f} ms over {len(recorded)} steps + the recording's part of Keras's "
        f"trace {traced * 1e3:.0f} ms, of a {wall:.2f} s fit; median plain step "
        f"{plain * 1e3:.2f} ms; first step {step_times[0]:.2f} s; {way})"
    )
    return share, line


def main(argv: list[str] | None = None) -> None:
    """Run the three measurements and print their lines, the overhead line last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2, help="fresh sets of twins")
    parser.add_argument("--rounds", type=int, default=1500, help="interleaved steps per twin")
    parser.add_argument("--alone", type=int, default=1500, help="monitored steps alone (charge)")
    parser.add_argument("--every", type=int, default=50, help="histograms every N steps (3.)")
    parser.add_argument(
        "--with-outputs", action="store_true", help="(3.) the inspector also samples layer outputs"
    )
    parser.add_argument("--share-steps", type=int, default=2000, help="the fit of (2.)")
    args = parser.parse_args(argv)

    from tfstudio.core.options import RunOptions

    print("1. R, the inspector at its default budget", flush=True)
    from tfstudio.engine.probes.inspector import Inspector

    options = RunOptions()
    worker = WorkerSide(options)
    try:
        with InspectorCalls() as calls:
            result = compare_blocks(
                inspector_sides(worker, "inspector"), args.blocks, args.rounds, args.alone
            )
    finally:
        Inspector.clock = time.perf_counter  # the twins' own clocks are done
    worker.close()
    r_line = result.line("inspector")
    timed = sum(result.sides["inspector"])  # the monitored steps R is computed from
    calls_line = (
        f"inspector calls in (1.): {calls.seconds * 1000:.0f} ms in {calls.calls:,} calls "
        f"during the interleaved steps, {calls.seconds / timed:.2%} of the monitored twin's "
        f"steps there (its budget: {options.inspector_budget:.0%}; the rest of 1 - R is "
        "monitoring and the charged helper threads)"
    )
    print("2. the inspector's own share of a first fit", flush=True)
    share, share_line = own_share(args.share_steps)
    print(f"3. TensorBoard at equal information, every {args.every} steps", flush=True)
    tb_cost, insp_cost, tb_control, tb_line = equal_information(args)
    print(machine_line())
    print(tb_line)
    print(f"control (3.): bare/bare = {tb_control:.4f}")
    ratio = tb_cost / insp_cost if insp_cost > 0 else float("inf")
    print(f"overhead: tensorboard cost / inspector cost = {ratio:.1f}")
    print(share_line)
    print(calls_line)
    print(r_line)
    print(f"control: bare/bare = {result.control():.4f}")
    print(f"overhead: monitored/bare = {result.ratio('inspector'):.4f}")


if __name__ == "__main__":
    main()
