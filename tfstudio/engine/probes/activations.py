"""Every layer's output on a probe batch, captured by wrapping each layer's ``call``.

The probe batch is the first few samples of the fit's first training batch,
kept for the whole fit. At a sampled step the model runs on it once, eagerly
and in inference mode (``training=False``); while it runs, each layer's
``call`` (every sublayer of nested and subclassed models too) is wrapped so its
output is kept. The order the wrappers are entered is the forward walk. Each
output is summarised on the spot (stats, histogram, dead units, 8-bit
thumbnails) so only kilobytes leave the worker.

A probe leaves the model as it found it: a layer may write a variable in
``call`` (a counter, a seed generator's state). The traced probe's graph is
searched for every variable it may write; their values are read before each
probe and put back after it, so the script computes exactly what it computes
without tfstudio. A write to a variable the probe cannot name drops the layer
outputs for the fit, with one note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import tensorflow as tf

from tfstudio.core.events import LayerOutput, LayerOutputs
from tfstudio.core.terminal import plain_text
from tfstudio.engine.probes.model import sublayers
from tfstudio.engine.probes.values import variables_restored

PROBE_SAMPLES = 8
BINS = 30
MAX_CHANNELS = 16  # channel thumbnails per layer and sample
THUMB_SAMPLES = 4  # samples with thumbnails (the view lets the user pick one)
MAX_SIDE = 32  # thumbnail side, pixels
MAX_UNITS = 64  # columns of the samples x units matrix


def probe_batch(data: Any, samples: int = PROBE_SAMPLES) -> Any:
    """The inputs of the first batch of ``fit``'s ``x`` (first ``samples`` rows), or None.

    Arrays and tensors are sliced; a ``tf.data.Dataset`` gives its first element
    (one more pass over one batch of the pipeline), unless it reshuffles every
    pass (:func:`reshuffles`). Generators and ``PyDataset``s are not touched
    (reading would consume them): None.
    """
    if data is None:
        return None
    if isinstance(data, tf.data.Dataset):
        if reshuffles(data):
            return None  # see reshuffles(): reading a batch would change the script's order
        try:  # one graph op, no iterator resource: about half the cost of next(iter(...))
            element = data.take(1).get_single_element()
        except Exception:  # noqa: BLE001 - e.g. a distributed dataset: iterate instead
            element = next(iter(data.take(1)))
        if isinstance(element, tuple | list) and len(element) in (1, 2, 3):
            element = element[0]  # (x, y[, sample_weight])
        return _head(element, samples)
    if isinstance(data, np.ndarray | tf.Tensor) or _is_structure_of_arrays(data):
        return _head(data, samples)
    return None


def reshuffles(data: Any) -> bool:
    """True when ``data`` is a ``tf.data.Dataset`` with a shuffle that reshuffles every pass.

    Each new pass over such a dataset draws the next seed from the shuffle's seed
    generator, which every copy of the pipeline shares: reading one probe batch
    would shift the order of every later epoch of the script, and the script
    would no longer compute what it computes without tfstudio.
    """
    seen: set[int] = set()
    todo = [data]
    while todo:
        node = todo.pop()
        if id(node) in seen or not isinstance(node, tf.data.Dataset):
            continue
        seen.add(id(node))
        flag = getattr(node, "_reshuffle_each_iteration", None)
        if flag is not None:
            try:
                if bool(flag):
                    return True
            except Exception:  # noqa: BLE001 - a symbolic flag: assume it reshuffles
                return True
        try:
            todo.extend(node._inputs())
        except Exception:  # noqa: BLE001 - a dataset that does not say its inputs
            continue
    return False


def _is_structure_of_arrays(data: Any) -> bool:
    leaves = tf.nest.flatten(data) if isinstance(data, dict | list | tuple) else []
    return bool(leaves) and all(isinstance(x, np.ndarray | tf.Tensor) for x in leaves)


def _head(element: Any, samples: int) -> Any:
    def cut(x: Any) -> Any:
        x = tf.convert_to_tensor(x)
        return x[:samples] if x.shape.rank else x

    return tf.nest.map_structure(cut, element)


class ActivationProbe:
    """Runs the probe batch through the model and summarises every layer's output.

    Args:
        model: the model being trained.
        inputs: the probe batch (see :func:`probe_batch`).
        note: tells the user once about a layer that cannot be probed.
    """

    def __init__(self, model: Any, inputs: Any, note: Callable[[str], None]) -> None:
        self.model = model
        self.inputs = inputs
        self._note = note
        self._noted: set[str] = set()
        self.disabled = False
        self.off_reason = ""  # why it is disabled (the Layer outputs tab says it)
        self.samples = int(tf.nest.flatten(inputs)[0].shape[0] or 0) if inputs is not None else 0
        self._layers = _all_layers(model)
        self._fn: Any = None  # the traced probe; False: eager passes instead
        self._meta: list[tuple[Any, str, int]] = []
        self._unprobeable: set[int] = set()
        self._written: list[Any] = []  # variables the traced probe writes: put back each time
        # Tracing the probe costs more than an eager pass: under a time budget the
        # inspector runs eager passes until the budget has room for the trace.
        self.allow_trace = True

    @property
    def needs_trace(self) -> bool:
        """True until the probe is traced (or found not traceable, or disabled)."""
        return self._fn is None and not self.disabled

    def sample(self, fit_index: int, step: int) -> LayerOutputs | None:
        """Every layer's output on the probe batch now (None if the model cannot be probed)."""
        if self.disabled or self.inputs is None:
            return None
        if self._fn is None and self.allow_trace:
            self._build()
            if self.disabled:
                return None
        if self._fn is not None and self._fn is not False:
            with variables_restored(self._written):
                outputs = [t.numpy() for t in self._fn(self.inputs)]
            for i in self._unprobeable:
                outputs[i] = None
            records = [(*meta, out) for meta, out in zip(self._meta, outputs, strict=True)]
        else:  # not traced (yet, or not traceable): the eager pass, wrappers in place
            records = self._eager_records()
            if records is None:
                return None
        layers = []
        for index, (layer, path, depth, output) in enumerate(records):
            summary = self._summarize(index, layer, path, depth, output)
            if summary is not None:
                layers.append(summary)
        return LayerOutputs(fit_index, step, self.samples, tuple(layers))

    def _build(self) -> None:
        """Trace one ``tf.function`` returning every layer's output (wrappers in place).

        The wrappers only run while it is traced: afterwards a probe is one graph
        call (a few ms), not an eager pass through every layer (~50 ms for the
        CNN example on a loaded 2-core machine). If the model cannot be traced,
        the eager pass is used at each sample instead.
        """
        records: list[list[Any]] = []

        def run(inputs: Any) -> list[tf.Tensor]:
            records.clear()
            self.model(inputs, training=False)
            out = []
            for slot in records:
                tensor = _first_numeric(slot[3])
                if tensor is None:
                    tensor = tf.zeros([0])  # summarised as "not a numeric tensor"
                    slot[3] = None
                out.append(tensor)
            return out

        fn = tf.function(run, autograph=False)
        try:
            with self._wrapped(records):
                concrete = fn.get_concrete_function(self.inputs)
        except Exception:  # noqa: BLE001 - not traceable: the eager pass at each sample
            self._fn = False
            return
        written = written_variables(concrete)
        if written is None:
            self.disabled = True
            self.off_reason = (
                f"Layer outputs of '{self.model.name}' are not sampled: calling it "
                "writes a variable the probe cannot put back, and a probe must not change "
                "what the script computes"
            )
            self._note_once(self.model.name, "Inspector: " + self.off_reason)
            return
        self._written = written
        self._meta = [(layer, path, depth) for layer, path, depth, _ in records]
        self._unprobeable = {i for i, slot in enumerate(records) if slot[3] is None}
        self._fn = fn

    def _eager_records(self) -> list[tuple[Any, str, int, Any]] | None:
        records: list[list[Any]] = []
        try:
            # Eager: no graph to search for writes, so every model variable is put back.
            with variables_restored(self.model.variables), self._wrapped(records):
                self.model(self.inputs, training=False)
        except Exception as exc:  # noqa: BLE001 - e.g. call() needs extra arguments
            self.disabled = True
            self.off_reason = (
                f"Layer outputs of '{self.model.name}' ({type(self.model).__name__}) cannot "
                f"be probed, skipped: calling it on the probe batch failed with "
                f"{type(exc).__name__}: {brief_error(exc)} (weights and gradients are still "
                "sampled)"
            )
            self._note_once(self.model.name, "Inspector: l" + self.off_reason[1:])
            return None
        return [(layer, path, depth, out) for layer, path, depth, out in records]

    @contextmanager
    def _wrapped(self, records: list[list[Any]]) -> Iterator[None]:
        """Every layer's ``call`` wrapped to append its output to ``records``."""
        wrapped: list[Any] = []
        try:
            for layer, path, depth in self._layers:
                if "call" in vars(layer):
                    continue  # someone else patched this instance; leave it alone
                layer.__dict__["call"] = self._wrap(layer, path, depth, records)
                wrapped.append(layer)
            yield
        finally:
            for layer in wrapped:
                layer.__dict__.pop("call", None)

    def _wrap(self, layer: Any, path: str, depth: int, records: list[list[Any]]) -> Any:
        original = type(layer).call.__get__(layer)

        def call(*args: Any, **kwargs: Any) -> Any:
            slot = [layer, path, depth, None]
            records.append(slot)  # entry order: the forward walk
            out = original(*args, **kwargs)
            slot[3] = out
            return out

        return call

    def _summarize(
        self, index: int, layer: Any, path: str, depth: int, output: Any
    ) -> LayerOutput | None:
        tensors = [t for t in tf.nest.flatten(output) if isinstance(t, tf.Tensor | np.ndarray)]
        if output is None or not tensors or not _numeric(tensors[0]):
            self._note_once(
                path,
                f"Inspector: output of layer '{path}' ({type(layer).__name__}) is not a "
                f"numeric tensor ({type(output).__name__}): skipped in layer outputs",
            )
            return None
        x = np.asarray(tensors[0], dtype=np.float32)
        dtype = tf.as_dtype(tensors[0].dtype).name
        return summarize_output(
            index, layer.name, path, type(layer).__name__, depth, x, dtype, activation_of(layer)
        )

    def _note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self._note(text)


