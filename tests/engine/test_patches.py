"""The run's class patches: replaced, taken off for a fit and put back, restored (no TensorFlow)."""

from __future__ import annotations

from tfstudio.core.channel import Channel
from tfstudio.core.events import MonitorError
from tfstudio.engine.loops.patching import Patches
from tfstudio.engine.monitor import RunMonitor


class Base:
    def call(self) -> str:
        return "base"


class Own(Base):
    def call(self) -> str:
        return "own"


class Inherits(Base):
    pass


def _wrap(original):
    return lambda self: "wrapped " + original(self)


def test_a_suspended_patch_calls_what_was_there_and_resumes_to_the_wrapper() -> None:
    patches = Patches()
    patches.replace(Own, "call", _wrap)
    patches.replace(Inherits, "call", _wrap)
    assert Own().call() == "wrapped own" and Inherits().call() == "wrapped base"
    patches.suspend(Own, "call")
    patches.suspend(Inherits, "call")
    assert Own().call() == "own" and Inherits().call() == "base"
    assert "call" not in Inherits.__dict__  # inherited again, not a copy
    patches.resume(Own, "call")
    patches.resume(Inherits, "call")
    assert Own().call() == "wrapped own" and Inherits().call() == "wrapped base"
    patches.suspend(Own, "call")
    patches.restore()
    patches.resume(Own, "call")  # after the run: nothing comes back
    assert Own().call() == "own" and Inherits().call() == "base"
    assert "call" not in Inherits.__dict__


def test_fit_hooks_are_told_and_a_failing_one_is_reported_not_raised() -> None:
    channel = Channel()
    monitor = RunMonitor(channel)
    told: list[bool] = []

    def broken(active: bool) -> None:
        raise RuntimeError("a bug in a hook")

    monitor.fit_hooks += [broken, told.append]
    monitor.fit_active(True)
    monitor.fit_active(False)
    assert told == [True, False]
    errors = [e for e in channel.drain() if isinstance(e, MonitorError)]
    assert [e.where for e in errors] == ["fit start/end hook"]
    assert "a bug in a hook" in errors[0].message


def test_an_attribute_replaced_twice_is_restored_to_what_was_there_first() -> None:
    patches = Patches()
    patches.replace(Own, "call", _wrap)
    patches.replace(Own, "call", _wrap)
    patches.replace(Inherits, "call", _wrap)
    patches.replace(Inherits, "call", _wrap)
    assert Own().call() == "wrapped wrapped own"
    patches.suspend(Own, "call")
    assert Own().call() == "own"
    patches.resume(Own, "call")
    assert Own().call() == "wrapped wrapped own"
    patches.restore()
    assert Own().call() == "own" and Inherits().call() == "base"
    assert "call" not in Inherits.__dict__
