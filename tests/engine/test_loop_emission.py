"""A custom loop's steps and the Keras metrics read with them, as events.

No TensorFlow here: an eager-style series (its steps added by hand) behind the same
emitter a graph loop's reader drains.
"""

from __future__ import annotations

from tfstudio.core.channel import Channel
from tfstudio.core.events import StepColumns, StepEnded, step_rows
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.series import LoopBook, Series
from tfstudio.engine.monitor import RunMonitor


def _steps(channel: Channel) -> list[StepEnded]:
    return [e for e in step_rows(channel.drain()) if isinstance(e, StepEnded)]


def test_metrics_read_at_a_step_go_with_that_step_when_it_is_reported_later() -> None:
    channel = Channel()
    emitter = LoopEmitter(RunMonitor(channel), None)
    book = LoopBook()
    loop = book.new_loop(0)
    series = Series(frozenset({1}), "model", [], [])
    book.add(series, loop)
    for k in range(3):
        series.add(1.0 / (k + 1), 0.5, None)
    # The training thread read the metrics right after step 3 (64 samples a step: 192
    # seen). The reader's first beat holds step 3 back (the loop is not announced yet: a
    # second series may still join it), so the metrics wait for it: not step 2's.
    loop.running_at = (3, {"seen": 192.0})
    emitter.drain(loop)
    first = _steps(channel)
    assert [s.global_step for s in first] == [1, 2]
    assert not any(s.running for s in first), first
    # Announced now: every step goes at once, the metrics with step 3, not the newest.
    series.add(0.25, 0.5, None)
    emitter.drain(loop)
    rest = _steps(channel)
    assert [s.global_step for s in rest] == [3, 4]
    assert rest[0].running == {"seen": 192.0} and not rest[1].running


def test_a_graph_loops_norm_says_it_is_sampled() -> None:
    series = Series(frozenset({1}), "generator", [], [])
    series.graph_ring()  # its steps are traced: twins on the sampling cadence write the norm
    assert series.norm_name("gradient norm (generator)") == "gradient norm (generator, sampled)"
    assert series.norm_name("gradient norm") == "gradient norm (sampled)"
    series.norm_sampled = False  # a graph that writes it at every step (a stateful random op)
    assert series.norm_name("gradient norm") == "gradient norm"


def test_a_loop_of_two_series_reports_each_steps_own_values_and_none_it_lacks() -> None:
    channel = Channel()
    emitter = LoopEmitter(RunMonitor(channel), None)
    book = LoopBook()
    loop = book.new_loop(0)
    critic = Series(frozenset({1}), "critic", [], ["W", "b"])
    generator = Series(frozenset({2}), "generator", [], [])
    book.add(critic, loop)
    book.add(generator, loop)
    nan = float("nan")
    critic.add(1.0, nan, (0.5, 0.25))  # no gradients to measure at its first step
    critic.add(2.0, 3.0, None)  # its tiny variables not read at this step
    critic.add(4.0, 5.0, (0.75, 0.125))
    generator.add(8.0, nan, None)
    generator.add(9.0, 6.0, None)
    emitter.end(loop, running={"acc": 0.5})
    blocks = [e for e in channel.drain() if isinstance(e, StepColumns)]
    assert len(blocks) == 1
    block = blocks[0]
    # each key as soon as a step has it: the order the plots appear in
    assert list(block.values) == [
        "loss (critic)",
        "loss (generator)",
        "W",
        "b",
        "gradient norm (critic)",
        "gradient norm (generator)",
    ]
    rows = list(block)
    assert [r.global_step for r in rows] == [1, 2, 3]
    assert rows[0].values == {"loss (critic)": 1.0, "loss (generator)": 8.0, "W": 0.5, "b": 0.25}
    assert rows[1].values == {
        "loss (critic)": 2.0,
        "gradient norm (critic)": 3.0,
        "loss (generator)": 9.0,
        "gradient norm (generator)": 6.0,
    }
    assert rows[2].values == {
        "loss (critic)": 4.0,
        "gradient norm (critic)": 5.0,
        "W": 0.75,
        "b": 0.125,
    }
    assert [r.running for r in rows] == [{}, {}, {"acc": 0.5}]
