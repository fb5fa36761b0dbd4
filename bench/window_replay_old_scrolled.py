"""``--variants`` for ``window_replay.py``: plots scrolled out of the metrics view redrawn
at every redraw (before 2026-11-28) against this tree (they wait until scrolled to).

    python bench/window_replay.py --metrics accuracy,top3,xent,top5 \\
        --variants bench/window_replay_old_scrolled.py
"""

from tfstudio.ui.panels.metrics import MetricsPanel

_in_view = MetricsPanel._in_view


def _old() -> None:
    MetricsPanel._in_view = lambda self, plot: True


def _new() -> None:
    MetricsPanel._in_view = _in_view


VARIANTS = {"every plot": _old, "in view": _new}
