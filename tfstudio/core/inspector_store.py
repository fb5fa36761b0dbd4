"""What the inspector views show, kept from the inspector's events (no Qt).

Histories are bounded: past ``MAX_SAMPLES`` samples of one variable or layer,
every other old sample is dropped (the older half thins out, the newest stays
dense), so memory stays flat however long the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tfstudio.core.events import (
    FitStarted,
    GradientStats,
    InspectorStatus,
    LayerOutputs,
    ModelNode,
    ModelTree,
    RunEnded,
    RunStarted,
    WeightStats,
)

MAX_SAMPLES = 1000
WEIGHT_STATS = ("mean", "std", "min", "max", "norm", "zero_fraction")
# How the engine begins InspectorStatus.waiting when a fit's gradients cannot be recorded.
GRADIENTS_OFF = "Gradients are not recorded in this fit: "


def gradients_not_recorded(waiting: str) -> str:
    """Why a run that has ended recorded no gradients, in the past tense.

    Args:
        waiting: the inspector's last word on what it does not sample
            (``InspectorStatus.waiting``; "" when it said nothing).
    """
    if waiting.startswith(GRADIENTS_OFF):
        return waiting[len(GRADIENTS_OFF) :].replace(" has no ", " had no ")
    if waiting:
        return waiting[0].lower() + waiting[1:]
    return "the run ended before the inspector's first sample (it comes after the first step)"


@dataclass
class History:
    """Samples over steps: named scalar series, histograms with their ranges, small values."""

    steps: list[int] = field(default_factory=list)
    scalars: dict[str, list[float]] = field(default_factory=dict)
    hists: list[tuple[int, ...]] = field(default_factory=list)
    ranges: list[tuple[float, float]] = field(default_factory=list)
    values: list[tuple[float, ...]] = field(default_factory=list)

    def add(
        self,
        step: int,
        scalars: dict[str, float],
        hist: tuple[int, ...],
        lo: float,
        hi: float,
        values: tuple[float, ...] = (),
    ) -> None:
        """Append one sample (a step already present replaces the last one)."""
        if self.steps and step <= self.steps[-1]:
            self.drop_from(step)
        self.steps.append(step)
        for key, value in scalars.items():
            self.scalars.setdefault(key, []).append(float(value))
        self.hists.append(hist)
        self.ranges.append((lo, hi))
        self.values.append(values)
        if len(self.steps) > MAX_SAMPLES:
            self._thin()

    def drop_from(self, step: float) -> None:
        """Forget the samples at or after ``step``."""
        keep = int(np.searchsorted(self.steps, step, side="left"))
        self._keep(list(range(keep)))

    def _thin(self) -> None:
        half = len(self.steps) // 2
        self._keep(list(range(0, half, 2)) + list(range(half, len(self.steps))))

    def _keep(self, idx: list[int]) -> None:
        self.steps = [self.steps[i] for i in idx]
        self.scalars = {k: [v[i] for i in idx] for k, v in self.scalars.items()}
        self.hists = [self.hists[i] for i in idx]
        self.ranges = [self.ranges[i] for i in idx]
        self.values = [self.values[i] for i in idx]

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Steps and one scalar as arrays."""
        return np.asarray(self.steps, float), np.asarray(self.scalars.get(key, ()), float)


