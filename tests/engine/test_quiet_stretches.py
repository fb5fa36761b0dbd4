"""A graph loop's quiet stretches run without the ``tf.function`` wrapper (sampling.py).

Between its twins' calls a step function's calls go straight to TensorFlow's own
``Function.__call__``; the reader's tick puts the wrapper back when a twin or a sample
is due, a command or a stop puts it back at once, and the calls made without it are
counted from the graph's step counters. Every step must still be reported, the norm
twins must go on, and a pause must hold at the next call.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.engine.test_controls import pause
from tests.engine.test_stop_pause import Collector
from tfstudio.core.channel import Channel
from tfstudio.core.commands import Resume, Stop
from tfstudio.core.options import RunOptions
from tfstudio.engine.session import TrainingSession

pytestmark = pytest.mark.tf

LOOPS = Path(__file__).resolve().parents[1] / "scripts" / "loops"


def _start(script: str, *args: str) -> tuple[TrainingSession, Collector]:
    channel = Channel()
    options = RunOptions(inspector=False)
    session = TrainingSession(LOOPS / script, args, channel, options=options)
    session.start()
    return session, Collector(channel)


def _parts(session: TrainingSession):
    """The run's TwinSampler and the wrapper (from the loop interceptor's fit hook)."""
    hook = next(h for h in session.monitor.fit_hooks if h.__name__ == "hook")
    cells = dict(zip(hook.__code__.co_freevars, hook.__closure__ or (), strict=True))
    sampler = cells["sampler"].cell_contents
    patches = cells["patches"].cell_contents
    function = cells["function"].cell_contents
    wrapper = patches._replaced[(function, "__call__")][1]
    return sampler, function, wrapper


def _watch_off(function, wrapper, stop: threading.Event, seen: list[float]) -> None:
    """Record the times TensorFlow's own ``__call__`` is in place (the wrapper off)."""
    while not stop.is_set():
        if function.__dict__.get("__call__") is not wrapper:
            seen.append(time.monotonic())
        time.sleep(0.002)


def _norm_steps(collector: Collector) -> list[int]:
    return [
        s.global_step
        for s in collector.steps()
        if any(k.startswith("gradient norm") for k in s.values)
    ]


def test_quiet_stretches_run_without_the_wrapper_and_every_step_is_counted() -> None:
    session, seen = _start("long_loop.py", "graph", "adam")
    stop_watch = threading.Event()
    try:
        wait_for(lambda: len(session.monitor.fit_hooks) > 0 and len(seen.steps()) >= 20)
        sampler, function, wrapper = _parts(session)
        off: list[float] = []
        watcher = threading.Thread(target=_watch_off, args=(function, wrapper, stop_watch, off))
        watcher.start()
        wait_for(lambda: len(off) >= 20, timeout=60)  # the wrapper is off for stretches
        since = seen.steps()[-1].global_step
        # the norm twins go on meanwhile: the wrapper comes back for them
        wait_for(lambda: len([s for s in _norm_steps(seen) if s > since]) >= 5, timeout=60)
        stop_watch.set()
        watcher.join()
        # a pause holds at the next call: every step that ran reported, every call counted
        held = pause(seen)
        iterations = int(session.monitor.control.optimizer.iterations.numpy())
        assert held.global_step == iterations == sampler.calls
        assert seen.steps()[-1].global_step == held.global_step
        assert function.__dict__["__call__"] is wrapper  # held in the wrapper's boundary
        seen.channel.send(Resume())
        wait_for(lambda: sampler.off, timeout=60)  # off again after the pause
        seen.channel.send(Stop())
        ended = session.join(60)
        assert ended is not None and ended.status == "stopped"
        iterations = int(session.monitor.control.optimizer.iterations.numpy())
        assert ended.global_step == iterations == sampler.calls
        assert [s.global_step for s in seen.steps()] == list(range(1, iterations + 1))
    finally:
        stop_watch.set()
        seen.channel.send(Stop())
        session.join(60)


def test_a_step_function_first_called_while_the_wrapper_is_off_is_found(monkeypatch) -> None:
    # The script's second tf.function is first called (and traced) after 2,500 calls of
    # the first, most of them without the wrapper: its trace finds the function by
    # TensorFlow's own __call__ frame, and its steps are counted and reported. (Norm
    # twins once an hour: a stretch is then ~1,000 calls, calls ~2,040-3,040 one of them.)
    import sys

    from tfstudio.engine.loops import sampling

    monkeypatch.setattr(sampling, "NORM_MIN_GAP_S", 3600.0)
    traces: list[tuple[object, bool, int | None]] = []  # (sampler, in the wrapper, function)
    original = sampling.TwinSampler.traced_step

    def traced_step(self, ring=None):
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            frames.append(frame.f_code)
            frame = frame.f_back
        traces.append((self, self.call_code in frames, self.calling()))
        original(self, ring)

    monkeypatch.setattr(sampling.TwinSampler, "traced_step", traced_step)
    session, seen = _start("two_functions.py", "2500")
    ended = session.join(120)
    assert ended is not None and ended.status == "finished"
    assert [s.global_step for s in seen.steps()] == list(range(1, 5001))
    sampler = traces[0][0]
    functions = [fid for _, _, fid in traces]
    assert None not in functions and len(set(functions)) == 2 == len(sampler.step_fns)
    first_of_second = next(wrapped for _, wrapped, fid in traces if fid == functions[-1])
    assert not first_of_second, "the second function was first called through the wrapper"
    assert functions[-1] in sampler.rings  # its calls are counted by its series' counter
