"""Checkpoints of a live training: where they go, save, restore, delete (part of the controls).

:class:`CheckpointControl` is a part of :class:`~tfstudio.engine.control.TrainingController`
(the controls' state is one object: these methods use its model, optimizer and monitor).
The store itself is ``engine/checkpoints.py``'s.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointList,
    CheckpointRefused,
    CheckpointRestored,
)
from tfstudio.core.locations import UrlPath
from tfstudio.engine.monitor import RunMonitor

RESTORE_FAILED_EXIT_CODE = 2  # --restore named no usable checkpoint


class CheckpointControl:
    """The controls' checkpoint part (mixed into ``TrainingController``)."""

    monitor: RunMonitor
    options: Any
    model: Any
    optimizer: Any
    _store: Any
    _store_model: Any
    _directory: Path | UrlPath | None
    _started_at: float
    _last_loss: float
    _last_auto_step: int
    _last_auto_time: float
    _saves_failing: bool
    _nan_active: bool
    _request_stop: Callable[[], None]
    _on_restored: Callable[[], None]

    @property
    def directory(self) -> Path | UrlPath:
        """The run's checkpoint folder (a URL when the run is recorded to one)."""
        if self._directory is None:
            from tfstudio.engine.checkpoints import default_directory

            chosen = self.options.checkpoint_dir
            if chosen:
                self._directory = Path(chosen).expanduser().resolve()
            elif self.monitor.run_dir is not None:
                # a recorded run keeps them in its folder, local or gs://... (TensorFlow
                # writes checkpoints through its own file systems)
                self._directory = self.monitor.run_dir / "checkpoints"
            else:
                self._directory = default_directory(sys.argv[0] or "script", self._started_at)
        return self._directory

    def store(self) -> Any:
        """The checkpoint store of the current model (made on first use)."""
        from tfstudio.engine.checkpoints import CheckpointStore

        if self.model is None:
            raise RuntimeError("no model to checkpoint yet (no fit has started)")
        if self._store is None or self._store_model is not self.model:
            opts = self.options
            self._store = CheckpointStore(
                self.directory,
                self.model,
                self.optimizer,
                max_to_keep=opts.max_to_keep,
                keep_checkpoint_every_n_hours=opts.keep_checkpoint_every_n_hours,
            )
            self._store_model = self.model
            removed = self._store.removed_partials
            if removed:
                names = ", ".join(os.path.basename(p) for p in removed)
                self.monitor.note(
                    f"Removed what a save that never completed left in {self.directory} "
                    f"({names}): a run was ended while it saved; its checkpoints are intact."
                )
        return self._store

    def save(self, automatic: bool = False) -> None:
        """Save a checkpoint now and report it (or why it failed).

        Automatic saves that keep failing (a full disk) are reported once, until
        one succeeds again; a save the user asked for is always answered.
        """
        from tfstudio.engine.recorder import is_disk_full

        mon = self.monitor
        try:
            record = self.store().save(mon.global_step, mon.now(), self._last_loss, automatic)
        except Exception as exc:  # noqa: BLE001
            if automatic and self._saves_failing:
                return
            self._saves_failing = True
            why = "the disk is full" if is_disk_full(exc) else f"{type(exc).__name__}: {exc}"
            mon.channel.emit(CheckpointRefused(str(self.directory), "save", why))
            mon.note(
                f"Checkpoint not saved at step {mon.global_step}: {why}. Training goes on; "
                "the checkpoints saved before are kept"
                + (
                    " (automatic saves go on, reported again once one succeeds)."
                    if automatic
                    else "."
                )
            )
            return
        self._saves_failing = False
        mon.channel.emit(record)
        lost = self._store.index_error if self._store is not None else None
        if lost is not None:
            why = "the disk is full" if is_disk_full(lost) else f"{type(lost).__name__}: {lost}"
            mon.note(
                f"Saved checkpoint {record.path} at step {record.step}, but not its time and "
                f"loss in tfstudio's index ({why}): they are written with the next save."
            )
        elif not automatic:
            mon.note(f"Saved checkpoint {record.path} at step {record.step}.")

    def _auto_save(self) -> None:
        self._last_auto_step = self.monitor.global_step
        self._last_auto_time = time.monotonic()
        self.save(automatic=True)

    def restore(self, path: str) -> bool:
        """Load ``path`` into the live model and optimizer; refuse (model unchanged) on mismatch."""
        from tfstudio.engine.checkpoints import CheckpointMismatch

        mon = self.monitor
        try:
            restored = self.store().restore(path)
        except (CheckpointMismatch, FileNotFoundError, RuntimeError) as exc:
            mon.channel.emit(CheckpointRefused(path, "restore", str(exc)))
            mon.note(f"Restore refused: {exc}")
            return False
        was_at = mon.global_step
        mon.global_step = restored.step
        mon.rewound += max(0, was_at - restored.step)
        self._last_auto_step = restored.step
        self._nan_active = False
        try:
            self.model.reset_metrics()  # the epoch's running means restart after the jump
        except Exception as exc:  # noqa: BLE001
            mon.report_error("reset_metrics after restore", exc)
        self._on_restored()
        mon.channel.emit(
            CheckpointRestored(
                restored.path, restored.step, restored.optimizer_iterations, mon.now()
            )
        )
        # The run's step goes back; the loop that trains cannot be rewound from a step
        # boundary: every view counts on from here (core/progress.py, docs/controls.md).
        said = f"restored step {restored.step} from {restored.path}"
        if 0 < was_at != restored.step:  # (--restore, before the first step: nothing to say)
            said += (
                f" (the run was at step {was_at:,}): steps count on from {restored.step:,}; "
                "the training loop itself (Keras's epochs and batches, or your own loop) "
                "goes on where it was"
            )
        mon.note(said)
        self._send_learning_rate(force=True)
        return True

    def _restore_at_start(self, path: str) -> None:
        from tfstudio.engine.checkpoints import resolve

        mon = self.monitor
        try:
            resolved = resolve(path)
        except FileNotFoundError as exc:
            mon.channel.emit(CheckpointRefused(path, "restore", str(exc)))
            mon.note(f"--restore failed: {exc}")
            mon.stop_exit_code = RESTORE_FAILED_EXIT_CODE
            mon.stop_message = f"--restore {path}: {exc}"
            mon.request_stop()
            self._request_stop()
            return
        if not self.restore(resolved):
            mon.stop_exit_code = RESTORE_FAILED_EXIT_CODE
            mon.stop_message = f"--restore {path}: the checkpoint does not match the model"
            mon.request_stop()
            self._request_stop()

    def delete(self, path: str) -> None:
        """Delete one checkpoint from disk."""
        mon = self.monitor
        try:
            self.store().delete(path)
        except Exception as exc:  # noqa: BLE001
            mon.channel.emit(CheckpointRefused(path, "delete", str(exc)))
            return
        mon.channel.emit(CheckpointDeleted(path))

    def _emit_list(self) -> None:
        try:
            entries = tuple(self.store().entries())
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("listing checkpoints", exc)
            return
        self.monitor.channel.emit(CheckpointList(str(self.directory), entries))
