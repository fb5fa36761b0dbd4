"""Custom loops: gradient norms in graph loops, the inspector's views, checkpoints and LR."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import wait_for
from tests.engine.helpers import console, of, run_script
from tests.engine.test_controls import pause, wait_event
from tests.engine.test_stop_pause import Collector
from tfstudio.core.channel import Channel
from tfstudio.core.commands import (
    RestoreCheckpoint,
    Resume,
    SaveCheckpoint,
    SetLearningRate,
    Stop,
)
from tfstudio.core.events import (
    CheckpointRestored,
    CheckpointSaved,
    FitStarted,
    GradientStats,
    InspectorStatus,
    LearningRate,
    ModelTree,
    StepEnded,
    WeightStats,
)
from tfstudio.core.options import RunOptions
from tfstudio.engine.loop_inspect import LOOP_OUTPUTS_OFF
from tfstudio.engine.session import TrainingSession

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ROOT / "tests" / "scripts" / "loops"


def _close(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6), (x, y)


NORM = "gradient norm (sampled)"  # a graph loop's norm: at the twin's (sampled) steps


def _norm_steps(steps: list[StepEnded], key: str, norms: list[float]) -> list[int]:
    """The steps that report ``key``; each value must equal the loop's own norm of its step."""
    found = []
    for s in steps:
        if key in s.values:
            value, own = s.values[key], norms[s.global_step - 1]
            assert math.isclose(value, own, rel_tol=1e-5, abs_tol=1e-6), (s.global_step, key)
            found.append(s.global_step)
    return found


def _run(script: str, tmp_path: Path, *args: str, **options) -> tuple[object, list, dict]:
    out = tmp_path / "own.json"
    ended, events = run_script(
        LOOPS / script, [str(out), *args], capture_output=False, options=RunOptions(**options)
    )
    assert ended.status == "finished", ended.summary()
    return ended, events, json.loads(out.read_text())


