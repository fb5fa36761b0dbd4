"""Channel order and non-blocking; progress numbers; script path checks."""

import threading

import pytest

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Pause, Stop
from tfstudio.core.events import (
    CheckpointRestored,
    FitStarted,
    ModelSummary,
    RunState,
    StepEnded,
)
from tfstudio.core.progress import ProgressTracker, format_duration, format_value
from tfstudio.core.scripts import ScriptPathError, check_script


def test_channel_keeps_order_across_threads_and_drops_nothing():
    ch = Channel()
    n = 50_000

    def produce():
        for i in range(n):
            ch.emit(i)

    t = threading.Thread(target=produce)
    t.start()
    got: list[int] = []
    while t.is_alive() or ch.pending():
        got.extend(ch.drain())
    t.join()
    got.extend(ch.drain())
    assert got == list(range(n))


def test_channel_commands():
    ch = Channel()
    assert not ch.has_commands()
    ch.send(Pause())
    ch.send(Stop())
    assert ch.has_commands()
    assert ch.take_commands() == [Pause(), Stop()]
    assert ch.take_commands() == []


def _step(g, epoch, step, t, loss=1.0):
    return StepEnded(0, g, epoch, step, 1, {"loss": loss}, {"loss": loss}, t)


def test_progress_rate_eta_and_fraction():
    tr = ProgressTracker(window=1.0)
    model = ModelSummary("m", "Sequential", (), 10, 10)
    tr.feed(FitStarted(0, model, 2, 0, 100, 1, 0, 0.0))
    for i in range(1, 51):
        tr.feed(_step(i, 0, i, i * 0.01, loss=2.0 / i))
    p = tr.progress
    assert (p.epoch, p.epochs, p.step, p.steps_per_epoch) == (1, 2, 50, 100)
    assert p.rate == pytest.approx(100.0)
    assert p.eta == pytest.approx(1.5)  # 150 steps left at 100 steps/s
    assert p.fraction() == pytest.approx(0.25)
    assert p.loss_key == "loss" and p.loss == pytest.approx(2.0 / 50)


def test_progress_rate_leaves_out_the_first_step_which_traces():
    """A fit's first step takes seconds (tracing): the rate starts after it."""
    tr = ProgressTracker(window=1.0)
    model = ModelSummary("m", "Sequential", (), 10, 10)
    tr.feed(FitStarted(0, model, 1, 0, 1000, 1, 0, 0.0))
    tr.feed(_step(1, 0, 1, 2.0))  # the trace: 2 s
    assert tr.progress.rate == 0.0 and tr.progress.eta is None
    for i in range(2, 52):
        tr.feed(_step(i, 0, i, 2.0 + (i - 1) * 0.004))
    p = tr.progress
    assert p.rate == pytest.approx(250.0)  # not 51 steps / 2.2 s
    assert p.eta == pytest.approx((1000 - 51) / 250.0)


def test_progress_after_a_pause_and_a_restore_counts_only_the_steps_after_it():
    """Every step after the rate restarts feeds here (as the headless viewer does)."""
    tr = ProgressTracker(window=1.0)
    model = ModelSummary("m", "Sequential", (), 10, 10)
    tr.feed(FitStarted(0, model, 1, 0, 1000, 1, 0, 0.0))
    for i in range(1, 301):
        tr.feed(_step(i, 0, i, i * 0.01))
    tr.feed(RunState("paused", 300))
    assert tr.progress.paused and tr.progress.rate == 0.0 and tr.progress.eta is None
    tr.feed(CheckpointRestored("/ck/ckpt-1", 100, 100))
    assert tr.progress.global_step == 100
    tr.feed(RunState("running", 100))
    t = 3.0 + 120.0  # two minutes paused
    for i in range(101, 302):
        t += 0.02
        tr.feed(_step(i, 0, i, t))
    p = tr.progress
    assert not p.paused
    assert p.rate == pytest.approx(50.0)  # never negative, never diluted by the pause
    assert p.eta == pytest.approx((1000 - 301) / 50.0)


def test_formatting():
    assert format_duration(None) == "--"
    assert format_duration(75) == "1:15"
    assert format_duration(3725) == "1:02:05"
    assert format_value(0.123456) == "0.1235"
    assert format_value(float("nan")) == "nan"


def test_check_script(tmp_path):
    good = tmp_path / "ok.py"
    good.write_text("print(1)\n")
    assert check_script(good) == good.resolve()
    with pytest.raises(ScriptPathError, match="No such file"):
        check_script(tmp_path / "nope.py")
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(ScriptPathError, match=r"expected a \.py file, got '\.csv'"):
        check_script(tmp_path / "data.csv")
