"""The run's class patches: replaced, and restored to what was there (no TensorFlow)."""

from __future__ import annotations

from tfstudio.engine.patches import Patches


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


def test_an_attribute_replaced_twice_is_restored_to_what_was_there_first() -> None:
    patches = Patches()
    patches.replace(Own, "call", _wrap)
    patches.replace(Own, "call", _wrap)
    patches.replace(Inherits, "call", _wrap)
    patches.replace(Inherits, "call", _wrap)
    assert Own().call() == "wrapped wrapped own" and Inherits().call() == "wrapped wrapped base"
    patches.restore()
    assert Own().call() == "own" and Inherits().call() == "base"
    assert "call" not in Inherits.__dict__