def brief_error(exc: BaseException, limit: int = 240) -> str:
    """The line of an exception's message that says what went wrong, for a one-line note.

    Keras wraps an error raised in a layer's ``call`` as "Exception encountered when
    calling X.call().", a blank line, the error, then the arguments it got: the note
    keeps the error (without the terminal's bold codes Keras puts around it).
    """
    lines = [line.strip() for line in plain_text(str(exc)).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Exception encountered when calling")]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def activation_of(layer: Any) -> str:
    """The activation ``layer`` applies last, by name ("" when it has none).

    A ``ReLU``/``LeakyReLU`` layer is ``"relu"`` when it has no negative slope (it
    outputs 0 for every negative input) and ``"leaky_relu"`` otherwise.
    """
    kind = type(layer).__name__
    if kind in ("ReLU", "LeakyReLU"):
        slope = getattr(layer, "negative_slope", 0.0 if kind == "ReLU" else 0.3)
        try:
            return "relu" if float(slope) == 0.0 else "leaky_relu"
        except (TypeError, ValueError):
            return ""
    fn = getattr(layer, "activation", None)
    if fn is None or not callable(fn):
        return ""
    name = getattr(fn, "__name__", "") or type(fn).__name__
    return activation_of(fn) if name == type(fn).__name__ and hasattr(fn, "call") else name


# Ops that take a variable's handle and only read it; any other consumer may write it.
_READ_ONLY_OPS = frozenset(
    {"ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VariableShape", "VarIsInitializedOp"}
)


def written_variables(concrete: Any) -> list[Any] | None:
    """The variables a traced function may write (None if a written handle has no variable).

    A captured resource handle counts as written when any op other than a plain
    read consumes it (assignments, stateful random ops, nested function calls):
    put back too often rather than too rarely.
    """
    graph = concrete.graph
    by_handle = {id(v.handle): v for v in graph.variables}
    written = []
    for external, internal in graph.captures:
        if internal.dtype != tf.resource:
            continue
        if all(op.type in _READ_ONLY_OPS for op in internal.consumers()):
            continue
        variable = by_handle.get(id(external))
        if variable is None:
            return None
        written.append(variable)
    return written


def _first_numeric(output: Any) -> Any:
    for t in tf.nest.flatten(output):
        if isinstance(t, tf.Tensor | np.ndarray) and _numeric(t):
            return t
    return None


def _numeric(t: Any) -> bool:
    dtype = tf.as_dtype(t.dtype)
    return dtype.is_floating or dtype.is_integer or dtype.is_bool


def _all_layers(model: Any) -> list[tuple[Any, str, int]]:
    """The model and every sublayer at any depth (each once), with path and depth."""
    out: list[tuple[Any, str, int]] = []
    seen: set[int] = set()

    def walk(layer: Any, path: str, depth: int) -> None:
        if id(layer) in seen or depth > 16:
            return
        seen.add(id(layer))
        if type(layer).__name__ != "InputLayer":
            out.append((layer, path, depth))
        for sub in sublayers(layer):
            walk(sub, f"{path}/{sub.name}", depth + 1)

    walk(model, model.name, 0)
    return out


def summarize_output(
    index: int,
    name: str,
    path: str,
    class_name: str,
    depth: int,
    x: np.ndarray,
    dtype: str,
    activation: str = "",
) -> LayerOutput:
    """Statistics, histogram, dead units and 8-bit pictures of one layer's output."""
    flat = x.reshape(-1)
    finite = flat[np.isfinite(flat)] if flat.size else flat
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 0.0
    # A constant output still needs BINS distinct edges: float64, and a width that
    # survives the magnitude of the value (lo + 1e-12 == lo in float32 for |lo| > 1e-5).
    top = hi if hi > lo else lo + max(abs(lo) * 1e-9, 1e-12)
    hist = np.histogram(finite.astype(np.float64), bins=BINS, range=(lo, top))[0]
    dead = 0.0
    if x.ndim >= 2 and x.shape[-1] > 0:
        alive = np.any(x.reshape(-1, x.shape[-1]) != 0, axis=0)
        dead = float(1.0 - alive.mean())
    thumbs, thumb_shape = b"", ()
    matrix, matrix_shape, m_lo, m_hi = b"", (), 0.0, 0.0
    if x.ndim == 4 and x.shape[0] > 0:
        thumbs, thumb_shape = _thumbnails(x[:THUMB_SAMPLES])
    elif x.ndim == 2 and x.shape[0] > 0:
        m = _downsample_columns(x, MAX_UNITS)
        m_lo, m_hi = float(m.min()), float(m.max())
        matrix, matrix_shape = _to_uint8(m, m_lo, m_hi).tobytes(), tuple(int(d) for d in m.shape)
    return LayerOutput(
        index=index,
        name=name,
        path=path,
        class_name=class_name,
        depth=depth,
        shape=tuple(int(d) for d in x.shape),
        dtype=dtype,
        mean=float(finite.mean()) if finite.size else 0.0,
        std=float(finite.std()) if finite.size else 0.0,
        min=lo,
        max=hi,
        zero_fraction=float(np.mean(flat == 0)) if flat.size else 0.0,
        dead_fraction=dead,
        hist=tuple(int(c) for c in hist),
        thumbs=thumbs,
        thumb_shape=thumb_shape,
        matrix=matrix,
        matrix_shape=matrix_shape,
        matrix_min=m_lo,
        matrix_max=m_hi,
        activation=activation,
    )


def _thumbnails(nhwc: np.ndarray) -> tuple[bytes, tuple[int, ...]]:
    """Channel maps ``(samples, channels, h, w)``, each scaled to 0..255 on its own.

    At most MAX_CHANNELS channels, sides at most MAX_SIDE (strided).
    """
    _, h, w, _ = nhwc.shape
    step = max(1, -(-max(h, w) // MAX_SIDE))
    maps = np.moveaxis(nhwc[:, ::step, ::step, :MAX_CHANNELS], -1, 1)  # (N, C, h, w)
    lo = maps.min(axis=(2, 3), keepdims=True)
    hi = maps.max(axis=(2, 3), keepdims=True)
    scaled = (maps - lo) / np.maximum(hi - lo, 1e-12) * 255.0
    out = np.nan_to_num(scaled).astype(np.uint8)
    return out.tobytes(), tuple(int(d) for d in out.shape)


def _downsample_columns(x: np.ndarray, limit: int) -> np.ndarray:
    """Mean over groups of columns so at most ``limit`` remain."""
    n, units = x.shape
    if units <= limit:
        return x
    group = -(-units // limit)
    pad = group * -(-units // group) - units  # less than one group: no all-NaN group
    if pad == 0 and np.isfinite(x).all():  # the usual case: plain means (a tenth of the time)
        return x.reshape(n, -1, group).mean(axis=2)
    padded = np.pad(x, ((0, 0), (0, pad)), constant_values=np.nan)
    return np.nanmean(padded.reshape(n, -1, group), axis=2)


def _to_uint8(m: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.nan_to_num((m - lo) / max(hi - lo, 1e-12) * 255.0).astype(np.uint8)