class InspectorStore:
    """Everything the model, weights, gradients, outputs and walk views draw from."""

    def __init__(self) -> None:
        self.recorded_in = ""  # a recorded run's name: its samples come from its folder
        self.loading = False  # a recorded run's samples are being read from its folder
        self.clear()

    def clear(self) -> None:
        """Forget the previous run."""
        self.trees: dict[int, ModelTree] = {}
        self.weights: dict[str, History] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.gradients: dict[str, History] = {}
        self.global_norm = History()
        self.outputs: dict[str, History] = {}
        self.last_outputs: LayerOutputs | None = None
        self.status: InspectorStatus | None = None
        self.kinds: dict[int, str] = {}  # fit index -> "fit 2" or "loop 1" (FitStarted)
        self.ended = False  # the run is over: no sample will come
        self.version = 0  # bumped on every change: views redraw only when it moved

    def ingest(self, event: object) -> bool:
        """Take one event; True if the store changed (an inspector event, a fit's start,
        the run's start or end)."""
        if isinstance(event, WeightStats):
            for v in event.variables:
                self.shapes[v.path] = v.shape
                scalars = {k: getattr(v, k) for k in WEIGHT_STATS}
                hist = self.weights.setdefault(v.path, History())
                hist.add(event.step, scalars, v.hist, v.min, v.max, v.values)
        elif isinstance(event, GradientStats):
            self.global_norm.add(event.step, {"norm": event.global_norm}, (), 0.0, 0.0)
            for g in event.variables:
                hist = self.gradients.setdefault(g.path, History())
                scalars = {"norm": g.norm, "min": g.min, "max": g.max}
                hist.add(event.step, scalars, g.hist, g.min, g.max)
        elif isinstance(event, LayerOutputs):
            self.last_outputs = event
            seen: set[str] = set()
            for lo in event.layers:
                if lo.path in seen:
                    continue  # a shared layer's later calls: the history follows the first
                seen.add(lo.path)
                scalars = {
                    "mean": lo.mean,
                    "std": lo.std,
                    "dead_fraction": lo.dead_fraction,
                    "zero_fraction": lo.zero_fraction,
                }
                hist = self.outputs.setdefault(lo.path, History())
                hist.add(event.step, scalars, lo.hist, lo.min, lo.max)
        elif isinstance(event, ModelTree):
            self.trees[event.fit_index] = event
        elif isinstance(event, InspectorStatus):
            self.status = event
        elif isinstance(event, FitStarted):
            self.kinds[event.fit_index] = event.label()
        elif isinstance(event, RunEnded):
            self.ended = True
        elif isinstance(event, RunStarted):
            self.clear()
        else:
            return False
        self.version += 1
        return True

    def truncate(self, x: float) -> None:
        """Forget the samples at or after step ``x`` (a checkpoint restored to before it)."""
        histories = [
            *self.weights.values(),
            *self.gradients.values(),
            *self.outputs.values(),
            self.global_norm,
        ]
        changed = False
        for history in histories:
            if history.steps and history.steps[-1] >= x:
                history.drop_from(x)
                changed = True
        if changed:
            self.version += 1

    def variables_under(self, path: str | None) -> list[str]:
        """Variable paths of the selected layer/variable (all when ``path`` is None)."""
        paths = list(self.weights) or [p for p in self.gradients]
        if not path:
            return paths
        return [p for p in paths if _under(p, path)] or paths

    def tree_title(self, tree: ModelTree) -> str:
        """The label of a model tree's root: ``fit 2: name`` or ``loop 1: name``."""
        kind = self.kinds.get(tree.fit_index) or f"fit {tree.fit_index + 1}"
        return f"{kind}: {tree.root.name}"

    def empty_text(self, what: str) -> str:
        """What a view with no data of ``what`` says: why none yet, or (the run over) why
        none came, in the past tense.

        Args:
            what: ``"weights"``, ``"gradients"`` or ``"layer outputs"``.
        """
        if self.loading:
            return f"Reading the run's {what} from its folder…"
        s = self.status
        if what == "gradients" and s is not None and s.waiting:
            if self.ended:
                return "No gradients were recorded in this run: " + gradients_not_recorded(
                    s.waiting
                )
            return s.waiting
        if what == "layer outputs" and self.outputs_off:
            return self.outputs_off
        if self.ended:
            if s is None:
                return (
                    f"No {what} were sampled: the run ended before the inspector's first "
                    "sample (after the first training step), or the inspector was off."
                )
            return f"No {what} were sampled in this run."
        return f"No {what} sampled yet: the first sample comes after the first training step."

    @property
    def outputs_off(self) -> str:
        """Why no layer outputs are sampled in the current fit or loop ("" when they are)."""
        return self.status.outputs_off if self.status is not None else ""

    def status_text(self) -> str:
        """One line: cadence, measured overhead, cost of a sample, largest message."""
        if self.loading:
            return "Reading the run's inspector samples from its folder…"
        if self.recorded_in:
            samples = max((len(h.steps) for h in self.weights.values()), default=0)
            return f"Recorded in run '{self.recorded_in}': {samples} samples."
        s = self.status
        if s is None:
            return "Inspector: waiting for the first sample"
        if s.mode == "fixed":
            cadence = f"every {s.every} steps (fixed)"
        else:
            limit = ", at most one a second" if s.capped else ""
            cadence = f"every {s.every} steps (budget {s.budget:.0%}{limit})"
        # NaN until a second of training backs the share (see Cadence.overhead)
        if math.isfinite(s.overhead):
            overhead = f"{s.overhead:.1%}"
            if s.mode != "fixed" and s.overhead > s.budget:  # samples keep within the budget
                overhead += f" (one-off traces at the start; it falls toward {s.budget:.0%})"
        else:  # the run ended before a second of training backed the share
            overhead = "— (too little training to measure)" if self.ended else "— (measuring)"
        return (
            f"Sampling {cadence} · overhead {overhead} · last sample "
            f"{s.probe_ms:.1f} ms · largest message {s.largest_message / 1024:.1f} kB"
        )


