"""Custom training loops are found with no edits: steps and losses equal the loop's own."""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import numpy as np
import pytest

from tests.engine.helpers import run_script
from tfstudio.core.events import (
    ExecutionMode,
    FitEnded,
    FitStarted,
    LearningRate,
    RunDevices,
    StepEnded,
    step_rows,
)

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ROOT / "tests" / "scripts" / "loops"


def _steps(events: list[object]) -> list[StepEnded]:
    return [e for e in step_rows(events) if isinstance(e, StepEnded)]


def _run(script: Path, tmp_path: Path, **kwargs) -> tuple[object, list[object], dict]:
    out = tmp_path / "losses.json"
    ended, events = run_script(script, [str(out)], capture_output=False, **kwargs)
    assert ended.status == "finished", ended.summary()
    return ended, events, json.loads(out.read_text()) if out.exists() else {}


def _close(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6), (x, y)


def test_eager_loop_with_apply_gradients(tmp_path: Path) -> None:
    ended, events, own = _run(LOOPS / "eager_apply.py", tmp_path)
    steps = _steps(events)
    assert [s.global_step for s in steps] == list(range(1, 13))
    _close([s.values["loss"] for s in steps], own["losses"])
    # the global gradient norm of each step, against tf.linalg.global_norm computed apart
    _close([s.values["gradient norm"] for s in steps], own["norms"])
    (fit,) = [e for e in events if isinstance(e, FitStarted)]
    assert fit.kind == "loop" and fit.title().startswith("loop 1: ")
    assert ended.loops == 1 and ended.fits == 0
    assert "0 fits, 1 loop, 12 steps" in ended.summary()
    assert [e.fit_index for e in events if isinstance(e, FitEnded)] == [0]
    import tensorflow as tf

    assert not hasattr(tf.GradientTape.gradient, "__wrapped__")  # restored after the run


def test_tf_function_step_retraced_reports_one_event_per_step(tmp_path: Path) -> None:
    _, events, own = _run(LOOPS / "graph_step.py", tmp_path)
    steps = _steps(events)
    assert len(steps) == 20  # two traces, still one event per step
    _close([s.values["loss"] for s in steps], own["losses"])


def test_a_fits_steps_are_the_fits_and_a_loop_after_it_is_monitored(tmp_path: Path) -> None:
    # The loop wrapper passes a fit's tf.function calls through (the fit's callback
    # monitors them): its 4 batches are the fit's steps, no loop's; the loop after the
    # fit is found, with every step's loss.
    _, events, own = _run(LOOPS / "fit_then_loop.py", tmp_path)
    fits = [e for e in events if isinstance(e, FitStarted)]
    assert [f.kind for f in fits] == ["fit", "loop"]
    steps = _steps(events)
    assert [s.fit_index for s in steps] == [fits[0].fit_index] * 4 + [fits[1].fit_index] * 6
    assert [s.global_step for s in steps] == list(range(1, 11))
    _close([s.values["loss"] for s in steps[4:]], own["losses"])


def test_gan_two_series_named_after_their_models(tmp_path: Path) -> None:
    ended, events, own = _run(LOOPS / "gan.py", tmp_path)
    steps = _steps(events)
    assert len(steps) == 15 and ended.loops == 1
    _close([s.values["loss (discriminator)"] for s in steps], own["d"])
    _close([s.values["loss (generator)"] for s in steps], own["g"])
    (fit,) = [e for e in events if isinstance(e, FitStarted)]
    assert fit.model.name == "discriminator + generator"


def test_assign_sub_basic_loop_example(tmp_path: Path) -> None:
    ended, events = run_script(ROOT / "resources/examples/basic_training_loop.py", preimport=False)
    assert ended.status == "finished"
    steps = _steps(events)
    assert len(steps) == 300
    assert "0 fits, 1 loop, 300 steps" in ended.summary()
    printed = "".join(getattr(e, "text", "") for e in events)
    first = float(printed.split("step   0: ")[1].split("loss=")[1].split()[0])
    assert math.isclose(steps[0].values["loss"], first, rel_tol=1e-4)
    (fit,) = [e for e in events if isinstance(e, FitStarted)]
    assert fit.title() == "loop 1: linear"
    # W and b (scalars) are value lines: the values the step's loss was computed with
    assert steps[0].values["W"] == 5.0 and steps[0].values["b"] == 0.0
    assert abs(steps[-1].values["W"] - 3.0) < 0.05 and abs(steps[-1].values["b"] - 2.0) < 0.05


