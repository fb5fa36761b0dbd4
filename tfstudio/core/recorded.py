"""A recorded run's inspector data, rebuilt as inspector events (no TensorFlow, no Qt).

The recorder writes each sampled step's weight and gradient statistics as
scalars (``weights/<path>/mean`` ...) and their distributions as histograms
(``weights/<path>``, ``gradients/<path>``), and the variables' shapes into
``run.json``. :func:`inspector_events` turns them back into the
:class:`WeightStats` / :class:`GradientStats` events the live inspector views
draw from, so a past run's weights and gradients are seen as they were.

Histograms of a TensorBoard log folder tfstudio did not write (Keras's
``TensorBoard(histogram_freq=1)``, ``tf.summary.histogram``) come back as
weights named after their tags, so their distributions over steps can be seen
in the same heat maps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfstudio.core.events import (
    GradientStats,
    GradientVariable,
    LayerOutput,
    LayerOutputs,
    ModelNode,
    ModelTree,
    VariableInfo,
    VariableStats,
    WeightStats,
)
from tfstudio.core.keras_folders import histogram_steps
from tfstudio.core.runs import Histogram, TagPoints

WEIGHTS = "weights/"
GRADIENTS = "gradients/"
OUTPUTS = "outputs/"
GLOBAL_NORM = "gradients/global_norm"


def _at(curves: Mapping[str, TagPoints], tag: str) -> dict[int, float]:
    curve = curves.get(tag)
    if curve is None:
        return {}
    return dict(zip(curve.steps, curve.values, strict=True))


def _values(curves: Mapping[str, TagPoints], path: str) -> dict[int, tuple[float, ...]]:
    """The recorded values of a small variable per step (``weights/<path>/values/<j>``)."""
    prefix = f"{WEIGHTS}{path}/values/"
    columns = sorted(
        (int(tag[len(prefix) :]), tag)
        for tag in curves
        if tag.startswith(prefix) and tag[len(prefix) :].isdigit()
    )
    out: dict[int, list[float]] = {}
    for _, tag in columns:
        for step, value in _at(curves, tag).items():
            out.setdefault(step, []).append(value)
    return {step: tuple(v) for step, v in out.items() if len(v) == len(columns)}


def _counts(h: Histogram) -> tuple[int, ...]:
    return tuple(int(round(c)) for c in h.counts)


def _weight_path(tag: str) -> str | None:
    """The variable a histogram tag is about (None for gradients and layer outputs)."""
    if tag.startswith(WEIGHTS):
        return tag[len(WEIGHTS) :]
    if tag.startswith((GRADIENTS, OUTPUTS)):
        return None
    # a foreign log: the tag names the variable (Keras's TensorBoard callback writes
    # train/<model>/<layer>/<variable>/histogram)
    folder, _, rest = tag.partition("/")
    if folder in ("train", "validation") and rest:
        tag = rest
    return tag.removesuffix("/histogram")


def inspector_events(
    scalars: Mapping[str, TagPoints],
    histograms: Mapping[str, list[Histogram]],
    info: Mapping[str, Any] | None = None,
) -> list[WeightStats | GradientStats | LayerOutputs]:
    """Weight, gradient and layer-output events of a recorded run, in step order.

    Layer outputs come back as their statistics and histograms over steps (the
    thumbnails and matrices of the last sample are not recorded).

    Args:
        scalars: the run's scalar series (``RunReader.scalars``).
        histograms: its histograms (``RunReader.histograms``).
        info: its ``run.json`` (for the variables' shapes), if any.
    """
    shapes = {p: tuple(s) for p, s in dict((info or {}).get("variables") or {}).items()}
    # Keras's TensorBoard callback writes histograms at epoch numbers: at their epochs' ends
    place = histogram_steps(scalars)
    histograms = {
        tag: [_at_step(h, place(h.step, h.wall)) for h in hists]
        if place is not None and tag.startswith("train/")
        else hists
        for tag, hists in histograms.items()
    }
    weights: dict[int, list[VariableStats]] = {}
    gradients: dict[int, list[GradientVariable]] = {}
    for tag, hists in histograms.items():
        path = _weight_path(tag)
        if path is not None:
            stats = {k: _at(scalars, f"{WEIGHTS}{path}/{k}") for k in ("mean", "std", "norm")}
            zeros = _at(scalars, f"{WEIGHTS}{path}/zero_fraction")
            values = _values(scalars, path)
            for h in hists:
                if not h.counts:
                    continue
                lo, hi = h.edges[0], h.edges[-1]
                mean = stats["mean"].get(h.step)
                norm = stats["norm"].get(h.step, float("nan"))
                if mean is None:  # a foreign histogram: its statistics from its buckets
                    mean, std = _moments(h)
                    norm = _norm(h)
                else:
                    std = stats["std"].get(h.step, 0.0)
                weights.setdefault(h.step, []).append(
                    VariableStats(
                        path,
                        shapes.get(path, ()),
                        mean,
                        std,
                        lo,
                        hi,
                        norm,
                        zeros.get(h.step, float("nan")),
                        _counts(h),
                        values.get(h.step, ()),
                    )
                )
        elif tag.startswith(GRADIENTS):
            path = tag[len(GRADIENTS) :]
            norms = _at(scalars, f"{GRADIENTS}{path}/norm")
            for h in hists:
                if not h.counts:
                    continue
                gradients.setdefault(h.step, []).append(
                    GradientVariable(
                        path,
                        norms.get(h.step, float("nan")),
                        h.edges[0],
                        h.edges[-1],
                        _counts(h),
                    )
                )
    outputs = _layer_outputs(scalars, histograms)
    events: list[tuple[int, int, WeightStats | GradientStats | LayerOutputs]] = []
    for step, variables in weights.items():
        events.append((step, 0, WeightStats(0, step, tuple(variables))))
    global_norm = _at(scalars, GLOBAL_NORM)
    for step in sorted(set(gradients) | set(global_norm)):
        norm = global_norm.get(step, float("nan"))
        events.append((step, 1, GradientStats(0, step, norm, tuple(gradients.get(step, ())))))
    for step, layers in outputs.items():
        events.append((step, 2, LayerOutputs(0, step, 0, tuple(layers))))
    events.sort(key=lambda e: (e[0], e[1]))
    return [e for _, _, e in events]


def _layer_outputs(
    scalars: Mapping[str, TagPoints], histograms: Mapping[str, list[Histogram]]
) -> dict[int, list[LayerOutput]]:
    """Each sampled step's layer outputs (``outputs/<path>`` histograms and statistics)."""
    out: dict[int, list[LayerOutput]] = {}
    for tag, hists in histograms.items():
        if not tag.startswith(OUTPUTS):
            continue
        path = tag[len(OUTPUTS) :]
        stats = {
            k: _at(scalars, f"{OUTPUTS}{path}/{k}")
            for k in ("mean", "std", "zero_fraction", "dead_fraction")
        }
        name = path.rsplit("/", 1)[-1]
        for h in hists:
            if not h.counts:
                continue
            nan = float("nan")
            layers = out.setdefault(h.step, [])
            layers.append(
                LayerOutput(
                    index=len(layers),
                    name=name,
                    path=path,
                    class_name="",
                    depth=path.count("/"),
                    shape=(),
                    dtype="",
                    mean=stats["mean"].get(h.step, nan),
                    std=stats["std"].get(h.step, nan),
                    min=h.edges[0],
                    max=h.edges[-1],
                    zero_fraction=stats["zero_fraction"].get(h.step, nan),
                    dead_fraction=stats["dead_fraction"].get(h.step, nan),
                    hist=_counts(h),
                )
            )
    return out


def _moments(h: Histogram) -> tuple[float, float]:
    """Mean and standard deviation of a histogram (bucket centres weighted by counts)."""
    total = sum(h.counts)
    if total <= 0:
        return float("nan"), float("nan")
    centres = [(a + b) / 2 for a, b in zip(h.edges[:-1], h.edges[1:], strict=True)]
    mean = sum(c * n for c, n in zip(centres, h.counts, strict=True)) / total
    var = sum(n * (c - mean) ** 2 for c, n in zip(centres, h.counts, strict=True)) / total
    return mean, var**0.5


def _norm(h: Histogram) -> float:
    """L2 norm of the values a histogram counts, from its bucket centres (as its mean and
    standard deviation are): ``sqrt(sum(count * centre**2))``."""
    if sum(h.counts) <= 0:
        return float("nan")
    centres = [(a + b) / 2 for a, b in zip(h.edges[:-1], h.edges[1:], strict=True)]
    return sum(n * c * c for c, n in zip(centres, h.counts, strict=True)) ** 0.5


def _at_step(h: Histogram, step: int) -> Histogram:
    return h if h.step == step else Histogram(step, h.wall, h.edges, h.counts)


def model_tree(info: Mapping[str, Any]) -> ModelTree | None:
    """A recorded run's model tree, rebuilt from its variables' paths and shapes in
    ``run.json`` (layers' classes and output shapes are not recorded: said so); None
    when the run recorded no variables."""
    shapes = {
        str(p): tuple(int(d) for d in s) for p, s in dict(info.get("variables") or {}).items()
    }
    if not shapes:
        return None
    segments = [s for s in info.get("segments") or [] if isinstance(s, dict)]
    root_class = str(segments[0].get("class") or "") if segments else ""

    def node(path: str, depth: int) -> ModelNode:
        prefix = path + "/"
        mine = [p for p in shapes if p.startswith(prefix)]
        variables = tuple(
            VariableInfo(p[len(prefix) :], p, shapes[p], "", True)
            for p in mine
            if "/" not in p[len(prefix) :]
        )
        children: list[str] = []
        for p in mine:
            rest = p[len(prefix) :]
            if "/" in rest and rest.split("/", 1)[0] not in children:
                children.append(rest.split("/", 1)[0])
        kids = tuple(node(prefix + c, depth + 1) for c in children)
        params = sum(_count(v.shape) for v in variables) + sum(k.trainable_params for k in kids)
        name = path.rsplit("/", 1)[-1]
        kind = root_class if depth == 0 and root_class else "(not recorded)"
        return ModelNode(name, path, kind, "?", "", params, 0, variables, kids)

    roots = list(dict.fromkeys(p.split("/", 1)[0] for p in shapes))
    if len(roots) == 1:
        root = node(roots[0], 0)
    else:  # variables under several roots: one node above them
        kids = tuple(node(r, 1) for r in roots)
        params = sum(k.trainable_params for k in kids)
        root = ModelNode("model", "model", root_class, "?", "", params, 0, (), kids)
    return ModelTree(0, root, "(recorded: the variables' shapes; layer classes not recorded)")


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
