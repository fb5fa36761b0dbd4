"""Per-metric comparison figures of a run folder: last epoch's mean, best value, step of best.

What the runs table and ``tfstudio runs`` compare. The "last" figure of a metric is the
mean of its last epoch (what Keras prints for the epoch), never the last batch's value.
A run with no epoch values for a metric (a custom training loop, a ``tf.summary`` log)
uses its per-step values instead, and says so (:attr:`MetricSummary.per_step`).

Tags read (a tfstudio run folder and a Keras ``TensorBoard`` folder alike):

- ``epoch/NAME`` (tfstudio), ``train/epoch_NAME`` and ``validation/epoch_NAME``
  (Keras: ``val_NAME``): epoch means.
- ``step/NAME``, ``running/NAME`` (tfstudio), ``train/batch_NAME`` (Keras), any other
  scalar tag: per-step values.
- ``system/...`` samples, learning rates and the inspector's ``weights/``,
  ``gradients/`` and ``outputs/`` figures are no metrics here.

:class:`SummaryReader` reads a folder incrementally (only what was appended since its
last :meth:`~SummaryReader.update`), so a live run is followed cheaply.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from tfstudio.core.eventfile import TagColumns
from tfstudio.core.locations import UrlPath
from tfstudio.core.run_reading import EPOCH_PREFIX, STEP_PREFIX, RunFolderReader

RUNNING_PREFIX = "running/"
CHUNK_BYTES = 1 << 20  # read at a time by SummaryReader.update (about 30 ms of decoding)
# Not metrics: system samples, learning rates, the inspector's weight, gradient and layer
# output figures (``weights/...``; Keras's TensorBoard ``train/kernel/...`` histograms'
# scalars alike), HParams plugin records.
SKIPPED = re.compile(
    r"^(system/|(\w+/)?(weights|gradients|outputs)/|_hparams_/)|learning_rate$|(^|/)lr$"
)
# Names whose best value is the highest; every other metric's best is its lowest.
HIGHER_IS_BETTER = re.compile(
    r"(acc|accuracy|auc|precision|recall|f1|fbeta|iou|r2|top_k|hit|ndcg|map|psnr|ssim)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric of one run, as compared across runs.

    ``last``: its last epoch's mean (or, with ``per_step``, its last per-step value);
    ``best``: the lowest (the highest for accuracy-like metrics) of those values;
    ``best_step``: the global step where ``best`` was recorded (an epoch's end step);
    ``per_step``: the run recorded no epoch values for it: the figures are per-step values.
    """

    name: str
    last: float | None
    best: float | None
    best_step: int | None
    per_step: bool = False
    epochs: int = 0  # epoch values seen (0 with per_step)

    def as_json(self) -> dict[str, float | int | bool | None]:
        """``{last_epoch_mean, best, best_step, per_step}`` (the ``--json`` shape)."""
        return {
            "last_epoch_mean": self.last,
            "best": self.best,
            "best_step": self.best_step,
            "per_step": self.per_step,
        }


def higher_is_better(name: str) -> bool:
    """True for a metric whose best value is its highest (accuracy, AUC, precision ...)."""
    return bool(HIGHER_IS_BETTER.search(name)) and "loss" not in name.lower()


def metric_of(tag: str) -> tuple[str, bool] | None:
    """(metric name, is an epoch value) of a scalar tag; None for a tag that is no metric."""
    if SKIPPED.search(tag):
        return None
    if tag.startswith(EPOCH_PREFIX):
        return tag[len(EPOCH_PREFIX) :], True
    for prefix in (STEP_PREFIX, RUNNING_PREFIX):
        if tag.startswith(prefix):
            return tag[len(prefix) :], False
    keras = re.match(r"^(train|validation)/(epoch|batch|evaluation)_(.+?)(_vs_iterations)?$", tag)
    if keras:
        folder, kind, name, _ = keras.groups()
        val = folder == "validation"
        name = f"val_{name}" if val and not name.startswith("val_") else name
        return name, kind != "batch"
    return tag, False