@pytest.mark.parametrize("preimport", [True, False])
def test_saliency_and_evaluation_are_not_steps(tmp_path: Path, preimport: bool) -> None:
    ended, events, _ = _run(LOOPS / "saliency_eval.py", tmp_path, preimport=preimport)
    assert _steps(events) == []
    assert ended.loops == 0 and ended.global_step == 0


def test_explicit_log_reports_a_loop_tfstudio_cannot_see() -> None:
    ended, events = run_script(LOOPS / "explicit_api.py", capture_output=False)
    steps = _steps(events)
    assert [s.values["loss"] for s in steps] == [1.0 / k for k in range(1, 6)]
    assert [s.global_step for s in steps] == [1, 2, 3, 4, 5]
    assert ended.loops == 1 and "no fit was monitored" not in ended.message


def test_watch_names_the_loop() -> None:
    ended, events = run_script(LOOPS / "watched.py", capture_output=False)
    (fit,) = [e for e in events if isinstance(e, FitStarted)]
    assert fit.title() == "loop 1: regressor"
    assert len(_steps(events)) == 4


def test_loops_of_raw_variables_are_named_after_their_model_or_function(tmp_path: Path) -> None:
    # A keras.Model holding raw tf.Variables (Keras does not list them as its weights),
    # bare tf.Variables in a function, a module-level one in a tf.function: every
    # variable is called "Variable", and no loop may be.
    ended, events, own = _run(LOOPS / "keras_raw_variables.py", tmp_path)
    fits = [e for e in events if isinstance(e, FitStarted)]
    assert [f.model.name for f in fits] == ["line", "fit_bare", "graph_step"]
    steps = _steps(events)
    assert len(steps) == 15 and ended.loops == 3
    _close([s.values["loss"] for s in steps], own["losses"])
    # the value lines of the tiny models are named after the attributes or bindings
    assert steps[0].values["w"] == 5.0 and steps[0].values["b"] == 0.0
    assert steps[6].values["slope"] == 1.0 and steps[6].values["offset"] == 0.0
    assert not any("Variable" in key for s in steps for key in s.values)


def test_each_loop_says_whether_its_steps_run_eagerly_or_traced(tmp_path: Path) -> None:
    # The window's eager/graph label follows the loop that runs: an eager loop, then the
    # same step in a tf.function (traced once; its twin is not counted)
    _, events, _ = _run(LOOPS / "eager_then_graph.py", tmp_path)
    said = []
    for i, event in enumerate(events):
        if isinstance(event, FitStarted):
            said.append(next(e for e in events[i:] if isinstance(e, ExecutionMode)))
    assert [(m.eager, m.traces) for m in said] == [(True, 0), (False, 1)]


def test_monitoring_does_not_trace_a_step_function_again(tmp_path: Path) -> None:
    # tfstudio's buffers are made while the step traces; were they counted as the
    # function's own variables, TensorFlow would trace the script's function a second time
    # (twice the trace time, a trace-time print printed twice)
    _, events, own = _run(LOOPS / "traced_once.py", tmp_path)
    assert own["tracing_count"] == 1
    assert len(_steps(events)) == 30


def test_explicit_api_does_nothing_outside_tfstudio() -> None:
    import tfstudio.monitor as explicit

    assert explicit._sink is None  # no run: log and watch are no-ops
    explicit.log(1, loss=1.0)
    assert explicit.watch("anything") == "anything"


def test_importing_the_explicit_api_does_not_import_tensorflow() -> None:
    import subprocess
    import sys

    code = "import sys; from tfstudio import monitor; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_stop_at_step_ends_an_eager_custom_loop_between_steps() -> None:
    from tfstudio.core.options import RunOptions

    ended, events = run_script(
        ROOT / "resources/examples/basic_training_loop.py",
        options=RunOptions(stop_at_step=50),
        capture_output=False,
    )
    assert ended.status == "stopped", ended.summary()
    assert 50 <= ended.global_step <= 51
    assert len(_steps(events)) == ended.global_step


