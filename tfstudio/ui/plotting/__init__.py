"""Reusable plot pieces for live training curves (metrics panel, inspector views).

- :class:`Curve`: one line over steps, fed from a decimated ``Series`` or a point list,
  broken at segment boundaries and gaps (no line across a ``fit`` or a missing metric).
- :class:`VerticalLines`: many full-height lines drawn as one item (epoch boundaries).
- :class:`SegmentMarkers`: labelled segment starts (fits) whose labels stay readable at
  any count: long, short or hidden so they never overlap; full text on hover.
- :class:`PlotView`: a plot with a robust default y range, outliers marked at the edge,
  one-click "all" and "log" buttons, a hover readout and a shared x range
  (:class:`XLinkGroup`).
- :func:`robust_range`: the percentile range the y axis follows by default.
- :mod:`~tfstudio.ui.plotting.smoothing`: the smoothing slider and the faint raw pen
  (the smoothed lines are the run store's derived series).
"""

from tfstudio.ui.plotting.curve import Curve
from tfstudio.ui.plotting.lines import Segment, SegmentMarkers, VerticalLines
from tfstudio.ui.plotting.ranges import nice_ceiling, robust_range
from tfstudio.ui.plotting.smoothing import SmoothingSlider, faint
from tfstudio.ui.plotting.style import BACKGROUND, FOREGROUND, segment_colour
from tfstudio.ui.plotting.view import PlotView, TimedPlotWidget, XLinkGroup

__all__ = [
    "BACKGROUND",
    "FOREGROUND",
    "Curve",
    "PlotView",
    "Segment",
    "SegmentMarkers",
    "SmoothingSlider",
    "TimedPlotWidget",
    "VerticalLines",
    "XLinkGroup",
    "faint",
    "nice_ceiling",
    "robust_range",
    "segment_colour",
]