@dataclass(slots=True)
class _Acc:
    """Running figures of one tag: last value and step, best value and step, count."""

    higher: bool
    last: float | None = None
    best: float | None = None
    best_step: int | None = None
    count: int = 0

    def add(self, steps: np.ndarray, values: np.ndarray) -> None:
        finite = np.isfinite(values)
        if not finite.any():
            return
        steps, values = steps[finite], values[finite]
        self.last = float(values[-1])
        self.count += len(values)
        i = int(np.argmax(values) if self.higher else np.argmin(values))
        v = float(values[i])
        better = self.best is None or (v > self.best if self.higher else v < self.best)
        if better:
            self.best, self.best_step = v, int(steps[i])


class SummaryReader:
    """A run folder's metric figures, read incrementally: call :meth:`update` to follow it.

    Meant for one thread at a time (the runs panel's summary thread, the CLI).
    """

    def __init__(self, run_dir: str | os.PathLike[str] | UrlPath) -> None:
        self.folder = RunFolderReader(run_dir)
        self._accs: dict[tuple[str, bool], _Acc] = {}
        self._order: list[str] = []  # metric names, first seen first

    def update(self, chunk_bytes: int = CHUNK_BYTES) -> dict[str, MetricSummary]:
        """Read what was appended; returns every metric's figures so far.

        Reads ``chunk_bytes`` at a time: on a reading thread, the UI thread gets the
        interpreter between chunks (a big run read at once holds it for a long stretch).
        """
        while not self.folder.cancelled:
            before = self.folder.progress()[0]
            self.add_columns(self.folder.read(chunk_bytes))
            self.folder.histograms_read()  # not kept here
            done, total = self.folder.progress()
            if done >= total or done == before:
                break
            time.sleep(0)  # let another thread run
        return self.summaries()

    def add_columns(self, columns: dict[str, TagColumns]) -> None:
        """Take points read elsewhere (per tag, in file order)."""
        for tag, cols in columns.items():
            found = metric_of(tag)
            if found is None or not len(cols):
                continue
            name, epoch = found
            acc = self._accs.get(found)
            if acc is None:
                acc = self._accs[found] = _Acc(higher_is_better(name))
                if name not in self._order:
                    self._order.append(name)
            acc.add(np.asarray(cols.steps), np.asarray(cols.values, dtype=np.float64))

    def summaries(self) -> dict[str, MetricSummary]:
        """Every metric's figures: from its epoch values where it has any."""
        out: dict[str, MetricSummary] = {}
        for name in _ordered(self._order):
            epoch = self._accs.get((name, True))
            if epoch is not None and epoch.count:
                out[name] = MetricSummary(
                    name, epoch.last, epoch.best, epoch.best_step, False, epoch.count
                )
                continue
            step = self._accs.get((name, False))
            if step is not None and step.count:
                out[name] = MetricSummary(name, step.last, step.best, step.best_step, True)
        return out

    def notes(self) -> list[str]:
        """One sentence per damaged event file (empty when all read cleanly)."""
        return self.folder.notes()


def _ordered(names: list[str]) -> list[str]:
    """Metric names in the order a reader expects: loss first, each one before its val_."""

    def key(name: str) -> tuple[int, str, int]:
        base = name[4:] if name.startswith("val_") else name
        return (0 if base == "loss" else 1, base, 1 if name.startswith("val_") else 0)

    return sorted(names, key=key)


def summarize_run(run_dir: str | os.PathLike[str] | UrlPath) -> dict[str, MetricSummary]:
    """Every metric's comparison figures of a run folder (any TensorBoard log folder)."""
    return SummaryReader(run_dir).update()


def format_value(value: float | int | None) -> str:
    """A figure as the table shows it: 4 significant digits, "" when unknown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"
