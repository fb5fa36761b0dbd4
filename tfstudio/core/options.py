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
        logdir: the runs directory this run records into (a run folder
            ``<script-stem>-<YYYYmmdd-HHMMSS>`` is made inside it). ``None``:
            the default, ``./tfstudio-runs`` beside the script in the window
            and in the working directory headless (the viewer decides).
        record: write the run folder at all.
    """

    logdir: str | None = None
    record: bool = True