def _plain_python(script: str, tmp_path: Path) -> dict:
    """What a loop script writes under plain Python (no tfstudio variable in its env)."""
    out = tmp_path / "plain.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFSTUDIO")}
    done = subprocess.run(
        [sys.executable, str(LOOPS / script), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_graph_loop_reports_gradient_norms_and_the_inspector_views(tmp_path: Path) -> None:
    _, events, own = _run("graph_norms.py", tmp_path, sample_every=3)
    steps = of(events, StepEnded)
    assert len(steps) == 12
    _close([s.values["loss"] for s in steps], own["losses"])
    # the norm: at every sampled step (the twin's), each the loop's own
    assert _norm_steps(steps, NORM, own["norms"]) == [2, 5, 8, 11]
    # the model tree of the Keras model the loop trains (the Model dock shows it)
    (tree,) = of(events, ModelTree)
    assert tree.root.name == "regressor"
    assert [c.name for c in tree.root.children][-2:] == ["hidden", "out"]
    # gradients of the sampled steps, per variable, equal the loop's own tf.norm
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [2, 5, 8, 11]
    for g in grads:
        mine = own["per_variable"][g.step - 1]
        assert {v.path for v in g.variables} == set(mine)
        for v in g.variables:
            assert math.isclose(v.norm, mine[v.path], rel_tol=1e-5), (g.step, v.path)
            assert sum(v.hist) == int(np.prod(np.shape(own["final"][v.path])))
        assert math.isclose(g.global_norm, own["norms"][g.step - 1], rel_tol=1e-5)
    weights = of(events, WeightStats)
    assert [w.step for w in weights] == [2, 5, 8, 11]
    assert {v.path for v in weights[-1].variables} == set(own["final"])
    statuses = of(events, InspectorStatus)
    assert len(statuses) == 4
    assert all(s.outputs_off == LOOP_OUTPUTS_OFF for s in statuses)  # the views say why


@pytest.mark.parametrize("mode", ["graph", "eager", "two"])
def test_gan_loop_reports_both_gradient_norms_and_one_sample_per_step(tmp_path, mode) -> None:
    _, events, own = _run("gan_norms.py", tmp_path, mode, sample_every=5)
    steps = of(events, StepEnded)
    assert len(steps) == 15
    if mode == "eager":  # an eager loop measures every step's norm
        d_key, g_key = "gradient norm (discriminator)", "gradient norm (generator)"
    else:
        d_key = "gradient norm (discriminator, sampled)"
        g_key = "gradient norm (generator, sampled)"
    d_steps = _norm_steps(steps, d_key, own["d"])
    g_steps = _norm_steps(steps, g_key, own["g"])
    if mode == "eager":
        assert d_steps == g_steps == list(range(1, 16))
    else:  # one tf.function for both updates, or two: a sample runs each one's twin
        assert d_steps == g_steps == [2, 7, 12]
    (tree,) = of(events, ModelTree)
    assert [c.name for c in tree.root.children] == ["discriminator", "generator"]
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [2, 7, 12]
    for g in grads:  # one event holds both models' gradients
        prefixes = {v.path.split("/")[0] for v in g.variables}
        assert prefixes == {"discriminator", "generator"}
        total = math.hypot(own["d"][g.step - 1], own["g"][g.step - 1])
        assert math.isclose(g.global_norm, total, rel_tol=1e-5)


def test_eager_loop_samples_weights_and_gradients(tmp_path: Path) -> None:
    ended, events = run_script(
        ROOT / "resources/examples/basic_training_loop.py",
        capture_output=False,
        options=RunOptions(sample_every=100),
    )
    assert ended.status == "finished"
    steps = of(events, StepEnded)
    (tree,) = of(events, ModelTree)
    assert tree.root.name == "linear" and {v.name for v in tree.root.variables} >= {"W:0", "b:0"}
    weights = of(events, WeightStats)
    assert [w.step for w in weights] == [2, 102, 202]
    by_step = {s.global_step: s.values for s in steps}
    for w in weights:
        values = {v.path.split(":")[0]: v.values[0] for v in w.variables}
        # sampled after the step's update: the values the next step's loss is computed with
        assert math.isclose(values["W"], by_step[w.step + 1]["W"], rel_tol=1e-6)
        assert math.isclose(values["b"], by_step[w.step + 1]["b"], rel_tol=1e-6)
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [2, 102, 202]
    for g in grads:
        assert math.isclose(g.global_norm, by_step[g.step]["gradient norm"], rel_tol=1e-5)


def _weight_paths(monkeypatch) -> list[bool]:
    """Spy: for each weight summary of the run, whether it ran on the device (traced)."""
    from tfstudio.engine.probes.weights import WeightProbe

    calls: list[bool] = []
    real = WeightProbe.sample

    def sample(self, fit_index, step, traced=True):
        calls.append(traced)
        return real(self, fit_index, step, traced=traced)

    monkeypatch.setattr(WeightProbe, "sample", sample)
    return calls


@pytest.mark.parametrize(
    ("host_cheap_s", "credit", "fixed", "traced"),
    [
        (None, None, 0, False),  # a small model's host summary is cheap: never traced
        (0.0, -1.0, 0, False),  # an expensive one waits while the budget has no credit
        (0.0, math.inf, 0, True),  # ... and is traced once the credit covers the estimate
        (None, None, 3, True),  # a fixed cadence has no budget: traced from the second
    ],
)
def test_a_loops_weights_are_summarised_on_the_host_until_a_trace_pays(
    tmp_path, monkeypatch, host_cheap_s, credit, fixed, traced
) -> None:
    from tfstudio.engine.probes import inspector
    from tfstudio.engine.probes.cadence import Cadence

    if host_cheap_s is not None:
        monkeypatch.setattr(inspector, "HOST_WEIGHTS_CHEAP_S", host_cheap_s)
    if credit is not None:
        monkeypatch.setattr(Cadence, "credit", lambda self, train: credit)
    calls = _weight_paths(monkeypatch)
    _, events, own = _run("graph_norms.py", tmp_path, "40", sample_every=fixed)
    assert len(calls) >= 2 and calls[0] is False, calls  # the first sample: no trace
    assert set(calls[1:]) == {traced}, calls
    weights = of(events, WeightStats)
    assert len(weights) == len(calls)
    assert {v.path for v in weights[-1].variables} == set(own["final"])


def test_inspector_off_means_no_inspector_events_and_norms_on_the_cadence(tmp_path) -> None:
    _, events, own = _run("graph_norms.py", tmp_path, "25", inspector=False)
    assert not of(events, GradientStats) and not of(events, WeightStats)
    steps = of(events, StepEnded)
    _close([s.values["loss"] for s in steps], own["losses"])  # every step's loss
    # the norm on the budget's cadence: steps 2 and 12 (the first gap is 10 steps), then
    # at most one a second
    assert _norm_steps(steps, NORM, own["norms"]) == [2, 12]
    _, events, own = _run("graph_norms.py", tmp_path, "25", inspector=False, sample_every=4)
    assert _norm_steps(of(events, StepEnded), NORM, own["norms"]) == [2, 6, 10, 14, 18, 22]


def test_an_xla_compiled_step_reports_every_loss_and_its_sampled_norms(tmp_path: Path) -> None:
    # jit_compile=True: the ring's writes (the norm row with its step number) are compiled
    # with the step, in its own graph and in its twin's
    _, events, own = _run("graph_norms.py", tmp_path, "20", "jit", inspector=False)
    steps = of(events, StepEnded)
    _close([s.values["loss"] for s in steps], own["losses"])
    assert _norm_steps(steps, NORM, own["norms"]) == [2, 12]


def test_a_step_with_a_stateful_random_op_keeps_its_draws_and_measures_every_norm(
    tmp_path: Path,
) -> None:
    # A twin would have its own copy of tf.random.normal, starting its draws over:
    # the function's own graph measures the norm instead, at every step.
    plain = _plain_python("random_step.py", tmp_path)
    _, events, own = _run("random_step.py", tmp_path, inspector=False)
    assert own == plain  # bit for bit: losses, weights, next draw
    steps = of(events, StepEnded)
    assert [s.values["loss"] for s in steps] == own["losses"]
    assert _norm_steps(steps, "gradient norm", own["norms"]) == list(range(1, 26))


def test_with_the_inspector_on_a_stateful_random_step_keeps_its_draws_and_says_why(
    tmp_path: Path,
) -> None:
    # The inspector's recording twin would replay tf.random.normal's draws as well: no
    # twin for such a step, one note, and the script computes what it computes alone.
    plain = _plain_python("random_step.py", tmp_path)
    _, events, own = _run("random_step.py", tmp_path, sample_every=2)
    assert own == plain  # bit for bit: losses, weights, next draw
    assert "draws from a stateful random op" in console(events)
    assert not of(events, GradientStats)


def test_graph_steps_read_in_batches_get_times_spread_between_reads(tmp_path: Path) -> None:
    _, events, own = _run("graph_norms.py", tmp_path, "400", inspector=False)
    times = [s.time for s in of(events, StepEnded)]
    assert len(times) == 400
    assert times == sorted(times)
    # a read takes ~200 ms of steps at once; each gets its own time, not the read's
    assert len(set(times)) == len(times)
    (fit,) = of(events, FitStarted)
    assert fit.time <= times[0]


def test_every_sampled_step_reports_the_loops_own_norm(tmp_path: Path) -> None:
    # sampled at every step: every step from the first sample on runs the twin, whose
    # graph writes the norm (the sum of the gradients' l2_loss, on the device)
    _, events, own = _run("graph_norms.py", tmp_path, sample_every=1)
    steps = of(events, StepEnded)
    _close([s.values["loss"] for s in steps], own["losses"])
    assert _norm_steps(steps, NORM, own["norms"]) == list(range(2, 13))


# -- checkpoints and learning rate ---------------------------------------------
def _start(*args: str, **options) -> tuple[TrainingSession, Collector]:
    options.setdefault("inspector", False)
    channel = Channel()
    session = TrainingSession(LOOPS / "long_loop.py", args, channel, options=RunOptions(**options))
    session.start()
    return session, Collector(channel)


def _state(control) -> dict[str, np.ndarray]:
    out = {f"var/{i}": v.numpy().copy() for i, v in enumerate(control.model.trainable_variables)}
    if control.optimizer is not None:
        for i, v in enumerate(control.optimizer.variables):
            out[f"opt/{i}/{v.path}"] = v.numpy().copy()
    return out


@pytest.mark.parametrize(
    ("mode", "update"), [("eager", "adam"), ("graph", "adam"), ("graph", "assign")]
)
def test_save_now_and_restore_a_custom_loop_bit_exact(tmp_path, mode, update) -> None:
    session, seen = _start(mode, update, checkpoint_dir=str(tmp_path / "ck"))
    try:
        wait_for(lambda: len(seen.steps()) >= 5)
        held = pause(seen)
        control = session.monitor.control
        assert seen.steps()[-1].global_step == held.global_step  # every step ran is reported
        seen.channel.send(SaveCheckpoint())
        saved = wait_event(seen, CheckpointSaved)
        assert saved.step == held.global_step
        at_save = _state(control)
        if update == "adam":
            assert int(control.optimizer.iterations.numpy()) == saved.step
        seen.channel.send(Resume())
        wait_for(lambda: seen.steps()[-1].global_step >= saved.step + 5)
        pause(seen)
        moved = _state(control)
        assert any(not np.array_equal(moved[k], at_save[k]) for k in at_save)
        seen.channel.send(RestoreCheckpoint(saved.path))
        restored = wait_event(seen, CheckpointRestored)
        assert restored.step == saved.step
        after = _state(control)
        assert after.keys() == at_save.keys()
        for key, value in at_save.items():
            np.testing.assert_array_equal(after[key], value, err_msg=key)
        if update == "adam":
            assert restored.optimizer_iterations == saved.step
        # the steps go on from the restored step
        seen.channel.send(Resume())
        wait_for(lambda: seen.steps()[-1].global_step > saved.step + 2)
        after_restore = [s.global_step for s in seen.steps()]
        assert saved.step + 1 in after_restore[after_restore.index(saved.step) + 1 :]
    finally:
        seen.channel.send(Stop())
        ended = session.join(60)
    assert ended is not None and ended.status == "stopped"


def test_a_graph_loops_steps_are_all_counted_and_a_pause_holds_at_the_next_call() -> None:
    # Every step of a graph loop must be counted, and a command sent while a step runs
    # must be applied at the next call, with every step that ran reported.
    session, seen = _start("graph", "adam")
    try:
        wait_for(lambda: len(seen.steps()) >= 20)
        held = pause(seen)
        iterations = int(session.monitor.control.optimizer.iterations.numpy())
        assert held.global_step == iterations
        assert seen.steps()[-1].global_step == held.global_step
        seen.channel.send(Resume())
        wait_for(lambda: seen.steps()[-1].global_step >= held.global_step + 50)
        seen.channel.send(Stop())
        ended = session.join(60)
        assert ended is not None and ended.status == "stopped"
        iterations = int(session.monitor.control.optimizer.iterations.numpy())
        assert ended.global_step == iterations
        assert [s.global_step for s in seen.steps()] == list(range(1, iterations + 1))
    finally:
        seen.channel.send(Stop())
        session.join(60)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_learning_rate_line_and_set_in_a_custom_loop(mode) -> None:
    session, seen = _start(mode, "adam")
    try:
        first = wait_event(seen, LearningRate)
        assert math.isclose(first.value, 0.01, rel_tol=1e-6)
        pause(seen)
        seen.channel.send(SetLearningRate(0.002))
        wait_for(
            lambda: [
                e
                for e in of(seen.poll(), LearningRate)
                if math.isclose(e.value, 0.002, rel_tol=1e-6)
            ]
        )
        opt = session.monitor.control.optimizer
        assert math.isclose(float(opt.learning_rate.numpy()), 0.002, rel_tol=1e-6)
        assert of(seen.events, FitStarted)[0].kind == "loop"
    finally:
        seen.channel.send(Stop())
        ended = session.join(60)
    assert ended is not None and ended.status == "stopped"


def test_checkpoint_every_and_restore_at_start_in_a_graph_loop(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    _, events, first = _run(
        "graph_norms.py", tmp_path, checkpoint_every=4, checkpoint_dir=str(folder)
    )
    assert [c.step for c in of(events, CheckpointSaved)] == [4, 8, 12]
    # a second run restores the latest (step 12) when its loop is found, and goes on from there
    _, events, own = _run("graph_norms.py", tmp_path, "6", restore=str(folder))
    (restored,) = of(events, CheckpointRestored)
    assert (restored.step, restored.optimizer_iterations) == (12, 12)
    steps = of(events, StepEnded)
    # The loop is found at its first step, which ran with the fresh weights: the restore
    # comes right after it and the run's steps go on from the restored step 12.
    assert [s.global_step for s in steps] == list(range(13, 19))
    _close([s.values["loss"] for s in steps], own["losses"])
    # step 2 trains the restored weights: its loss is theirs (the first run's last
    # weights; each run's fresh weights are drawn anew, unseeded)
    weights = {
        path.split("/", 1)[-1]: np.asarray(v, "float32") for path, v in first["final"].items()
    }
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    hidden = np.maximum(x @ weights["hidden/kernel"] + weights["hidden/bias"], 0)
    out = hidden @ weights["out/kernel"] + weights["out/bias"]
    expected = float(np.mean(np.square(out - x.sum(axis=1, keepdims=True))))
    assert math.isclose(own["losses"][1], expected, rel_tol=1e-5), (own["losses"], expected)


def test_ring_buffer_wraps_and_names_overwritten_steps(tmp_path: Path, monkeypatch) -> None:
    import tfstudio.engine.loops.ring as ring

    # Read after the first call (the controls begin there) and at the end: of steps 2-20,
    # a ring of 8 keeps the last 8, so steps 2-12 were overwritten before they were read.
    monkeypatch.setattr(ring, "RING", 8)
    monkeypatch.setattr(ring, "READ_EVERY", 1000.0)
    _, events, own = _run("graph_norms.py", tmp_path, "20", inspector=False, sample_every=5)
    steps = of(events, StepEnded)
    assert [s.global_step for s in steps] == list(range(1, 21))  # no step is lost from the count
    assert math.isclose(steps[0].values["loss"], own["losses"][0], rel_tol=1e-5)
    assert all(math.isnan(s.values["loss"]) for s in steps[1:12])
    _close([s.values["loss"] for s in steps[12:]], own["losses"][12:])
    # the norm rows of steps 2, 7 and 12 are still in the norm ring, but their steps were
    # overwritten: only 17's
    assert _norm_steps(steps, NORM, own["norms"]) == [17]


def test_norm_ring_rows_overwritten_by_a_later_twin_are_not_reported(
    tmp_path: Path, monkeypatch
) -> None:
    import tfstudio.engine.loops.ring as ring

    # The twins run at steps 2 and 12 (0-based 1 and 11); a norm ring of 10 rows puts both
    # in row 1, and with one read after the first call and one at the end, step 12's row
    # has taken step 2's: step 2 reports its loss but no norm (not 12's norm, either).
    monkeypatch.setattr(ring, "NORM_RING", 10)
    monkeypatch.setattr(ring, "READ_EVERY", 1000.0)
    _, events, own = _run("graph_norms.py", tmp_path, "20", inspector=False, sample_every=10)
    steps = of(events, StepEnded)
    _close([s.values["loss"] for s in steps], own["losses"])  # every loss (RING is 16,384)
    assert _norm_steps(steps, NORM, own["norms"]) == [12]


def test_norm_rows_name_their_step_exactly_far_past_float32s_integers() -> None:
    import tensorflow as tf

    from tfstudio.engine.loops.ring import NORM_RING, GraphRing

    # The step number is kept as two float32 parts: exact where one float32 would not be
    # (2**40 + 3 is not a float32), and a row a lap of the norm ring ago is not this step's.
    ring = GraphRing()
    w = tf.Variable([3.0, 4.0])

    @tf.function
    def step(norm: bool) -> None:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        ring.write(tf, loss, [(w, tape.gradient(loss, w))], norm)

    start = 2**40 + 3
    step(True)  # makes the buffers; its row is step 0's
    ring.counter.assign(start)
    step(True)  # step `start`: gradient 2w = (6, 8), norm 10
    count, losses, norms, _ = ring.read(start)
    assert count == start + 1 and losses == [25.0] and norms == [10.0]
    ring.counter.assign(start + NORM_RING)
    step(False)  # the row of `start + NORM_RING`'s slot is still `start`'s: not this step's
    count, losses, norms, _ = ring.read(start + NORM_RING)
    assert count == start + NORM_RING + 1 and losses == [25.0]
    assert len(norms) == 1 and math.isnan(norms[0])
