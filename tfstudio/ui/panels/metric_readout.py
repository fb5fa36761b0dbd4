"""A metric plot's hover readout: each line's value at the cursor, every run named."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

from tfstudio.core.x_axes import PER_FIT, describe_x
from tfstudio.ui.plotting import FOREGROUND, Curve

if TYPE_CHECKING:
    from tfstudio.ui.panels.metric_layers import RunLayer


class Readout:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that writes the
    hover readout."""

    def readout(self, x: float) -> str:
        """HTML listing, for the place nearest ``x``, each curve's nearest value.

        On a time or epoch axis each run's lines are read at that run's own step there
        (runs of different speeds are at different steps at one time), and a run whose
        lines do not reach ``x`` is left out."""
        if self.x_mode == PER_FIT:
            return self._readout_per_fit(x)
        step = x if self.xmap is None else self.xmap.to_step(x)  # the run on show's
        if step != step:
            step = -np.inf
        span = self.span_at(step) if len(self.spans) > 1 else None
        lo, hi = (span.start, span.end) if span is not None else (-np.inf, np.inf)
        rows: list[str] = []
        others = [row for layer in self.layers for row in self._layer_rows(layer, x)]
        # beside other runs, the run on show's rows are named as its legend entry is
        whose = f"{self.short_name(self.own)} · " if others else ""
        for curve in self.curves():
            if curve.item is None or not self._reaches(curve, x):
                continue
            hit = curve.nearest(step, lo, hi)
            if hit is None:
                continue
            cx, y0, y1 = hit
            where = "" if curve.series is not None else f" <i>(step {cx:,.0f})</i>"
            smoothed = curve.smoothed()
            if smoothed is not None:
                near = smoothed.nearest(step, lo, hi)
                if near is not None:
                    where += f", smoothed <b>{_fmt(near[1])}</b>"
            rows.append(_row(curve.colour, whose + curve.label, y0, y1, where))
        own = len(rows)  # the run on show's rows (its step goes in the head)
        rows.extend(others)
        if not rows:
            return ""
        rows = _cap(rows, self.max_readout_rows)
        head = f"<b>{html.escape(describe_x(self.x_mode, x))}</b>"
        if self.xmap is not None and np.isfinite(step) and own:
            head += f" &nbsp;step {max(step, 0):,.0f}"
        if span is not None:
            head += f" &nbsp;{html.escape(span.segment.full)}"
        return _box(head, rows)

    def _reaches(self, curve: Curve, x: float) -> bool:
        """Whether ``curve``'s drawn line spans ``x`` (always on the step axis, where a line
        is read at its nearest point; on the other axes within 1% of the view's width)."""
        if curve.xmap is None:
            return True
        xs = curve.item.xData if curve.item is not None else None
        if xs is None or not len(xs):
            return False
        (x0, x1), _ = self.vb.viewRange()
        slack = 0.01 * (x1 - x0)
        return float(xs[0]) - slack <= x <= float(xs[-1]) + slack

    def _readout_per_fit(self, x: float) -> str:
        rows: list[str] = []
        for span in self.spans:
            if not self._span_shown(span):
                continue
            g = span.start + x
            for curve in self.curves():
                if (curve.label, span.index) not in self.overlays:
                    continue
                hit = curve.nearest(g, span.start, span.end)
                if hit is None:
                    continue
                label = f"{span.segment.short}: {curve.label}"
                rows.append(_row(span.colour, label, hit[1], hit[2], ""))
        for layer in self.layers:
            for index, start, end in layer.spans():
                rows.extend(self._layer_rows(layer, start + x, (start, end), f" fit {index + 1}"))
        if not rows:
            return ""
        return _box(f"<b>step {max(x, 0):,.0f} of each fit</b>", _cap(rows, self.max_readout_rows))

    def _layer_rows(
        self, layer: RunLayer, x: float, window: tuple[float, float] | None = None, fit: str = ""
    ) -> list[str]:
        """The readout row of another run at global step ``x``: run, fit, and the value of
        each of its lines in this plot's family (``loss 0.31, val_loss 0.35``)."""
        values = []
        fit_here = fit
        at = ""  # on a time or epoch axis: the run's own step there
        for key, curve in self._own_layer_curves(layer):
            if window is None:
                if not self._reaches(curve, x):
                    continue
                step = curve.at(x)
                hit = curve.nearest(step)
            else:
                step = x
                hit = curve.nearest(x, *window)
            if hit is None:
                continue
            if window is None and not fit_here and len(layer.spans()) > 1:  # which fit
                spans = reversed(layer.spans())
                fit_here = next((f" fit {i + 1}" for i, a, _ in spans if step > a), "")
            if curve.xmap is not None and not at:
                at = f" (step {hit[0]:,.0f})"
            values.append(f"{html.escape(key)} <b>{_value(hit[1], hit[2])}</b>")
        if not values:
            return []
        short = self.short_name(layer)
        name = short if layer.name == layer.store.name else f"{short} {layer.store.name}"
        fit_here += at
        return [
            f"<span style='color:{layer.colour}'>&#9632;</span> "
            f"{html.escape(name + fit_here)}: {', '.join(values)}"
        ]


def _cap(rows: list[str], most: int) -> list[str]:
    """At most ``most`` lines: the rows, or as many as fit and then how many more."""
    most = max(1, most)
    if len(rows) <= most:
        return rows
    keep = most - 1
    return rows[:keep] + [f"<i>… {len(rows) - keep} more</i>"]


def _value(lo: float, hi: float) -> str:
    """A value, or the span of a decimated bucket."""
    return _fmt(lo) if lo == hi or lo != lo else f"{_fmt(lo)} … {_fmt(hi)}"


def _row(colour: str, label: str, lo: float, hi: float, where: str) -> str:
    value = _value(lo, hi)
    return (
        f"<span style='color:{colour}'>&#9632;</span> {html.escape(label)}: <b>{value}</b>{where}"
    )


def _box(head: str, rows: list[str]) -> str:
    return f"<div style='color:{FOREGROUND}; font-size:9pt'>{head}<br>{'<br>'.join(rows)}</div>"


def _fmt(v: float) -> str:
    return f"{v:.5g}"
