"""Events of the inspector (issue 6): the model, its weights, gradients and layer outputs.

Part of the event vocabulary: import them from :mod:`tfstudio.core.events`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfstudio.core.events_pickling import fast_pickling


@dataclass(frozen=True, slots=True)
class VariableInfo:
    """One variable of a layer, as the model tree shows it.

    Args:
        path: unique Keras path, e.g. ``"sequential/dense/kernel"``; the key
            every weight and gradient event uses for this variable.
    """

    name: str
    path: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool


@dataclass(frozen=True, slots=True)
class ModelNode:
    """A layer (or a nested model) in the model tree, with its sublayers.

    Args:
        path: ``/``-joined names from the root, unique in the tree.
        output_shape: printable shape, ``"?"`` when Keras cannot tell before a probe.
    """

    name: str
    path: str
    class_name: str
    output_shape: str
    dtype: str
    trainable_params: int
    non_trainable_params: int
    variables: tuple[VariableInfo, ...]
    children: tuple[ModelNode, ...]


@dataclass(frozen=True, slots=True)
class ModelTree:
    """The model a ``fit`` trains, announced when the fit starts.

    Args:
        summary: the text ``model.summary()`` prints.
    """

    fit_index: int
    root: ModelNode
    summary: str


@dataclass(frozen=True, slots=True)
class VariableStats:
    """Statistics of one trainable variable at one step, computed on the device.

    Args:
        hist: counts in ``len(hist)`` equal bins over ``[min, max]``.
        values: the values themselves for small variables (at most 16), else ``()``.
    """

    path: str
    shape: tuple[int, ...]
    mean: float
    std: float
    min: float
    max: float
    norm: float
    zero_fraction: float
    hist: tuple[int, ...]
    values: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightStats:
    """Every trainable variable's statistics at a sampled step."""

    fit_index: int
    step: int
    variables: tuple[VariableStats, ...]


@dataclass(frozen=True, slots=True)
class GradientVariable:
    """One variable's gradient at a sampled step (the gradient the optimizer applied).

    Args:
        hist: counts in equal bins over ``[min, max]``.
    """

    path: str
    norm: float
    min: float
    max: float
    hist: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GradientStats:
    """Gradients of a sampled step: per variable, and the global norm over all of them."""

    fit_index: int
    step: int
    global_norm: float
    variables: tuple[GradientVariable, ...]


@dataclass(frozen=True, slots=True)
class LayerOutput:
    """One layer call's output on the probe batch (one entry per call: shared layers repeat).

    Args:
        index: position in the forward walk (order the layers were called in).
        path: the layer's path in the model tree.
        depth: nesting level (0 = the model itself).
        shape: the output's shape, batch first.
        hist: counts in equal bins over ``[min, max]``.
        dead_fraction: share of units (last axis) that are zero for every probe sample.
        thumbs: for ``(N, H, W, C)`` outputs, 8-bit channel maps of the first
            few samples, ``thumb_shape = (samples, channels, h, w)`` (downsampled),
            row-major bytes; each map scaled to 0..255 on its own.
        matrix: for ``(N, units)`` outputs, samples x units as 8-bit (scaled over
            ``[matrix_min, matrix_max]``), ``matrix_shape = (samples, units)``.
        activation: the activation the layer applies to its output (``"relu"``,
            ``"leaky_relu"``, ``"softmax"``, ``"linear"``...); "" when it has none.
    """

    index: int
    name: str
    path: str
    class_name: str
    depth: int
    shape: tuple[int, ...]
    dtype: str
    mean: float
    std: float
    min: float
    max: float
    zero_fraction: float
    dead_fraction: float
    hist: tuple[int, ...]
    thumbs: bytes = b""
    thumb_shape: tuple[int, ...] = ()
    matrix: bytes = b""
    matrix_shape: tuple[int, ...] = ()
    matrix_min: float = 0.0
    matrix_max: float = 0.0
    activation: str = ""


@dataclass(frozen=True, slots=True)
class LayerOutputs:
    """Every layer's output on the probe batch at a sampled step, in forward-walk order.

    Args:
        samples: probe samples (the first few of the first training batch).
    """

    fit_index: int
    step: int
    samples: int
    layers: tuple[LayerOutput, ...]


@dataclass(frozen=True, slots=True)
class InspectorStatus:
    """How often the inspector samples and what it costs, sent with each sample.

    Args:
        mode: ``"budget"`` (cadence adapts to ``budget``) or ``"fixed"`` (every ``every`` steps).
        every: steps between samples now.
        overhead: measured probe time / training time so far in this fit (NaN while
            under a second of training backs it).
        probe_ms: what the last sample cost (all probes), milliseconds.
        largest_message: bytes of the largest inspector event so far (pickled).
        waiting: what is not sampled and why ("" when everything is): a fit's
            gradients, when they cannot be recorded (``inspector_store.GRADIENTS_OFF``
            then the reason).
        outputs_off: why layer outputs are not sampled in this fit ("" when they are):
            no probe batch, or a model that cannot be probed.
        capped: the gap is the budget's floor of one sample a second of training, not
            what the budget would allow (a sample costs less than 3% of a second).
    """

    fit_index: int
    step: int
    mode: str
    every: int
    budget: float
    overhead: float
    probe_ms: float
    largest_message: int = 0
    waiting: str = ""
    outputs_off: str = ""
    capped: bool = False


fast_pickling(globals())
