"""Zooming in on a metric plot: a recorded run's exact points, read again from its folder."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from tfstudio.core.exact_points import ExactPoints, Overview, exact_points_for, overview_for, splice
from tfstudio.core.run_store import STEP, Track
from tfstudio.core.smoothing import ema
from tfstudio.core.x_axes import GLOBAL, PER_FIT
from tfstudio.ui.plotting import Curve

# Zoomed in so far that the view holds fewer raw steps than this many per pixel: a
# recorded run's line shows its exact points there, read again from its folder.
EXACT_STEPS_PER_PX = 2
EXACT_POLL_MS = 30  # how often a plot looks for the exact points it waits for


class ExactZoom:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that swaps a
    recorded line's envelope for its exact points when zoomed in."""

    def _zoomable(self) -> Iterator[tuple[Curve, Track, ExactPoints | None, Overview | None]]:
        """Drawn per-step lines of recorded runs (the run on show's and the layers'), with
        their exact points and overview."""
        curves = [
            *self.steps.values(),
            *(c for layer in self.layers for _, c in self._own_layer_curves(layer)),
        ]
        for curve in curves:
            track = curve.source
            if curve.item is None or not isinstance(track, Track) or track.kind != STEP:
                continue
            exact, overview = exact_points_for(track), overview_for(track)
            if exact is not None or overview is not None:
                yield curve, track, exact, overview

    def _on_x_range_changed(self, *args: object) -> None:
        super()._on_x_range_changed(*args)
        self.zoom_check()

    def zoom_check(self) -> None:
        """Zoomed in far enough: ask for the exact points of the view (each recorded run's
        lines); zoomed out: back to the envelope. The reads run off the UI thread."""
        if not self.shown or not hasattr(self, "_exact_timer"):  # (a range set while built)
            return
        (x0, x1), _ = self.vb.viewRange()
        budget = EXACT_STEPS_PER_PX * max(1.0, float(self.vb.width()))
        waiting = False
        for curve, track, exact, _ in self._zoomable():
            if exact is None:
                continue
            use = self.x_mode == GLOBAL and _steps_in_view(curve, track, x0, x1) <= budget
            self._exact_use[id(curve)] = use
            if use and not exact.covers(x0, x1):
                margin = (x1 - x0) / 2  # a small pan stays within what is read
                exact.want(max(0, math.floor(x0 - margin)), math.ceil(x1 + margin))
            waiting = waiting or (use and exact.pending())
        if self._draw_exact():
            self.refresh_range()
        if waiting and not self._exact_timer.isActive():
            self._exact_timer.start()

    def _on_exact_poll(self) -> None:
        if self._draw_exact():
            self.refresh_range()
        if not any(
            self._exact_use.get(id(c)) and e is not None and e.pending()
            for c, _, e, _ in self._zoomable()
        ):
            self._exact_timer.stop()

    def _draw_exact(self) -> bool:
        """Splice the exact points read into the curves that show them (or put the envelope
        back where they no longer do), and draw each run's overview beyond what its store
        holds so far; True if any curve was redrawn."""
        changed = False
        is_global = self.x_mode == GLOBAL  # exact points and overviews: on the step axis
        along = self.x_mode != PER_FIT
        for curve, track, exact, overview in self._zoomable():
            held = None
            if exact is not None and is_global and self._exact_use.get(id(curve)):
                held = exact.get(track.key)
            tail = overview.tail(track.key, track.last_x) if overview and is_global else None
            revisions = (
                -1 if exact is None else exact.revision,
                -1 if overview is None else overview.revision,
            )
            spliced = held is not None or tail is not None
            # What the curve drew last: any redraw of the envelope (new points, a forced
            # redraw) gives it new arrays, so the splice is redone then.
            before = self._exact_drawn.get(id(curve))
            if before is None and not spliced:
                continue
            if before is not None and before[2] is curve.x and before[3] == spliced:
                if before[:2] == revisions or not spliced:
                    continue
            if before is not None and not before[3] and not spliced:
                self._exact_drawn[id(curve)] = (*revisions, curve.x, False)
                continue
            curve.update_item(draw=along)  # the envelope, as the store holds it
            if held is not None:
                curve.x, curve.y = splice(curve.x, curve.y, held)
            if tail is not None:  # coarse first: the overview beyond what was read so far
                curve.x = np.concatenate([curve.x, tail[0]])
                curve.y = np.concatenate([curve.y, tail[1]])
                self._overview_on_twin(curve, tail)
            if spliced:
                curve.draw()
            self._exact_drawn[id(curve)] = (*revisions, curve.x, spliced)
            changed = True
        return changed

    def _overview_on_twin(self, curve: Curve, tail: tuple[np.ndarray, np.ndarray]) -> None:
        """Smoothing on: the smoothed line carries the overview too (smoothed alike), so
        the coarse part is not only the faint raw line."""
        twin = curve.smoothed()
        if twin is None or twin.item is None or not twin.item.isVisible():
            return
        twin.x = np.concatenate([twin.x, tail[0]])
        twin.y = np.concatenate([twin.y, np.asarray(ema(tail[1], self.smoothing))])
        twin.draw()

    def exact_shown(self) -> list[str]:
        """Labels of the curves drawing exact points read again (zoomed in), for tests."""
        return [
            c.label
            for c, t, e, _ in self._zoomable()
            if e is not None
            and self._exact_use.get(id(c))
            and e.get(t.key) is not None
            and self._exact_drawn.get(id(c), (0, 0, None, False))[3]
        ]

    def overview_shown(self) -> list[str]:
        """Labels of the curves drawing part of their run's overview (still loading)."""
        return [
            c.label
            for c, t, _, o in self._zoomable()
            if o is not None and o.tail(t.key, t.last_x) is not None and self.x_mode == GLOBAL
        ]


def _steps_in_view(curve: Curve, track: Track, x0: float, x1: float) -> float:
    """About how many raw steps of a decimated line lie in [x0, x1] (inf: not decimated,
    or none there: nothing to read again)."""
    series = track.series
    if series is None or series.width <= 1 or not len(curve.x) or track.last_x is None:
        return math.inf
    first, last = float(curve.x[0]), track.last_x
    overlap = min(x1, last) - max(x0, first)
    if overlap <= 0 or last <= first:
        return math.inf
    return track.count() * overlap / (last - first)
