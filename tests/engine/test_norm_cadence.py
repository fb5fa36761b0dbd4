"""When a graph loop's step runs its norm twin: every 10th call, at most 10 times a second.

No TensorFlow here: the sampler is given stand-ins for a ``tf.function`` (one that
makes a twin when cloned) and for TensorFlow's own ``Function.__call__``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tfstudio.core.channel import Channel
from tfstudio.engine.loops import sampling
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.ring import NORM_EVERY
from tfstudio.engine.loops.series import LoopBook, Series
from tfstudio.engine.monitor import RunMonitor


class Function:
    """A stand-in ``tf.function``: no stateful random op; ``_clone`` makes its twin."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _list_all_concrete_functions(self) -> list[Any]:
        return []

    def _clone(self, python_function: Any) -> Function:
        return Function(self.name + " twin")


def sampler_and_step(clock: list[float], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """A sampler with one step function, and ``call()`` -> the graph that ran that call."""
    monkeypatch.setattr(sampling.TwinSampler, "clock", staticmethod(lambda: clock[0]))
    monitor = RunMonitor(Channel())
    sampler = sampling.TwinSampler(
        monitor, None, LoopBook(), LoopEmitter(monitor, None), threading.RLock()
    )
    function = Function("step")
    sampler.step_fns.add(id(function))

    def original(fn: Function, *args: Any, **kwargs: Any) -> str:
        return fn.name

    def call() -> str:  # what the Function.__call__ wrapper does for a step function
        if sampler.calls + 1 >= sampler.special_call:
            ran = sampler.special(function, original, (), {})
        else:
            ran = original(function)
        sampler.calls += 1
        return ran

    return sampler, call


def twin_calls(call: Any, clock: list[float], calls: int, step_s: float) -> list[int]:
    """The calls (1-based) that ran the norm twin, ``step_s`` apart."""
    out = []
    for k in range(1, calls + 1):
        if call() == "step twin":
            out.append(k)
        clock[0] += step_s
    return out


def test_slow_steps_run_the_norm_twin_every_tenth_call(monkeypatch):
    clock = [100.0]
    _, call = sampler_and_step(clock, monkeypatch)
    # ~16 ms steps (2**-6 s, exact in binary): ten take 156 ms, more than the cap's 100 ms
    assert twin_calls(call, clock, 60, 2**-6) == [10, 20, 30, 40, 50, 60]


def test_fast_steps_run_it_at_most_ten_times_a_second(monkeypatch):
    clock = [100.0]
    _, call = sampler_and_step(clock, monkeypatch)
    # ~1 ms steps (2**-10 s): every 10th call would be 100 twins a second; the first
    # runs at once, then one as soon as 100 ms have passed: looked at 10 calls on, then
    # when the gap will have passed at that pace (103 steps are 100.6 ms): every 103rd
    got = twin_calls(call, clock, 1024, 2**-10)
    assert got[0] == NORM_EVERY
    assert all(b - a == 103 for a, b in zip(got, got[1:], strict=False)), got
    assert len(got) == 10  # 1 s of steps: at most 10


def test_a_rounds_end_plans_the_next_for_when_its_gap_will_have_passed(monkeypatch):
    # Fast steps: once the pace between two rounds is known, the next special call is
    # the next twin's (one long quiet stretch between them, which can run without the
    # wrapper), not a look 10 calls on that finds the gap still open.
    clock = [100.0]
    sampler, call = sampler_and_step(clock, monkeypatch)
    special_calls = []
    for k in range(1, 1025):
        if sampler.calls + 1 >= sampler.special_call:
            special_calls.append(k)
        call()
        clock[0] += 2**-10
    twins = [10 + 103 * i for i in range(10)]
    # call 2: the inspector's first sample (none here); 20: a look before the pace is
    # known; from the second round on, each special call is a twin's
    assert special_calls[:4] == [2, 10, 20, 113], special_calls
    assert special_calls[4:] == twins[2:], special_calls


def test_two_step_functions_share_the_cap_of_ten_twin_calls_a_second(monkeypatch):
    # A GAN's two tf.functions: each round runs both twins, so rounds are 200 ms apart
    clock = [100.0]
    monkeypatch.setattr(sampling.TwinSampler, "clock", staticmethod(lambda: clock[0]))
    monitor = RunMonitor(Channel())
    sampler = sampling.TwinSampler(
        monitor, None, LoopBook(), LoopEmitter(monitor, None), threading.RLock()
    )
    functions = [Function("d"), Function("g")]
    sampler.step_fns.update(id(f) for f in functions)

    def original(fn: Function, *args: Any, **kwargs: Any) -> str:
        return fn.name

    twins = []
    for k in range(2048):  # 1,024 loop steps of two ~0.5 ms calls: 1 s
        function = functions[k % 2]
        if sampler.calls + 1 >= sampler.special_call:
            ran = sampler.special(function, original, (), {})
        else:
            ran = original(function)
        sampler.calls += 1
        if ran.endswith("twin"):
            twins.append((k, ran))
        clock[0] += 2**-11
    assert {name for _, name in twins} == {"d twin", "g twin"}
    assert len(twins) <= 10  # twin calls in 1 s, both functions together
    rounds = [k for k, _ in twins[::2]]  # each round's first twin call
    pairs = zip(twins[::2], twins[1::2], strict=True)
    assert all({a[1], b[1]} == {"d twin", "g twin"} for a, b in pairs)
    assert all((b - a) * 2**-11 >= 0.2 for a, b in zip(rounds, rounds[1:], strict=False))


def test_a_graph_loops_norm_says_it_is_sampled():
    series = Series(frozenset({1}), "generator", [], [])
    series.graph_ring()  # its steps are traced: the norm twin measures the norm
    assert series.norm_name("gradient norm (generator)") == "gradient norm (generator, sampled)"
    assert series.norm_name("gradient norm") == "gradient norm (sampled)"
    series.norm_every = 1  # a graph that measures it at every step
    assert series.norm_name("gradient norm") == "gradient norm"
