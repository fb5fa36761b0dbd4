"""Variants for ``window_replay.py``: the metric plots' x range growing by half past where
the running fit will end (as before 2026-11-27's seventh stop) against this tree's, which
stops at the fit's planned end.

    python bench/window_replay.py --variants bench/window_replay_old_xrange.py
"""

from __future__ import annotations

from tfstudio.ui.plotting.view import XLinkGroup

_set_planned = XLinkGroup.set_planned


def _never_planned(self: XLinkGroup, x: float) -> None:
    """The fit's end is never known: the range grows by half whatever the fit plans."""


def before() -> None:
    """No planned end (the range as before)."""
    XLinkGroup.set_planned = _never_planned


def after() -> None:
    """This tree's."""
    XLinkGroup.set_planned = _set_planned


VARIANTS = {"after": after, "before": before}
