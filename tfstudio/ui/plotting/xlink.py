"""Plots that share one x range (zoom or pan one and all follow)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfstudio.ui.plotting.ranges import nice_ceiling

if TYPE_CHECKING:
    from tfstudio.ui.plotting.view import PlotView


class XLinkGroup:
    """Plots that share one x range: zoom or pan one and all follow.

    While ``following`` (the default, and again after a double-click) the range
    keeps the newest data in view, growing by half when the data reaches its end (a
    range that moved every frame would re-lay-out the axes every frame), but never
    past :attr:`planned`, where the running fit will end when that is known; once
    ``finish()`` is called the data fills the width. A plot alone has a group of its
    own, so the same code serves linked and unlinked plots.
    """

    def __init__(self) -> None:
        self.members: list[PlotView] = []
        self.following = True
        self.finished = False
        self.planned = 0.0  # x where the running fit's last step will be (0: not known)
        self._right = 0.0
        self._left = 0.0  # where the range begins (the origin it was fitted from)
        self.range: tuple[float, float] | None = None

    def add(self, plot: PlotView) -> None:
        """Make ``plot`` share this group's range (it leaves its previous group)."""
        if plot.group is not None and plot.group is not self:
            plot.group.remove(plot)
        plot.group = self
        if plot not in self.members:
            self.members.append(plot)
        if self.range is not None:
            plot.set_x_range(*self.range)

    def remove(self, plot: PlotView) -> None:
        """Take ``plot`` out of the group."""
        if plot in self.members:
            self.members.remove(plot)

    def x_max(self) -> float:
        """The largest x of the data shown by any member."""
        return max((p.data_x_max() for p in self.members if p.shown), default=0.0)

    def x_origin(self) -> float:
        """Where the range starts: 0, or on a clock-time axis the earliest x shown."""
        origins = [p.x_origin() for p in self.members if p.shown]
        return min((o for o in origins if o == o and o != float("inf")), default=0.0)

    def follow(self) -> None:
        """Keep the newest data in view (does nothing once the user zoomed or panned)."""
        if not self.following:
            return
        last = self.x_max()
        origin = self.x_origin()
        if origin != self._left:  # a run that began earlier came in (the clock-time axis)
            self._left = origin
            self._right = 0.0
        if self.finished:
            if last > origin and last != self._right:
                self._right = last
                self._apply(origin, last, 0.02)
            return
        if last <= self._right:
            return
        self._right = origin + nice_ceiling(max((last - origin) * 1.5, 10.0))
        if last <= self.planned < self._right:  # no room past where the fit will end
            self._right = self.planned
        self._apply(origin, self._right, 0.01)

    def set_planned(self, x: float) -> None:
        """Where the running fit will end (0: not known); the range is fitted to it anew
        (a compared run drawn before the fit began may have widened it)."""
        if x != self.planned:
            self.planned = x
            self._right = 0.0
            self.follow()

    def finish(self, finished: bool = True) -> None:
        """The data stopped growing: drop the head-room (or, False: it grows again)."""
        self.finished = finished
        self._right = 0.0
        self.follow()

    def reset(self) -> None:
        """Follow the data again (a double-click on any member)."""
        self.following = True
        self._right = 0.0
        self.follow()

    def user_changed(self, source: PlotView) -> None:
        """``source``'s range was zoomed or panned by the user: the others follow."""
        self.following = False
        (x0, x1), _ = source.vb.viewRange()
        self.range = (x0, x1)
        for plot in self.members:
            if plot is not source:
                plot.set_x_range(x0, x1)

    def show_range(self, x0: float, x1: float) -> None:
        """Show [x0, x1] on every member and stop following (e.g. jump to a segment)."""
        self.following = False
        self._apply(x0, x1, 0.02)

    def _apply(self, x0: float, x1: float, padding: float) -> None:
        for plot in self.members:
            plot.set_x_range(x0, x1, padding)
        if self.members:
            (a, b), _ = self.members[0].vb.viewRange()
            self.range = (a, b)
