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
        inspector: sample weights, gradients and layer outputs during ``fit``.
        inspector_budget: share of training time the inspector may take (adaptive cadence).
        sample_every: a fixed cadence in steps instead of the budget (0: adapt to the budget).

    The other fields (execution mode, checkpoints, learning rate, stop and NaN
    handling) are documented where they are declared.
    """

    logdir: str | None = None
    record: bool = True
    eager: bool | None = None
    """``True``/``False`` forces ``run_eagerly`` on every fit; ``None`` keeps the script's."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: never automatically)."""
    checkpoint_minutes: float = 0.0
    """Save a checkpoint every this many minutes (0: never automatically)."""
    checkpoint_dir: str | None = None
    """Checkpoint folder; None: ``tfstudio-checkpoints/<script>-<time>/`` beside the script."""
    max_to_keep: int = 5
    """Checkpoints kept (older ones deleted), as ``CheckpointManager(max_to_keep=...)``."""
    keep_checkpoint_every_n_hours: float | None = None
    """Also keep one checkpoint per this many hours, as ``CheckpointManager`` does."""
    restore: str | None = None
    """Checkpoint prefix, or a folder meaning its latest, loaded before the first step."""
    lr: float | None = None
    """Learning rate set before the first step (replaces a schedule)."""
    stop_at_step: int | None = None
    """End training after exactly this many steps (the rest of the script still runs)."""
    on_nan: str = "pause"
    """Non-finite loss: ``"pause"`` (window), ``"stop"`` (headless default) or ``"ignore"``."""
    nan_batch: bool = False
    """Graph steps keep their batch from the first step (``--nan-batch``), so the first
    non-finite loss is recomputed on its own batch; else only after a first one."""
    inspector: bool = True
    inspector_budget: float = 0.03
    sample_every: int = 0
