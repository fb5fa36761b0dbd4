"""When to sample: a fixed cadence, or one that keeps probes within a time budget.

Two ways to space samples under a budget. :meth:`Cadence.next_gap` (custom loops)
spaces them by each sample's smoothed cost and leaves the first sample's tracing
out of the spacing. :meth:`Cadence.gap_after` (``fit``) counts everything the
inspector spends, one-off traces included, against the budget: the next sample
waits until the cost per gap fits the budget *and* the probe time so far is paid
back (``probe time <= budget x training time``); :meth:`Cadence.credit` says how
much a one-off expense (a trace) may cost now without breaking the budget.

Under a budget, samples also come at most once per ``MIN_INTERVAL_S`` of training:
the views show no more than that, and a fast small model (whose sample costs a few
steps) would otherwise spend its whole budget on pictures nobody sees, where a
sample a second costs it well under 1%. A model whose sample costs more than 3% of
a second of training is spaced by the budget alone.
"""

from __future__ import annotations

import math

FIRST_GAP = 10  # steps before the second sample, while step time is still unknown
MAX_GAP = 100_000
MIN_INTERVAL_S = 1.0  # under a budget, at most one sample per second of training
# The share is said once this much training backs it: at a fit's first sample (a later
# fit of a model starts without Keras's trace) it would divide by a few steps' time.
OVERHEAD_BASIS_S = 1.0


class Cadence:
    """Chooses the steps at which probes run.

    With ``every > 0`` it samples every ``every`` steps. Otherwise it measures
    the training time per step (wall time minus probe time) and what a sample
    costs, and spaces samples so that ``probe time / training time <= budget``:
    ``gap = ceil(cost / (budget * step_time))``.

    Args:
        budget: share of training time probes may take (e.g. 0.03).
        every: fixed gap in steps (0: adapt to the budget).
        min_interval: under the budget, training seconds between two samples at least.
    """

    def __init__(
        self, budget: float = 0.03, every: int = 0, min_interval: float = MIN_INTERVAL_S
    ) -> None:
        self.budget = max(float(budget), 1e-6)
        self.fixed = max(int(every), 0)
        self.min_interval = max(float(min_interval), 0.0)
        self.capped = False  # the last gap was set by min_interval, not by the budget
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
        """Probe time / training time over ``elapsed`` seconds of fit (NaN: too little
        training yet, under ``OVERHEAD_BASIS_S``, to say)."""
        train = elapsed - self.probe_seconds
        return self.probe_seconds / train if train >= OVERHEAD_BASIS_S else math.nan

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
        self.gap = self._spaced(max(per_gap, debt, 1), step_time)
        return self.gap

    def _spaced(self, gap: int, step_time: float) -> int:
        """``gap``, widened to ``min_interval`` of training, within ``MAX_GAP``."""
        floor = math.ceil(self.min_interval / step_time) if step_time > 0.0 else 1
        self.capped = floor > gap
        return int(min(max(gap, floor), MAX_GAP))

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
        self.gap = self._spaced(max(gap, 1), step_time)
        return self.gap
