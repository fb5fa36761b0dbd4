"""Settings of one run that the viewer chooses and the worker applies.

A plain, picklable record: it crosses the process boundary with the run's
script and arguments. Features add fields here (with defaults), so a run
started with no options behaves as plain ``python script.py`` under tfstudio.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What the user asked of a run beyond the script and its arguments.

    Args:
        inspector: sample weights, gradients and layer outputs during ``fit``.
        inspector_budget: share of training time the inspector may take (adaptive cadence).
        sample_every: a fixed cadence in steps instead of the budget (0: adapt to the budget).
    """

    inspector: bool = True
    inspector_budget: float = 0.03
    sample_every: int = 0
