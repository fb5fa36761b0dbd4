"""Variants for ``window_replay.py``: the metric axes as they were before 2026-11-27.

``before``: axes painted anew at every exposure (no pixmap of themselves), and a y
range that moved with the same room on both sides. ``after``: this tree.

    python bench/window_replay.py --variants bench/window_replay_old_axes.py
"""

from __future__ import annotations

import functools

from PySide6.QtWidgets import QGraphicsItem

from tfstudio.ui.plotting import ranges, view

_cache = [True]
_init = view.QuietAxis.__init__


def _axis_init(self: view.QuietAxis, *args: object, **kwargs: object) -> None:
    _init(self, *args, **kwargs)
    if not _cache[0]:
        self.setCacheMode(QGraphicsItem.CacheMode.NoCache)


view.QuietAxis.__init__ = _axis_init


def before() -> None:
    """No axis pixmaps; room alone when a y range moves."""
    _cache[0] = False
    view.settled_range = functools.partial(ranges.settled_range, lead=ranges.SETTLE_ROOM)


def after() -> None:
    """This tree."""
    _cache[0] = True
    view.settled_range = ranges.settled_range


VARIANTS = {"after": after, "before": before}
