"""Attributes replaced while a run lasts (``Model.fit``, ``compile``, the tape...) and put back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISSING = object()


class Patches:
    """Class and module attributes replaced for a run, restored in reverse order."""

    def __init__(self) -> None:
        # (owner, name) -> (what was there, its wrapper), in the order replaced
        self._replaced: dict[tuple[Any, str], tuple[Any, Any]] = {}

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Set ``owner.name`` to ``make(current value)``; remember what was there first."""
        key = (owner, name)
        saved = (
            self._replaced[key][0] if key in self._replaced else owner.__dict__.get(name, _MISSING)
        )
        original = getattr(owner, name)
        wrapper = make(original)
        wrapper.__wrapped__ = original
        setattr(owner, name, wrapper)
        self._replaced[key] = (saved, wrapper)

    def restore(self) -> None:
        """Put back every replaced attribute (inherited ones are deleted again; idempotent)."""
        for (owner, name), (saved, _) in reversed(self._replaced.items()):
            if saved is not _MISSING:
                setattr(owner, name, saved)
            elif name in owner.__dict__:
                delattr(owner, name)
        self._replaced = {}