def test_a_recorded_loop_is_a_segment_of_the_run(tmp_path: Path) -> None:
    from tfstudio.core.options import RunOptions

    session_dir = tmp_path / "runs"
    ended, _ = run_script(
        LOOPS / "watched.py", capture_output=False, options=RunOptions(logdir=str(session_dir))
    )
    (info,) = [json.loads(p.read_text()) for p in session_dir.rglob("run.json")]
    (segment,) = info["segments"]
    assert segment["loop"] == 1 and segment["model"] == "regressor"
    assert segment["end_step"] == 4


def test_vae_with_add_loss(tmp_path: Path) -> None:
    _, events, own = _run(LOOPS / "vae.py", tmp_path)
    steps = _steps(events)
    assert len(steps) == 10
    _close([s.values["loss"] for s in steps], own["losses"])
    (fit,) = [e for e in events if isinstance(e, FitStarted)]
    assert fit.title() == "loop 1: vae"


def test_a_graph_loops_rate_set_by_the_script_and_its_schedule_are_sent(tmp_path: Path) -> None:
    # 2 s of scheduled steps: two points of the schedule are sent even when a loaded
    # machine starves the reader for a while (1 s failed now and then in parallel runs)
    ended, events = run_script(LOOPS / "graph_rate.py", ["2.0"], capture_output=False)
    assert ended.status == "finished", ended.summary()
    starts = [f.global_step for f in events if isinstance(f, FitStarted)]
    assert len(starts) == 2
    rates = [e for e in events if isinstance(e, LearningRate)]
    first = [(e.global_step, round(e.value, 6)) for e in rates if e.global_step <= starts[1]]
    # the rate set after step 20 is sent at step 20 (the steps after it use it), not lost:
    # a graph loop's calls run no step boundary unless the controls have work
    assert first[:2] == [(0, 0.01), (20, 0.002)]
    scheduled = [e for e in rates if e.global_step > starts[1]]
    assert len(scheduled) >= 2 and all(e.is_schedule for e in scheduled)
    for e in scheduled:  # each value is the schedule's at the step it is sent at
        step = e.global_step - starts[1]
        assert math.isclose(e.value, 0.1 * 0.5 ** (step / 100), rel_tol=1e-5), (step, e.value)


def test_an_eager_loops_own_keras_metrics_are_plotted_with_the_step_they_hold(tmp_path) -> None:
    """No graph tells an eager step's metrics: those its steps change are read at an
    update, and sent with the step before it (the guides update them after the
    optimizer), so each value is the script's own at that step, to the bit."""
    out = tmp_path / "history.npy"
    ended, events = run_script(LOOPS / "eager_metrics.py", ["1.0", str(out)], capture_output=False)
    assert ended.status == "finished", ended.summary()
    history = {int(s): (acc, n) for s, acc, n in np.load(out)}
    steps = _steps(events)
    sampled = [s for s in steps if s.running]
    assert len(sampled) >= 3, len(sampled)  # ~5 reads a second, and the last step's
    keys = set().union(*(s.running for s in sampled))
    assert keys == {"train_acc", "seen"}  # the validation metric is not the train step's
    start = steps[0].global_step - 1
    for s in sampled:  # a mean at each read, another metric at most twice a second
        acc, n = history[s.global_step - start]
        if "seen" in s.running:
            assert s.running["seen"] == n, (s.global_step, s.running, n)
        if "train_acc" in s.running:
            assert s.running["train_acc"] == pytest.approx(acc, rel=1e-6), (s, acc)
    assert sum("seen" in s.running for s in sampled) >= 2
    # read at the loop's end, for its last step (unless a read one step before it came
    # too close: samples go two steps apart)
    assert sampled[-1].global_step >= steps[-1].global_step - 1
    at = [s.global_step for s in sampled]
    assert all(b - a >= 2 for a, b in zip(at, at[1:], strict=False)), at
    assert len(steps) == len(history)  # every step, the held one included
    assert all(s.values["loss"] == s.values["loss"] for s in steps)


