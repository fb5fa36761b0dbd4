"""A folder written by Keras's ``TensorBoard`` callback, read as a live run would show it.

``keras.callbacks.TensorBoard(log_dir, update_freq="batch", histogram_freq=1)`` writes
``<log_dir>/train`` and ``<log_dir>/validation``:

- ``train/batch_<m>`` at the fit's batch count (1, 2, ...; restarting at each ``fit``):
  Keras's *running mean* over the epoch so far, not the batch's own value;
- ``train/epoch_<m>`` and ``validation/epoch_<m>`` at the *epoch number* (0, 1, 2);
- ``validation/evaluation_<m>_vs_iterations`` at the optimizer's iterations when the
  epoch's validation ended;
- ``train/<model>/<layer>/<var>/histogram`` at the epoch number.

:class:`KerasSteps` places them as tfstudio's live runs are drawn: each epoch value
at the step where its epoch ended (the last batch step written before it, or the
iterations of the validation that ended that epoch), and each running mean turned
back into the batch's own value within its epoch, ``(k*m_k - j*m_j) / (k - j)`` for
two successive points ``j < k`` of one epoch (``k*m_k - (k-1)*m_{k-1}`` with
``update_freq="batch"``; the first point of an epoch is its own mean). That takes the
batches of an epoch to be of one size: the last, smaller batch of an epoch whose
samples do not divide evenly is approximate. Metrics that are not means (AUC,
precision, recall, ...) stay running values, as live.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfstudio.core.eventfile import TagColumns
from tfstudio.core.locations import Location
from tfstudio.core.run_store import EPOCH, LR_KEY, RUNNING, SAMPLED, STEP

FOLDERS = ("train", "validation")
# metrics Keras does not compute as a mean of per-batch values: their running value
# cannot give a batch's own (the live callback asks the model; here names tell)
NOT_MEANS = re.compile(
    r"(^|_)(auc|precision|recall|true_positives|true_negatives|false_positives|"
    r"false_negatives|f1_score|fbeta_score|iou|mean_iou|one_hot_iou|one_hot_mean_iou|"
    r"r2_score|root_mean_squared_error|rmse|specificity_at_sensitivity|"
    r"sensitivity_at_specificity|precision_at_recall|recall_at_precision)(_\d+)?$"
)
RAW = ("steps_per_second",)  # batch values Keras writes as they are (not running means)

Column = tuple[str, str, np.ndarray, np.ndarray, np.ndarray]  # key, kind, steps, values, wall


def keras_tag(tag: str) -> tuple[str, str] | None:
    """``(folder, name)`` of a tag from a Keras ``TensorBoard`` folder (``train/batch_loss``
    -> ``("train", "batch_loss")``), None for any other tag."""
    folder, _, name = tag.partition("/")
    if folder not in FOLDERS or "/" in name:
        return None
    if name.startswith(("batch_", "epoch_")) or (
        folder == "validation" and name.startswith("evaluation_")
    ):
        return folder, name
    return None


def is_mean(metric: str) -> bool:
    """Whether a Keras metric's running value is a mean of its batches' values."""
    return not NOT_MEANS.search(metric) and metric not in RAW


@dataclass
class _Folder:
    """What is carried from one read to the next for one of ``train``/``validation``."""

    anchor: tuple[float, int] | None = None  # the latest (wall, step) a step was written at
    ends_wall: list[float] = field(default_factory=list)  # epoch ends: wall times...
    ends_step: list[int] = field(default_factory=list)  # ... and steps, in wall order


class KerasSteps:
    """Maps a Keras ``TensorBoard`` folder's points to a store's keys, kinds and steps,
    one read of the folder at a time (a followed run grows; the points are in file order).

    Carries only a few numbers per tag and one entry per epoch between reads.
    """

    def __init__(self) -> None:
        self._folders = {name: _Folder() for name in FOLDERS}
        self._epoch_step: dict[int, int] = {}  # epoch number -> where it ended (latest fit)
        self._previous: dict[str, tuple[int, float]] = {}  # batch tag -> its last (step, mean)
        # each fit after the first restarts Keras's batch count at 1: from the wall time its
        # first batch was written at, its steps go on from where the fit before ended
        self._fit_walls: list[float] = []
        self._fit_offsets: list[int] = []
        self._last_raw: int | None = None  # the last batch step read, as written
        # (folder, metric) -> epoch points whose step is not known yet: (epoch, value, wall)
        self._held: dict[tuple[str, str], list[tuple[int, float, float]]] = {}

    def columns(self, read: dict[str, TagColumns], final: bool = True) -> list[Column]:
        """The Keras tags among ``read`` (tag -> new points) as store columns, in the
        order epoch values, per-step values (each tag's points in file order).

        ``final``: the folder was read to its end (an epoch value whose step no read has
        told is given then, at an estimated step).
        """
        tags: dict[str, dict[str, TagColumns]] = {name: {} for name in FOLDERS}
        for tag, cols in read.items():
            kt = keras_tag(tag)
            if kt is not None and len(cols):
                tags[kt[0]][kt[1]] = cols
        anchors = {name: self._anchors(name, tags[name]) for name in FOLDERS}
        out: list[Column] = []
        # folders with steps of their own first: one without (update_freq="epoch" and no
        # validation) places its epochs where the other folder placed the same epoch
        for name in sorted(FOLDERS, key=lambda f: not len(anchors[f][0])):
            for base, cols in tags[name].items():
                if base.startswith("epoch_"):
                    column = self._epoch(name, base[len("epoch_") :], cols, anchors[name])
                    if column is not None:
                        out.append(column)
        out += self._release(final)
        for base, cols in tags["train"].items():
            if base.startswith("batch_"):
                out.append(self._batch(base[len("batch_") :], cols))
        for base, cols in tags["validation"].items():
            if base.startswith("batch_"):  # (Keras writes none; another writer might)
                out.append(
                    ("val_" + base[len("batch_") :], STEP, cols.steps, cols.values, cols.wall)
                )
        return out

    def _anchors(self, name: str, tags: dict[str, TagColumns]) -> tuple[np.ndarray, np.ndarray]:
        """(walls, steps) a step was written at in this read, with the one carried from
        the read before, in wall order: batch points (train), the iterations each
        validation ended at (validation)."""
        prefix = "batch_" if name == "train" else "evaluation_"
        walls = [c.wall for base, c in tags.items() if base.startswith(prefix)]
        steps = [c.steps for base, c in tags.items() if base.startswith(prefix)]
        if name == "train" and walls:
            wall, raw = np.concatenate(walls), np.concatenate(steps)
            order = np.argsort(wall, kind="stable")
            self._new_fits(wall[order], raw[order])
            walls, steps = [wall], [self.global_steps(raw, wall)]
        folder = self._folders[name]
        if folder.anchor is not None:
            walls.insert(0, np.array([folder.anchor[0]]))
            steps.insert(0, np.array([folder.anchor[1]], np.int64))
        if not walls:
            return np.empty(0), np.empty(0, np.int64)
        wall, step = np.concatenate(walls), np.concatenate(steps)
        order = np.argsort(wall, kind="stable")
        wall, step = wall[order], step[order]
        folder.anchor = (float(wall[-1]), int(step[-1]))
        return wall, step

    def _new_fits(self, wall: np.ndarray, raw: np.ndarray) -> None:
        """Note where a new fit began among batch steps in wall order (the count went back)."""
        before = np.empty_like(raw)
        before[1:] = raw[:-1]
        before[:1] = raw[0] if self._last_raw is None else self._last_raw
        for i in np.flatnonzero(raw < before).tolist():
            offset = self._fit_offsets[-1] if self._fit_offsets else 0
            self._fit_walls.append(float(wall[i]))
            self._fit_offsets.append(offset + int(before[i]))
        self._last_raw = int(raw[-1])

    def global_steps(self, raw: np.ndarray, wall: np.ndarray) -> np.ndarray:
        """Batch steps as written (each fit from 1) as the run's global steps."""
        if not self._fit_walls:
            return raw
        at = np.searchsorted(np.asarray(self._fit_walls), wall, side="right") - 1
        offsets = np.asarray(self._fit_offsets, np.int64)
        return raw + np.where(at >= 0, offsets[np.maximum(at, 0)], 0)

    @property
    def fits(self) -> int:
        """How many fits wrote batch steps to the folder, as read so far."""
        return len(self._fit_walls) + (self._last_raw is not None)

    def _epoch(
        self, name: str, metric: str, cols: TagColumns, anchors: tuple[np.ndarray, np.ndarray]
    ) -> Column | None:
        """One ``epoch_<m>`` tag's points at the steps where their epochs ended; a point
        whose step is not known yet is held (see :meth:`_release`)."""
        walls, steps = anchors
        at = np.searchsorted(walls, cols.wall, side="right") - 1
        folder = self._folders[name]
        keep: list[int] = []
        placed: list[int] = []
        for i, (e, a) in enumerate(zip(cols.steps.tolist(), at.tolist(), strict=True)):
            if a >= 0:
                step = int(steps[a])
                self._epoch_step[e] = step
                if not folder.ends_wall or cols.wall[i] > folder.ends_wall[-1]:
                    if not folder.ends_step or folder.ends_step[-1] != step:
                        folder.ends_wall.append(float(cols.wall[i]))
                        folder.ends_step.append(step)
            elif e in self._epoch_step:  # where the other folder put that epoch
                step = self._epoch_step[e]
            else:  # no step written before it (yet): the other folder may tell
                held = self._held.setdefault((name, metric), [])
                held.append((e, float(cols.values[i]), float(cols.wall[i])))
                continue
            keep.append(i)
            placed.append(step)
        if not keep:
            return None
        return self._column(
            name, metric, np.asarray(placed, np.int64), cols.values[keep], cols.wall[keep]
        )

    @staticmethod
    def _column(
        name: str, metric: str, steps: np.ndarray, values: np.ndarray, wall: np.ndarray
    ) -> Column:
        if metric == "learning_rate":
            return LR_KEY, SAMPLED, steps, values, wall
        val = "val_" if name == "validation" else ""
        return val + metric, EPOCH, steps, values, wall

    def _release(self, final: bool) -> list[Column]:
        """Held epoch points whose epoch's step is now known; with ``final`` (the folder
        is read to its end) the rest too, at a step estimated from the epochs placed (or,
        with none, at their epoch number)."""
        out = []
        for (name, metric), held in list(self._held.items()):
            ready = [(e, v, w) for e, v, w in held if e in self._epoch_step or final]
            if not ready:
                continue
            rest = [h for h in held if h not in ready]
            if rest:
                self._held[(name, metric)] = rest
            else:
                del self._held[(name, metric)]
            steps = np.asarray([self._step_of(e) for e, _, _ in ready], np.int64)
            values = np.asarray([v for _, v, _ in ready], np.float64)
            wall = np.asarray([w for _, _, w in ready], np.float64)
            out.append(self._column(name, metric, steps, values, wall))
        return out

    def _step_of(self, epoch: int) -> int:
        """Where ``epoch`` ended: as placed, else estimated from the epochs placed (steps
        per epoch from the first and last of them), else the epoch number itself."""
        if epoch in self._epoch_step:
            return self._epoch_step[epoch]
        known = sorted(self._epoch_step.items())
        if not known:
            return epoch
        (e0, s0), (e1, s1) = known[0], known[-1]
        per = (s1 - s0) / (e1 - e0) if e1 > e0 else s0 / (e0 + 1)
        return int(round(s1 + (epoch - e1) * per))

    def _batch(self, metric: str, cols: TagColumns) -> Column:
        """One ``batch_<m>`` tag: each point's own value within its epoch (a mean), or the
        running value as it is (a metric that is not a mean)."""
        steps = self.global_steps(cols.steps, cols.wall)
        if not is_mean(metric):
            kind = STEP if metric in RAW else RUNNING
            return metric, kind, steps, cols.values, cols.wall
        own = self.own_values(steps, cols.values, cols.wall, self._previous.get("batch_" + metric))
        self._previous["batch_" + metric] = (int(steps[-1]), float(cols.values[-1]))
        return metric, STEP, steps, own, cols.wall

    def own_values(
        self,
        steps: np.ndarray,
        means: np.ndarray,
        wall: np.ndarray,
        previous: tuple[int, float] | None = None,
    ) -> np.ndarray:
        """Each batch's own value from the running means ``means`` at ``steps`` (written
        at ``wall``), within the epochs this reader has placed.

        ``previous``: the (step, mean) written just before ``steps[0]``, if any.
        """
        folder = self._folders["train"]
        s = steps.astype(np.int64)
        m = means.astype(np.float64)
        ends_wall = np.asarray(folder.ends_wall, np.float64)
        ends_step = np.asarray(folder.ends_step, np.int64)
        last_end = np.searchsorted(ends_wall, wall, side="right") - 1
        if len(ends_step):
            start = np.where(last_end >= 0, ends_step[np.maximum(last_end, 0)], 0)
        else:
            start = np.zeros_like(s)
        start = np.where(start >= s, 0, start)  # an end of an earlier fit: this fit's first epoch
        prev_s = np.empty_like(s)
        prev_m = np.empty_like(m)
        prev_s[1:], prev_m[1:] = s[:-1], m[:-1]
        if previous is None:
            prev_s[:1], prev_m[:1] = -1, np.nan
        else:
            prev_s[:1], prev_m[:1] = previous
        same_epoch = (prev_s >= start) & (prev_s < s) & (prev_s >= 0)
        k = (s - start).astype(np.float64)
        j = (prev_s - start).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            derived = (k * m - j * prev_m) / (k - j)
        return np.where(same_epoch & (j > 0), derived, m)


def run_of(path: Location) -> Location:
    """The run a folder belongs to: ``<run>`` for ``<run>/train`` or ``<run>/validation``
    (the halves Keras's ``TensorBoard`` writes), else the folder itself."""
    return path.parent if path.name in FOLDERS else path


def histogram_steps(scalars: Mapping[str, Any]) -> Callable[[int, float], int] | None:
    """Where a Keras ``TensorBoard`` folder's histograms go, from its scalars (tag -> points
    with ``steps``, ``values`` and ``wall``, e.g. ``RunReader``'s): a function of a
    histogram's step (its epoch number) and wall time giving the step where that epoch
    ended (the last epoch value written before it); None for any other folder."""
    ks = KerasSteps()
    columns = ks.columns(
        {
            tag: TagColumns(
                np.asarray(p.steps, np.int64),
                np.asarray(p.values, np.float64),
                np.asarray(p.wall, np.float64),
            )
            for tag, p in scalars.items()
            if keras_tag(tag) is not None
        }
    )
    placed = [(c[4], c[2]) for c in columns if c[1] in (EPOCH, SAMPLED)]
    if not placed:
        return None
    wall = np.concatenate([w for w, _ in placed])
    order = np.argsort(wall, kind="stable")
    wall, steps = wall[order], np.concatenate([s for _, s in placed])[order]

    def step_of(epoch: int, at: float) -> int:
        i = int(np.searchsorted(wall, at, side="right")) - 1
        return int(steps[i]) if i >= 0 else ks._step_of(epoch)

    return step_of
