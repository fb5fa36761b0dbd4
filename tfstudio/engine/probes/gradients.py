"""Gradients as the optimizer applies them, inside the train step Keras traces anyway.

Every optimizer the model uses (``model.optimizer`` and optimizers held as
attributes, e.g. a GAN's two) gets its ``apply`` wrapped for the fit; Keras's
``train_step`` and custom ``train_step``s that call ``apply_gradients`` both go
through it. The wrapper adds its recording to the step when Keras traces its train
function (the fit's first step, as it always does): no second trace of the step, and
the first sample has the first step's gradients. The values the optimizer sees and
applies are untouched: the wrapper only reads them. Three ways:

- **Derived from the optimizer's state** (Adam, AdamW, Adamax, Nadam, Lion, SGD with
  momentum; one replica, ``steps_per_execution`` 1, no gradient accumulation, no
  ``LossScaleOptimizer``, dense gradients, at most ``COPY_LIMIT`` values): nothing is
  added to the step. The optimizer's first moment ``m`` is read on the host at the
  hook before a sampled step (:meth:`GradientProbe.arm`) and after it; its update rule
  is inverted (Adam family: ``m += (g - m)(1 - beta_1)``, Lion: ``m = beta_2 m +
  (1 - beta_2) g``, SGD: ``m = momentum m - lr g``) to give the gradient the step
  applied (clipped, if the optimizer clips), up to float rounding. A sample whose
  optimizer did not advance by exactly one iteration has no gradients from it.

The others, by the model's size:

- **Copies** (at most ``COPY_LIMIT`` trainable values, dense gradients, no loss
  scale, one replica): every step assigns each gradient to a buffer of its own (one
  op a variable, no control flow); a sample reads the buffers and summarises them on
  the host (norm, min, max, histogram: ``weights.summarize_host``).
- **Summaries on armed steps** (larger models, sparse gradients, loss scaling,
  several replicas): one conditional on a boolean ``tf.Variable`` the inspector sets
  one hook before a sampled step (*arming*); taken, it writes the gradients' sums of
  squares, minima, maxima and histograms into a few kB of buffers; untaken, it does
  nothing. It stays one functional ``If`` op (lowered to Switch/Merge, the untaken
  branch's dead nodes cost more); the summaries are one traced function called from
  the branch, over the gradients concatenated in chunks (a few ops a chunk).

On the benchmark's small MLP (1.3-1.8 ms a step, a loaded 2-core CPU) either way
added about 3% to a step (2.8-3.8% copies, 3.8-6.7% the conditional, noisy): the
price of any op in a step that short; the copies trace in 0.07 s, the conditional's
summaries in 0.15-0.25 s (added to Keras's trace of the first step).

Under ``tf.distribute`` with several replicas the gradients are taken where the
optimizer has summed them over the replicas (its ``_all_reduce_sum_gradients``).
Under mixed precision (a ``LossScaleOptimizer``, or ``loss_scale_factor``) ``apply``
receives the gradients times the loss scale: they are recorded divided by it, as the
weights get them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from tfstudio.core.events import GradientStats, GradientVariable
from tfstudio.engine.probes.model import variable_path
from tfstudio.engine.probes.values import host_value, host_values, write
from tfstudio.engine.probes.weights import BINS, summarize_host

# Elements summarised together in one concatenation on a recorded step: bounds the
# temporary memory of a recorded step (~5 float32 copies of a chunk) on large models.
CHUNK = 1 << 22
SMALL_CHUNK = 1 << 16
# Models with at most this many trainable values keep each step's gradients as copies
# (one assign a variable a step, 64 MB of float32 at most): cheaper per step than any
# conditional on a small fast model; the summaries are made when a sample reads them.
# Larger models summarise on armed steps only (the conditional: memory-neutral).
COPY_LIMIT = 1 << 24  # a chunk this small takes its segment ids as one constant (256 kB)


def find_optimizers(model: Any) -> list[Any]:
    """``model.optimizer`` and any optimizer the model holds as an attribute."""
    import keras

    found: list[Any] = []
    candidates = [getattr(model, "optimizer", None), *vars(model).values()]
    for obj in candidates:
        if isinstance(obj, keras.optimizers.Optimizer) and all(obj is not o for o in found):
            found.append(obj)
    return found


def loss_scale(optimizer: Any) -> Any:
    """The factor ``optimizer.apply`` divides the gradients by before using them, or None.

    Under mixed precision a ``LossScaleOptimizer`` receives gradients of the
    loss times its dynamic scale (2**15 at first) and unscales them; a plain
    optimizer with ``loss_scale_factor`` does the same with a fixed factor.
    """
    if getattr(optimizer, "inner_optimizer", None) is not None:  # LossScaleOptimizer
        scale = getattr(optimizer, "dynamic_scale", None)  # made when the optimizer is built
        return scale if scale is not None else getattr(optimizer, "initial_scale", None)
    return getattr(optimizer, "loss_scale_factor", None)


def _replicas() -> int:
    """Replicas in sync in the present replica context (1 outside a strategy)."""
    ctx = tf.distribute.get_replica_context()
    return 1 if ctx is None else int(ctx.num_replicas_in_sync)


def chunks(sizes: list[int], limit: int = CHUNK) -> list[list[int]]:
    """Consecutive positions grouped so each group holds at most ``limit`` elements
    (a larger tensor is a group of its own)."""
    groups: list[list[int]] = []
    total = 0
    for i, n in enumerate(sizes):
        if groups and total + n <= limit:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups


def summarize_many(tensors: list[Any], bins: int = BINS) -> tuple[tf.Tensor, tf.Tensor]:
    """``[sum of squares, min, max]`` per tensor ``(n, 3)`` and their histograms ``(n, bins)``.

    The histograms are :func:`weights.summarize`'s: ``bins`` equal bins over each
    tensor's own ``[min, max]``. Computed over the tensors concatenated, a chunk of
    at most ``CHUNK`` elements at a time: ~25 ops a chunk whatever the number of
    tensors (so adding them to a train step's trace costs little).
    """
    flat_shape = tf.constant([-1])  # one constant for every reshape (fewer ops to trace)
    flat = []
    for t in tensors:
        t = tf.reshape(t, flat_shape)
        flat.append(t if t.dtype == tf.float32 else tf.cast(t, tf.float32))
    sizes = [int(f.shape[0]) if f.shape[0] is not None else 0 for f in flat]
    stats, hists = [], []
    for group in chunks(sizes):
        k = len(group)
        x = tf.concat([flat[i] for i in group], 0) if k > 1 else flat[group[0]]
        if k == 1:
            ssq = tf.reduce_sum(tf.square(x), keepdims=True)
            lo = tf.reduce_min(x, keepdims=True)
            hi = tf.reduce_max(x, keepdims=True)
            lo_e, hi_e, key = lo, hi, None
        else:
            counts_of = [sizes[i] for i in group]
            if sum(counts_of) <= SMALL_CHUNK:  # the segment of each element, as one constant
                seg = tf.constant(np.repeat(np.arange(k, dtype=np.int32), counts_of))
            else:
                ends = tf.constant(np.cumsum(counts_of).astype(np.int32))
                seg = tf.searchsorted(ends, tf.range(sum(counts_of)), side="right")
            ssq = tf.math.unsorted_segment_sum(tf.square(x), seg, k)
            lo = tf.math.unsorted_segment_min(x, seg, k)
            hi = tf.math.unsorted_segment_max(x, seg, k)
            lo_e, hi_e = tf.gather(lo, seg), tf.gather(hi, seg)
            key = seg * bins
        width = tf.maximum(hi_e - lo_e, 1e-12)
        idx = tf.clip_by_value(tf.cast(tf.floor((x - lo_e) / width * bins), tf.int32), 0, bins - 1)
        if key is not None:
            idx = key + idx
        counts = tf.math.unsorted_segment_sum(tf.ones_like(x), idx, k * bins)
        stats.append(tf.stack([ssq, lo, hi], axis=1))
        hists.append(tf.reshape(tf.cast(counts, tf.int32), [k, bins]))
    if len(stats) == 1:
        return stats[0], hists[0]
    return tf.concat(stats, 0), tf.concat(hists, 0)


def _unlowered_cond(
    pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], lower: bool = False
) -> None:
    """``tf.cond`` kept as one functional ``If`` op in a graph (not lowered to Switch/Merge:
    the untaken branch then costs nothing); eagerly, the branch is just called.

    Args:
        lower: let TF lower it as usual (needed where the branch writes variables on
            several devices: one ``If`` op cannot be placed on all of them).
    """
    if tf.executing_eagerly():
        (true_fn if bool(pred) else false_fn)()
        return
    if lower:
        tf.cond(pred, true_fn, false_fn)
        return
    from tensorflow.python.ops import control_flow_util_v2

    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    tf.cond(pred, true_fn, false_fn)
    for op in graph.get_operations()[before:]:
        if op.type in ("If", "StatelessIf"):
            control_flow_util_v2.maybe_set_lowering_attr(op, False)


def derivable(opt: Any, steps_per_execution: int = 1, replicas: int = 1) -> tuple[str, str] | None:
    """How this optimizer's applied gradients can be read from its state, or None.

    ``("ema", attr)``: ``m += (g - m) * (1 - beta_1)`` (Adam, AdamW, Adamax, Nadam);
    ``("lion", attr)``: ``m = beta_2 * m + (1 - beta_2) * g``; ``("sgd", attr)``:
    ``m = momentum * m - lr * g``. ``attr`` names the list of ``m`` slots. Only when
    each step updates ``m`` once with that step's gradient: one replica, one step an
    execution, no gradient accumulation, not a ``LossScaleOptimizer`` (it can skip a
    step), the library's own update (a subclass overriding ``update_step`` is not).
    """
    from keras.src.backend.tensorflow.optimizer import TFOptimizer
    from keras.src.optimizers.adam import Adam
    from keras.src.optimizers.adamax import Adamax
    from keras.src.optimizers.lion import Lion
    from keras.src.optimizers.nadam import Nadam
    from keras.src.optimizers.sgd import SGD

    if steps_per_execution != 1 or replicas != 1:
        return None
    if getattr(opt, "gradient_accumulation_steps", None):
        return None
    if getattr(opt, "inner_optimizer", None) is not None:
        return None
    cls = type(opt)
    backend_steps = (TFOptimizer._backend_update_step, Nadam._backend_update_step)
    if cls._backend_update_step not in backend_steps:
        return None
    update = cls.update_step
    if update is Adam.update_step or update is Nadam.update_step:
        return ("ema", "_momentums")
    if update is Adamax.update_step:
        return ("ema", "_m")
    if update is Lion.update_step:
        return ("lion", "_momentums")
    if update is SGD.update_step and float(getattr(opt, "momentum", 0.0) or 0.0) != 0.0:
        return ("sgd", "momentums")
    return None


class _Derived:
    """One optimizer whose gradients are derived from its state (see :func:`derivable`)."""

    def __init__(self, opt: Any, rule: str, attr: str) -> None:
        self.opt = opt
        self.rule = rule
        self.attr = attr
        # (model index, variable) of each gradient the step applies: known once the
        # wrapper has seen a step (when Keras traced it); None: not derived after all.
        self.pairs: list[tuple[int, Any]] | None = []
        self.prev: tuple[int, list[np.ndarray] | None] | None = None  # iteration, m's
        self.advanced = 1  # iterations the optimizer took over the last sampled step
        f32 = np.float32
        if rule == "ema":
            from keras.src.optimizers.nadam import Nadam

            beta_1 = float(opt.beta_1)
            # Nadam casts beta_1 first (float32 arithmetic), Adam/Adamax multiply by the
            # Python float 1 - beta_1 (made float32 by the multiply).
            one_minus = f32(1.0) - f32(beta_1) if isinstance(opt, Nadam) else f32(1.0 - beta_1)
            self.a, self.b = float(one_minus), 0.0
        elif rule == "lion":
            beta_2 = f32(float(opt.beta_2))
            self.a, self.b = float(f32(1.0) - beta_2), float(beta_2)
        else:
            self.a, self.b = 0.0, float(f32(float(opt.momentum)))

    def slots(self) -> list[Any] | None:
        """The optimizer's ``m`` slots (by its variable index), None before it is built."""
        if not getattr(self.opt, "built", False):
            return None
        return list(getattr(self.opt, self.attr, None) or []) or None

    def snapshot(self) -> None:
        """Read the iteration count and every ``m`` now (before a sampled step)."""
        slots = self.slots()
        values = host_values([self.opt.iterations, *(slots or [])])
        self.prev = (int(values[0]), values[1:] if slots else None)

    def learning_rate(self, iteration: int) -> float:
        """The learning rate the step at ``iteration`` used (float32, as the update casts it)."""
        from keras.src.optimizers.schedules.learning_rate_schedule import LearningRateSchedule

        lr = self.opt._learning_rate
        if isinstance(lr, LearningRateSchedule):
            value = lr(tf.constant(iteration, self.opt.iterations.dtype))
        elif callable(lr) and not hasattr(lr, "assign"):
            value = lr()
        else:
            value = lr
        return float(np.float32(host_value(value)))

    def gradients(self) -> dict[int, np.ndarray]:
        """The gradients the step since :meth:`snapshot` applied, by model index (empty if
        the optimizer did not advance by exactly one iteration); the snapshot moves on."""
        prev = self.prev
        self.snapshot()
        now = self.prev
        assert now is not None
        if not self.pairs or prev is None or now[1] is None:
            return {}
        self.advanced = now[0] - prev[0]
        if self.advanced != 1:
            return {}
        before = prev[1]
        now_m = now[1]
        lr = self.learning_rate(prev[0]) if self.rule == "sgd" else 0.0
        if self.rule == "sgd" and lr == 0.0:
            return {}
        out: dict[int, np.ndarray] = {}
        for i, variable in self.pairs:
            k = self.opt._get_variable_index(variable)
            m = now_m[k].astype(np.float64)
            m0 = before[k].astype(np.float64) if before is not None else np.zeros_like(m)
            if self.rule == "ema":
                g = m0 + (m - m0) / self.a
            elif self.rule == "lion":
                g = (m - self.b * m0) / self.a
            else:
                g = (self.b * m0 - m) / lr
            out[i] = g.astype(np.float32)
        return out


class GradientProbe:
    """Records the gradients the model's optimizers apply, on armed steps only.

    Args:
        model: the model being trained.
        on_error: called with the exception if recording fails (training goes on).
    """

    def __init__(
        self, model: Any, on_error: Callable[[BaseException], None], bins: int = BINS
    ) -> None:
        self.model = model
        self.bins = bins
        self.on_error = on_error
        self.variables: list[Any] = []
        self.paths: list[str] = []
        self._index: dict[int, int] = {}
        self._stats: Any = None
        self._hists: Any = None
        self._seen: Any = None
        self._unseen: Any = None  # zeros to reset _seen with after a sample
        self._flag: Any = None  # True: the coming step records
        self._on: Any = None
        self._off: Any = None
        self._wrapped: list[Any] = []
        self._reduced: list[Any] = []  # optimizers whose all-reduce is wrapped (replicas)
        self._functions: dict[tuple[tuple[int, ...], bool], Any] = {}  # see _add_recording
        self._copy_ok: bool | None = None  # small enough to keep the gradients as copies
        self._copies: dict[int, Any] = {}  # variable index -> its gradient's buffer
        self._copied: set[int] = set()  # indices whose buffer a step writes
        self._function: Any = None  # the train function made with the wrapper in place
        # Optimizers whose gradients are derived from their state, by id (chosen when the
        # train function is made: their step holds no recording).
        self._derived: dict[int, _Derived] = {}
        self._fresh = False  # the derived snapshots are those of the last sample
        # Set by a sample where a derived optimizer did not take exactly one step: why
        # its gradients are missing (the inspector tells it once).
        self.dropped = ""
        self.armed = False
        # Whether a traced (or eager) train step holds the recording: set while the
        # wrapper runs, i.e. while Keras traces the step with it installed.
        self.in_step = False
        self.trace_seconds = 0.0  # time the wrapper added to Keras's traces (on ``clock``)
        self.clock: Callable[[], float] = time.perf_counter  # the inspector's clock

    def _ensure_buffers(self) -> None:
        """Index the trainable variables and make the buffers, once they exist.

        Subclassed models create their variables in the first step, so this runs
        when the first gradients arrive (at trace time: under ``init_scope``, as
        Keras's optimizers create their own variables).
        """
        if self._stats is not None:
            return
        self.variables = list(self.model.trainable_variables)
        self.paths = [variable_path(v) for v in self.variables]
        self._index = {id(v): i for i, v in enumerate(self.variables)}
        for i, v in enumerate(self.variables):
            inner = getattr(v, "value", None)  # keras.Variable wraps a tf.Variable
            if inner is not None and not callable(inner):
                self._index.setdefault(id(inner), i)
        n, bins = max(len(self.variables), 1), self.bins
        # Under a tf.distribute strategy these become mirrored variables, written from
        # the replicas' step: every replica computes the same (all-reduced) figures and
        # the first replica's are kept.
        first = tf.VariableAggregation.ONLY_FIRST_REPLICA
        with tf.init_scope():
            self._stats = tf.Variable(
                tf.zeros([n, 3]), trainable=False, name="tfstudio_grad", aggregation=first
            )
            self._hists = tf.Variable(
                tf.zeros([n, bins], tf.int32), trainable=False, aggregation=first
            )
            self._seen = tf.Variable(tf.zeros([n]), trainable=False, aggregation=first)
            self._unseen = tf.zeros([n])  # (tf.zeros_like of a read array: ~0.5 ms a sample)

    def _ensure_flag(self) -> None:
        """The armed flag, made before the first trace so the first step can record."""
        if self._flag is not None:
            return
        with tf.init_scope():
            self._flag = tf.Variable(
                False,
                trainable=False,
                name="tfstudio_grad_armed",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            self._on, self._off = tf.constant(True), tf.constant(False)

    # -- install / remove ------------------------------------------------
    def install(self, steps_per_execution: int = 1) -> int:
        """Wrap the optimizers' ``apply``; returns how many.

        Each optimizer whose gradients can be derived from its state (:func:`derivable`)
        is chosen for that way when the train function is made: nothing is added to its
        step. The others get the copies or the conditional.

        Keras traces its train function at the fit's first step, with the wrapper in
        place. A train function this probe did not see made (the one ``fit`` has just
        made, not traced yet; or one traced before, by ``train_on_batch`` or a fit
        without the inspector) is made again, so its first call traces the step with
        the recording; one made for an earlier fit of this probe is kept, traced.
        """
        model = self.model
        for opt in find_optimizers(model):
            if "apply" in vars(opt):
                continue  # already wrapped (by us or someone else): leave it
            original = opt.apply
            opt.__dict__["apply"] = self._wrap(original)
            self._wrapped.append(opt)
            inner = getattr(opt, "inner_optimizer", None) or opt  # a LossScaleOptimizer's
            reduce = getattr(inner, "_all_reduce_sum_gradients", None)
            if reduce is not None and "_all_reduce_sum_gradients" not in vars(inner):
                inner.__dict__["_all_reduce_sum_gradients"] = self._wrap_reduce(reduce)
                self._reduced.append(inner)
        if not self._wrapped:
            return 0
        self._fresh = False
        if model.train_function is None or model.train_function is not self._function:
            self._derived = {}
            strategy = getattr(model, "distribute_strategy", None)
            replicas = int(getattr(strategy, "num_replicas_in_sync", 1) or 1)
            total = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
            for opt in self._wrapped:
                how = derivable(opt, steps_per_execution, replicas)
                if how is not None and total <= COPY_LIMIT:  # (m read twice a sample)
                    self._derived[id(opt)] = _Derived(opt, *how)
            model.make_train_function(force=True)
        if any(id(opt) not in self._derived for opt in self._wrapped):
            self._ensure_flag()
        self._function = model.train_function
        return len(self._wrapped)

    def remove(self) -> None:
        """Put the optimizers' ``apply`` back and disarm (the traced step keeps its branch,
        never taken while the flag is off)."""
        for opt in self._wrapped:
            opt.__dict__.pop("apply", None)
        for opt in self._reduced:
            opt.__dict__.pop("_all_reduce_sum_gradients", None)
        self._wrapped = []
        self._reduced = []
        self.disarm()

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def apply(grads: Any, trainable_variables: Any = None, *args: Any, **kwargs: Any) -> Any:
            grads = list(grads)
            if _replicas() > 1:  # recorded once summed: see _wrap_reduce
                if trainable_variables is None:
                    return original(grads, *args, **kwargs)
                return original(grads, trainable_variables, *args, **kwargs)
            try:
                opt = original.__self__
                variables = trainable_variables
                if variables is None:
                    variables = getattr(opt, "_trainable_variables", None) or []
                derived = self._derived.get(id(opt))
                if derived is None or not self._derive(derived, grads, list(variables)):
                    self._add_recording(grads, list(variables), loss_scale(opt))
            except Exception as exc:  # noqa: BLE001 - monitoring never breaks training
                self.on_error(exc)
            if trainable_variables is None:
                return original(grads, *args, **kwargs)
            return original(grads, trainable_variables, *args, **kwargs)

        return apply

    def _wrap_reduce(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Under several replicas: record the gradients the optimizer has summed over them.

        A collective cannot run inside the recording's conditional, so the gradients
        are taken after the optimizer's own all-reduce, and recorded in a ``merge_call``
        (cross-replica context, where the mirrored buffers are written without one).
        """

        def reduce(grads_and_vars: Any) -> Any:
            out = original(grads_and_vars)
            ctx = tf.distribute.get_replica_context()
            if ctx is None or ctx.num_replicas_in_sync <= 1:
                return out
            pairs = [(g, v) for g, v in out if g is not None]
            variables = [v for _, v in pairs]

            def merged(strategy: Any, *grads: Any) -> None:
                local = [strategy.experimental_local_results(g)[0] for g in grads]
                self._add_recording(local, variables, None, lower=True)

            try:
                ctx.merge_call(merged, args=tuple(g for g, _ in pairs))
            except Exception as exc:  # noqa: BLE001 - monitoring never breaks training
                self.on_error(exc)
            return out

        return reduce

    def _derive(self, derived: _Derived, grads: list[Any], variables: list[Any]) -> bool:
        """Note which variables this step's gradients are for: their values will be
        derived from the optimizer's state; adds nothing to the step. False (and the
        optimizer goes the recorded way) if a gradient is sparse."""
        if derived.pairs is None:
            return False
        self._ensure_buffers()
        pairs = []
        for g, v in zip(grads, variables, strict=False):
            if g is None or getattr(v, "overwrite_with_gradient", False):
                continue
            if not isinstance(g, tf.Tensor | tf.Variable | np.ndarray):
                derived.pairs = None  # IndexedSlices: recorded, not derived
                return False
            i = self._index.get(id(v))
            if i is None:
                i = self._index.get(id(getattr(v, "value", None)))
            if i is not None:
                pairs.append((i, v))
        derived.pairs = pairs
        self.in_step = True
        return True

    def _add_recording(
        self, grads: list[Any], variables: list[Any], scale: Any, lower: bool = False
    ) -> None:
        """Add (while tracing) or run (eagerly) the recording of these gradients, armed."""
        started = self.clock()
        self._ensure_buffers()
        pairs = []
        for g, v in zip(grads, variables, strict=False):
            i = self._index.get(id(v))
            if i is None:
                i = self._index.get(id(getattr(v, "value", None)))
            if g is not None and i is not None:
                pairs.append((i, g))
        if not pairs:
            return
        if scale is None and not lower and self._copyable():
            dense = [(i, g) for i, g in pairs if isinstance(g, tf.Tensor | tf.Variable)]
            if dense:
                self._copy(dense)
                pairs = [(i, g) for i, g in pairs if all(i != j for j, _ in dense)]
            if not pairs:
                self.in_step = True
                if not tf.executing_eagerly():
                    self.trace_seconds += self.clock() - started
                return

        def record() -> None:
            if lower or tf.executing_eagerly():
                self._record([i for i, _ in pairs], [g for _, g in pairs], scale)
                return
            # One traced function per set of variables, called from the branch: Keras
            # traces its step twice at the first step, the summaries are built once.
            key = (tuple(i for i, _ in pairs), scale is not None)
            function = self._functions.get(key)
            if function is None:
                function = tf.function(self._record, autograph=False)
                self._functions[key] = function
            grads = [tf.convert_to_tensor(g) for _, g in pairs]
            function(list(key[0]), grads, None if scale is None else tf.convert_to_tensor(scale))

        _unlowered_cond(self._flag, record, lambda: None, lower)
        self.in_step = True
        if not tf.executing_eagerly():
            self.trace_seconds += self.clock() - started

    def _copyable(self) -> bool:
        """Whether this model's gradients are small enough to be kept as copies."""
        if self._copy_ok is None:
            total = sum(int(np.prod(v.shape)) for v in self.variables)
            self._copy_ok = total <= COPY_LIMIT
        return self._copy_ok

    def _copy(self, pairs: list[tuple[int, Any]]) -> None:
        """Keep these gradients in device buffers: at every step in a traced step (one
        assign each, no control flow), on armed steps only when eager."""
        if tf.executing_eagerly() and not self.armed:
            return
        for i, g in pairs:
            buffer = self._copies.get(i)
            if buffer is None:
                with tf.init_scope():
                    buffer = tf.Variable(tf.zeros(g.shape, g.dtype), trainable=False)
                self._copies[i] = buffer
            buffer.assign(g)
            self._copied.add(i)

    def _record(self, index: list[int], grads: list[Any], scale: Any = None) -> None:
        """Write the summaries of ``grads`` (of the variables at ``index``) to the buffers."""
        indices = tf.constant([[i] for i in index], tf.int32)
        grads = [tf.convert_to_tensor(g) for g in grads]
        if scale is not None:  # the gradients the model really gets: unscaled
            grads = [g / tf.cast(tf.convert_to_tensor(scale), g.dtype) for g in grads]
        stats, hists = summarize_many(grads, self.bins)
        if list(index) == list(range(int(self._seen.shape[0]))):  # all, in order
            self._stats.assign(stats)
            self._hists.assign(hists)
            self._seen.assign(tf.ones_like(self._unseen))
            return
        # assign, not scatter_nd_update: mirrored variables only support assign.
        for buffer, rows in (
            (self._stats, stats),
            (self._hists, hists),
            (self._seen, tf.ones([len(index)])),
        ):
            buffer.assign(tf.tensor_scatter_nd_update(buffer.read_value(), indices, rows))

    # -- sampling ----------------------------------------------------------
    def arm(self) -> None:
        """Record the gradients of the coming train-function calls (until :meth:`disarm`);
        read the derived optimizers' state before the coming step (unless the last sample,
        just taken, read it)."""
        if not self._wrapped:
            return
        if not self._fresh:
            for derived in self._derived.values():
                try:
                    derived.snapshot()
                except Exception as exc:  # noqa: BLE001 - monitoring never breaks training
                    derived.prev = None
                    self.on_error(exc)
        self._fresh = False
        if self.armed:
            return
        if self._flag is not None:
            write(self._flag, self._on)
        self.armed = True

    def disarm(self) -> None:
        """Stop recording: the coming steps take the branch that does nothing."""
        if self._flag is not None and self.armed:
            write(self._flag, self._off)
        self.armed = False
        self._fresh = False

    def sample(self, fit_index: int, step: int) -> GradientStats | None:
        """Read what the last armed step recorded (None if nothing was recorded); the
        recording stays armed until :meth:`disarm` (the next sample may be the next step)."""
        if self._seen is None:
            return None
        rows: dict[int, tuple[float, float, float, tuple[int, ...]]] = {}
        for derived in self._derived.values():
            try:
                derived_rows = derived.gradients()
            except Exception as exc:  # noqa: BLE001 - that optimizer's rows are left out
                derived.prev = None
                self.on_error(exc)
                continue
            if derived.advanced != 1 and not derived_rows:
                self.dropped = (
                    f"optimizer {getattr(derived.opt, 'name', '?')!r} took "
                    f"{derived.advanced} steps during a sampled training step; its gradients "
                    "are read from its state, which holds one step's, so samples where it "
                    "does not step exactly once have no gradients from it."
                )
            for i, value in derived_rows.items():
                st, hist = summarize_host(value, self.bins)
                rows[i] = (float(st[4]) ** 2, float(st[2]), float(st[3]), tuple(hist.tolist()))
        self._fresh = bool(self._derived)
        seen = host_values([self._seen])[0]
        if seen.any():
            stats, hists = host_values([self._stats, self._hists])
            write(self._seen, self._unseen)
            ssq_min_max, counts = stats.tolist(), hists.tolist()  # Python numbers at once
            for i in np.flatnonzero(seen).tolist():
                ssq, lo, hi = ssq_min_max[i]
                if math.isinf(lo) and lo > 0:  # an empty gradient: no values
                    lo = hi = 0.0
                rows[i] = (ssq, lo, hi, tuple(counts[i]))
        copied = sorted(self._copied)
        if tf.executing_eagerly() and copied and not self.armed:
            copied = []  # eager copies are made on armed steps only
        for i, value in zip(copied, host_values([self._copies[i] for i in copied]), strict=True):
            st, hist = summarize_host(value, self.bins)
            ssq = float(st[4]) ** 2
            rows[i] = (ssq, float(st[2]), float(st[3]), tuple(hist.tolist()))
        if not rows:
            return None
        out = []
        total = 0.0
        for i in sorted(rows):
            ssq, lo, hi, hist = rows[i]
            total += ssq
            out.append(GradientVariable(self.paths[i], math.sqrt(ssq), lo, hi, hist))
        return GradientStats(fit_index, step, math.sqrt(total), tuple(out))
