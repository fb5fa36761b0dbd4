"""When to sample: a fixed cadence, or one that keeps probes within a time budget.

Two ways to space samples under a budget. :meth:`Cadence.next_gap` (custom loops)
spaces them by each sample's smoothed cost and leaves the first sample's tracing
out of the spacing. :meth:`Cadence.gap_after` (``fit``) counts everything the
inspector spends, one-off traces included, against the budget: the next sample
waits until the cost per gap fits the budget *and* the probe time so far is paid
back (``probe time <= budget x training time``); :meth:`Cadence.credit` says how
much a one-off expense (a trace) may cost now without breaking the budget.
"""

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

    def charge(self, seconds: float) -> None:
        """Count probe time spent outside a sample (a recording step's extra time, a set-up)."""
        self.probe_seconds += max(float(seconds), 0.0)

    def credit(self, train: float) -> float:
        """Probe seconds the budget still allows after ``train`` seconds of training."""
        if self.fixed:
            return math.inf
        return self.budget * train - self.probe_seconds

    def wait_steps(self, step_time: float, train: float) -> int:
        """Steps to wait before a sample fits the budget (0: it fits now).

        A sample is due when ``probe time + its expected cost <= budget x training
        time``; a fixed cadence never waits.
        """
        if self.fixed or step_time <= 0.0:
            return 0
        expected = self._cost or self.last_cost
        owed = (self.probe_seconds + expected) / self.budget - train
        return max(math.ceil(owed / step_time), 0)

    def gap_after(self, cost: float, step_time: float | None, train: float) -> int:
        """The next gap after a sample that cost ``cost`` s, with everything spent counted.

        Args:
            cost: the sample's own time (it is added to the probe time).
            step_time: seconds of training per step (None while unknown: ``FIRST_GAP``).
            train: seconds of training so far (wall time minus probe time), ``cost`` excluded.
        """
        self.last_cost = cost
        self.probe_seconds += cost
        self.samples += 1
        if self.fixed:
            return self.fixed
        if step_time is None or step_time <= 0.0:
            self.gap = FIRST_GAP
            return self.gap
        self._cost = cost if self._cost == 0.0 else 0.7 * self._cost + 0.3 * cost
        per_gap = math.ceil(self._cost / (self.budget * step_time))
        # Probe time beyond the budget so far (a trace), and the next sample's expected
        # cost: wait until training has paid for both.
        owed = (self.probe_seconds + self._cost) / self.budget - train
        debt = math.ceil(owed / step_time)
        self.gap = int(min(max(per_gap, debt, 1), MAX_GAP))
        return self.gap

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