def test_an_eager_gan_loops_metrics_are_found_at_its_first_models_updates(tmp_path) -> None:
    """Two optimizers a step: the metrics are updated after both, so they are told by the
    loop's first series (its updates a step apart), and each value goes with its step."""
    out = tmp_path / "history.npy"
    ended, events = run_script(
        LOOPS / "eager_gan_metrics.py", ["60", str(out)], capture_output=False
    )
    assert ended.status == "finished", ended.summary()
    history = {int(s): (n, acc) for s, n, acc in np.load(out)}
    steps = _steps(events)
    assert len(steps) == 60
    sampled = [s for s in steps if s.running]
    assert sampled, "no metric was read"
    assert set().union(*(s.running for s in sampled)) == {"seen", "d_acc"}
    for s in sampled:
        n, acc = history[s.global_step - steps[0].global_step + 1]
        if "seen" in s.running:
            assert s.running["seen"] == n, (s.global_step, s.running, n)
        if "d_acc" in s.running:
            assert s.running["d_acc"] == pytest.approx(acc, rel=1e-6)
    assert sampled[-1].global_step >= steps[-1].global_step - 1  # read at the loop's end


def test_a_graph_loops_own_keras_metrics_are_plotted_as_running_values() -> None:
    ended, events = run_script(LOOPS / "graph_metrics.py", ["2.0"], capture_output=False)
    assert ended.status == "finished", ended.summary()
    steps = _steps(events)
    sampled = [s for s in steps if s.running]
    assert len(sampled) >= 3  # several beats of the reader in 2 s (5 a second)
    at = [s.global_step for s in sampled]  # two steps apart at least: drawn as one line
    assert all(b - a >= 2 for a, b in zip(at, at[1:], strict=False)), at
    keys = set().union(*(s.running for s in sampled))
    assert keys == {"train_acc", "seen"}  # the validation metric is not the train step's
    for s in sampled:  # read between two steps: the values of the step they go with
        if "seen" in s.running:  # 64 samples a step, never reset
            assert s.running["seen"] == 64 * s.global_step, s
        if "train_acc" in s.running:  # an accuracy, never a reset metric's empty 0
            assert 0.0 < s.running["train_acc"] <= 1.0, s
    assert max(s.running.get("train_acc", 0.0) for s in sampled) > 0.8
    assert all(s.values["loss"] == s.values["loss"] for s in steps)  # every step's loss still
    # the device is named when the loop starts, as for a fit (not at the run's end)
    kinds = [type(e) for e in events]
    assert kinds.index(RunDevices) < kinds.index(FitStarted)


def test_a_command_or_stop_sent_between_calls_is_taken_before_the_next_call() -> None:
    # The Function.__call__ wrapper with stand-ins for the call and the boundary: a step
    # function's plain calls run no boundary work; a command or a stop that arrives
    # between two calls is the boundary before the next call, and no step runs after a stop.
    import threading

    from tfstudio.core.channel import Channel
    from tfstudio.core.commands import SaveCheckpoint
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.control_loops import LoopControls
    from tfstudio.engine.loops.emission import LoopEmitter
    from tfstudio.engine.loops.sampling import Sampler
    from tfstudio.engine.loops.series import LoopBook
    from tfstudio.engine.monitor import RunMonitor
    from tfstudio.engine.script import RunStopped

    monitor = RunMonitor(Channel(), options=RunOptions(inspector=False))
    log: list[object] = []

    def original(function, *args, **kwargs):
        log.append(len(log))
        return "loss"

    def boundary(loss):
        log.append("boundary")
        monitor.channel.take_commands()
        controls.control.due = False

    book = LoopBook()
    controls = LoopControls(monitor, list)
    controls.started = True
    controls.control = types.SimpleNamespace(due=False)  # the controls began, nothing due
    controls.after_step = boundary
    sampler = Sampler(
        monitor, None, book, LoopEmitter(monitor, None), controls, threading.RLock(),
        lambda: None, lambda: None, lambda fid: None, lambda: None,
    )  # fmt: skip
    step = object()  # a step function of the current loop (its trace found a step)
    sampler.step_fns[id(step)] = types.SimpleNamespace(loop=types.SimpleNamespace(ended=False))
    sampler.graph_active = True
    sampler.sample_call = 10**9  # no sample due
    call = sampler.wrap(original)
    assert call(step) == "loss"
    call(step)
    call(step)
    assert log == [0, 1, 2] and sampler.calls == 3  # plain calls, counted
    monitor.channel.send(SaveCheckpoint())
    call(step)
    assert log[3:] == ["boundary", 4]
    controls.control.due = True  # a rate the script set: sent before the next call
    call(step)
    assert log[5:] == ["boundary", 6]
    monitor.request_stop()
    with pytest.raises(RunStopped):
        call(step)
    assert len(log) == 7  # stopped before the call: no step after the stop