def _under(variable_path: str, selected: str) -> bool:
    """A variable belongs to a selection: the variable itself or a layer above it.

    Variable paths start at the model's name (``"seq/dense/kernel"``) as tree
    paths do; nested models' variables may skip the root (``"inner/dense/kernel"``),
    so a match on the path without its first part counts too.
    """
    if variable_path == selected or variable_path.startswith(selected + "/"):
        return True
    tail = selected.split("/", 1)[1] if "/" in selected else ""
    return bool(tail) and (variable_path == tail or variable_path.startswith(tail + "/"))


def find_node(node: ModelNode, path: str) -> ModelNode | None:
    """The node at ``path`` in a tree, or None."""
    if node.path == path:
        return node
    for child in node.children:
        found = find_node(child, path)
        if found is not None:
            return found
    return None


def density_image(
    steps: list[int],
    hists: list[tuple[int, ...]],
    ranges: list[tuple[float, float]],
    rows: int = 64,
    cols: int = 400,
) -> tuple[np.ndarray, tuple[float, float, float, float]] | None:
    """Histograms over time as one image: value on y, step on x, density 0..1 per column.

    Each sample's counts (over its own [min, max]) are placed on a common value
    grid; each column shows the sample nearest its step. Returns
    ``(image[cols, rows], (x0, x1, y0, y1))`` or None without samples.
    """
    n = len(steps)
    if n == 0 or not hists or not len(hists[0]):
        return None
    y0 = min(r[0] for r in ranges)
    y1 = max(r[1] for r in ranges)
    if not np.isfinite(y0) or not np.isfinite(y1):
        return None
    if y1 <= y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    columns = np.zeros((n, rows), np.float32)
    for i, (counts, (lo, hi)) in enumerate(zip(hists, ranges, strict=True)):
        c = np.asarray(counts, np.float32)
        bins = len(c)
        centres = lo + (np.arange(bins) + 0.5) * (hi - lo) / bins if hi > lo else np.full(bins, lo)
        idx = np.clip(((centres - y0) / (y1 - y0) * rows).astype(int), 0, rows - 1)
        np.add.at(columns[i], idx, c)
        peak = columns[i].max()
        if peak > 0:
            columns[i] = np.sqrt(columns[i] / peak)  # sqrt: thin tails stay visible
    x0, x1 = float(steps[0]), float(steps[-1])
    if n == 1 or x1 <= x0:
        return columns[:1].repeat(2, axis=0), (x0 - 0.5, x0 + 0.5, y0, y1)
    cols = int(min(cols, max(2, x1 - x0)))
    centres = x0 + (np.arange(cols) + 0.5) * (x1 - x0) / cols
    at = np.asarray(steps, float)
    right = np.clip(np.searchsorted(at, centres), 1, n - 1)  # nearest sample to each column
    pick = np.where(centres - at[right - 1] < at[right] - centres, right - 1, right)
    return columns[pick], (x0, x1, y0, y1)
