"""The loop corpus: every way a script moves between eager and graph, run in a real worker.

Each script in tests/scripts/loops/ writes the losses it computed itself; a run of it
in a worker (as the window and ``tfstudio run`` run scripts) must announce each loop
once, named after the user's model or code, report every step with the very float32
the script computed, record the same in the run folder, and report no monitoring
failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.e2e.workers import of, run_in_worker
from tfstudio.core.events import ConsoleOutput, FitEnded, FitStarted, MonitorError, StepEnded
from tfstudio.core.options import RunOptions
from tfstudio.core.runs import list_runs, read_scalars

pytestmark = pytest.mark.tf

LOOPS = Path(__file__).resolve().parents[1] / "scripts" / "loops"

Expected = list[dict[str, list[float]]]  # per loop: value key -> the script's own values


def _by_counts(own: dict[str, Any]) -> Expected:
    """``own["losses"]`` cut into loops of ``own["loops"]`` steps each."""
    out, start = [], 0
    for n in own["loops"]:
        out.append({"loss": own["losses"][start : start + n]})
        start += n
    assert start == len(own["losses"])
    return out


def _gan_after_loop(own: dict[str, Any]) -> Expected:
    return [
        {"loss": own["pretrain"]},
        {"loss (discriminator)": own["d"], "loss (generator)": own["g"]},
    ]


def _gan(own: dict[str, Any]) -> Expected:
    return [{"loss (discriminator)": own["d"], "loss (generator)": own["g"]}]


def _one(own: dict[str, Any]) -> Expected:
    return [{"loss": own["losses"]}]


# script -> (the loops' names, in order; the script's values per loop)
CASES: dict[str, tuple[list[str], Callable[[dict[str, Any]], Expected]]] = {
    # issue 53: an eager loop, then the same step in a tf.function (same model, optimizer
    # and metric); main reported 1 loop, 48 of 80 steps
    "eager_then_graph.py": (["model", "model"], _by_counts),
    # one eager step, then the same step in a tf.function: not a GAN's second model
    "one_eager_step.py": (["model", "model"], _by_counts),
    # a new shape (a short last batch), a relaxed shape, then a new dtype: one loop
    "retraced.py": (["model"], _by_counts),
    # two tf.functions, an eager loop, the first function again: one model and optimizer
    "shared_optimizer.py": (["model"] * 4, _by_counts),
    # an eager loop with a Keras metric, then a GAN tf.function (two optimizers, the
    # discriminator's shared with the first loop); main failed reading the metric in
    # the GAN's trace and lost the first loop's last step
    "gan_after_loop.py": (["discriminator", "discriminator + generator"], _gan_after_loop),
    # a tf.Module and assign_sub in functions; then bare variables at the top level
    # (main named that loop "_serve", a function of tfstudio's worker); then a module a
    # trainer object holds (main named the loop after the method, "train_step")
    "module_assign.py": (["my_model", "w, b", "line"], _by_counts),
    # already in the corpus: a tf.function retraced by a Python scalar, and a GAN
    "graph_step.py": (["model"], _one),
    "gan.py": (["discriminator + generator"], _gan),
    # a compiled model trained by train_on_batch: main named the loop "self" (Keras's
    # train_step) and failed reading its compiled metrics (one metric holding several)
    "train_on_batch.py": (["model"], _one),
    # a LossScaleOptimizer's scaled loss: main plotted loss and gradient norm x 32768
    "mixed_precision.py": (["model", "model"], _by_counts),
    # an optimizer's own loss_scale_factor (scale_loss of the base optimizer), likewise
    "loss_scale_factor.py": (["model"], _one),
    # a dataset loop inside the tf.function (16 steps a call): main failed looking for
    # metrics among autograph's loop variables (Undefined, whose every attribute is itself)
    "epoch_function.py": (["model"], _one),
}


def _bits(values: list[float]) -> list[int]:
    """Each value as its float32 bit pattern (NaN compares equal to itself this way)."""
    return np.asarray(values, dtype=np.float32).view(np.int32).tolist()


@pytest.mark.parametrize("script", list(CASES))
def test_every_loop_and_step_of_the_corpus_is_reported_as_the_script_computed_it(
    script: str, tmp_path: Path
) -> None:
    names, expect = CASES[script]
    out = tmp_path / "own.json"
    runs = tmp_path / "runs"
    ended, events = run_in_worker(LOOPS / script, [str(out)], RunOptions(logdir=str(runs)))
    assert ended.status == "finished", ended.summary()
    failures = [e for e in events if isinstance(e, MonitorError)]
    assert not failures, failures
    own = json.loads(out.read_text())
    per_loop = expect(own)

    loops = [e for e in events if isinstance(e, FitStarted)]
    assert [f.kind for f in loops] == ["loop"] * len(names)
    assert [f.model.name for f in loops] == names
    assert len({f.fit_index for f in loops}) == len(loops)  # each announced once
    assert ended.loops == len(names) and ended.fits == 0

    steps = of(events, StepEnded)
    total = sum(len(next(iter(v.values()))) for v in per_loop)
    assert [s.global_step for s in steps] == list(range(1, total + 1))
    assert ended.global_step == total
    recorded_loss: list[float] = []
    for loop, values in zip(loops, per_loop, strict=True):
        mine = [s for s in steps if s.fit_index == loop.fit_index]
        assert mine and mine[0].global_step == loop.global_step + 1
        for key, theirs in values.items():
            assert len(mine) == len(theirs), (loop.title(), key)
            got = [s.values.get(key, float("nan")) for s in mine]
            assert _bits(got) == _bits(theirs), (loop.title(), key, got, theirs)
        recorded_loss.extend(values.get("loss", []))

    # each loop's lines go where it began and ended among the script's output: marks in
    # order, a loop begins where the one before it ended, and at a line's end (before
    # the first line its steps print)
    printed = [e for e in events if isinstance(e, ConsoleOutput) and e.stream == "stdout"]
    stdout = "".join(e.text for e in printed)  # (ASCII: a byte is a character)
    marks = [e.output for e in events if isinstance(e, FitStarted | FitEnded)]
    assert None not in marks and marks == sorted(marks), marks
    for before, after in zip(marks[1::2], marks[2::2], strict=False):
        assert after == before  # loop k+1 began where loop k ended
    assert all(stdout[: m[0]].endswith("\n") or m[0] == 0 for m in marks[::2])
    if script == "eager_then_graph.py":  # the graph loop begins before its first epoch
        begin = loops[1].output[0]
        assert stdout[:begin].splitlines()[-1].startswith("eager epoch 1 ")
        assert stdout[begin:].startswith("graph epoch 0 ")

    if script == "train_on_batch.py":  # its compiled metric, read between two batches,
        running = [(s.global_step, s.running["binary_accuracy"]) for s in steps if s.running]
        assert running  # goes with the batch it holds, as the script's own logs have it
        assert all(v == own["accuracy"][k - 1] for k, v in running), running

    if script in ("mixed_precision.py", "loss_scale_factor.py"):  # the norm of the gradients
        norms = [(s.global_step, v) for s in steps for k, v in s.values.items() if "norm" in k]
        # (mixed_precision: every eager step's and the graph loop's sampled ones)
        assert len(norms) > (16 if script == "mixed_precision.py" else 1), norms
        for k, v in norms:
            assert v == pytest.approx(own["norms"][k - 1], rel=1e-5), (k, v)

    # the run folder holds the same: one step/loss point a step, the script's values
    (run,) = list_runs(runs)
    scalars = read_scalars(run.path)
    if recorded_loss and len(recorded_loss) == total:
        loss = scalars["step/loss"]
        assert loss.steps == list(range(1, total + 1))
        assert _bits(loss.values) == _bits(recorded_loss)
