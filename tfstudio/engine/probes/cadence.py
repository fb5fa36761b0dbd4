"""When to sample: a fixed cadence, or one that keeps probes within a time budget."""

from __future__ import annotations

import math

FIRST_GAP = 10  # steps before the second sample, while step time is still unknown
MAX_GAP = 100_000


class Cadence:
    """Chooses the steps at which probes run.

    With ``every > 0`` it samples every ``every`` steps. Otherwise it measures
    the training time per step (wall time minus probe time) and what a sample
    costs, and spaces samples so that ``probe time / training time <= budget``:
    ``gap = ceil(cost / (budget * step_time))``.

    Args:
        budget: share of training time probes may take (e.g. 0.03).
        every: fixed gap in steps (0: adapt to the budget).
    """

    def __init__(self, budget: float = 0.03, every: int = 0) -> None:
        self.budget = max(float(budget), 1e-6)
        self.fixed = max(int(every), 0)
        self.gap = self.fixed or 1
        self.probe_seconds = 0.0
        self.last_cost = 0.0
        self._cost = 0.0  # smoothed cost of one sample
        self.samples = 0

    @property
    def mode(self) -> str:
        """``"fixed"`` or ``"budget"``."""
        return "fixed" if self.fixed else "budget"

    def overhead(self, elapsed: float) -> float:
        """Probe time / training time over ``elapsed`` seconds of fit."""
        train = elapsed - self.probe_seconds
        return self.probe_seconds / train if train > 0 else 0.0

    def next_gap(self, cost: float, steps: int, elapsed: float) -> int:
        """The next gap, after a sample that cost ``cost`` s; ``steps`` steps took ``elapsed`` s."""
        self.last_cost = cost
        self.probe_seconds += cost
        if self.fixed:
            return self.fixed
        self.samples += 1
        if self.samples == 1:
            # The first sample pays once for tracing the probes' functions: it is
            # counted in the overhead, but it says nothing about the next samples.
            self.gap = FIRST_GAP
            return self.gap
        self._cost = cost if self._cost == 0.0 else 0.7 * self._cost + 0.3 * cost
        train = max(elapsed - self.probe_seconds, 1e-9)
        step_time = train / max(steps, 1)
        gap = math.ceil(self._cost / (self.budget * step_time))
        self.gap = int(min(max(gap, 1), MAX_GAP))
        return self.gap
