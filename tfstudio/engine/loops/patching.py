"""Discovery by patching: what is wrapped while a run lasts, and the wrappers.

``tf.GradientTape.gradient`` (a gradient may begin a step), the Keras
optimizer's ``apply`` (``apply_gradients`` calls it), ``assign_sub`` /
``assign_add`` of TensorFlow's resource variables and of Keras variables (an
update completes a step), and ``tf.function``'s ``__call__`` (a call of a
function whose graph holds a step is a step boundary; some calls run a twin
of it, which measures the gradient norm or records for the inspector). Every
replaced attribute is put back on exit.

The wrappers only route: the interceptor's hooks report their own failures, so a
wrapper never adds a ``try`` of its own to the script's call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tfstudio.engine.script import RunStopped

if TYPE_CHECKING:
    from tfstudio.engine.loops.interceptor import LoopInterceptor

_MISSING = object()


class Patches:
    """Class attributes replaced for a run, restored in reverse order."""

    def __init__(self) -> None:
        # (cls, name) -> (what was there, its wrapper), in the order replaced
        self._replaced: dict[tuple[type, str], tuple[Any, Any]] = {}

    def replace(self, cls: type, name: str, make: Callable[[Any], Any]) -> None:
        """Set ``cls.name`` to ``make(current value)``; remember what was there first."""
        key = (cls, name)
        saved = (
            self._replaced[key][0] if key in self._replaced else cls.__dict__.get(name, _MISSING)
        )
        original = getattr(cls, name)
        wrapper = make(original)
        wrapper.__wrapped__ = original
        setattr(cls, name, wrapper)
        self._replaced[key] = (saved, wrapper)

    def restore(self) -> None:
        """Put back every replaced attribute (inherited ones are deleted again)."""
        for (cls, name), (saved, _) in reversed(self._replaced.items()):
            _put_back(cls, name, saved)
        self._replaced = {}


def _put_back(cls: type, name: str, saved: Any) -> None:
    if saved is _MISSING:
        try:
            delattr(cls, name)
        except AttributeError:
            pass
    else:
        setattr(cls, name, saved)


def patch_tensorflow(tf: Any, patches: Patches, it: LoopInterceptor) -> None:
    """Wrap TensorFlow's tape, resource variables and ``tf.function`` calls (and Keras's)."""
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    from tensorflow.python.ops import resource_variable_ops

    patches.replace(tf.GradientTape, "gradient", lambda f: _gradient(f, it))
    # ResourceVariable overrides BaseResourceVariable's methods: wrap both.
    for var_cls in (
        resource_variable_ops.ResourceVariable,
        resource_variable_ops.BaseResourceVariable,
    ):
        for name in ("assign_sub", "assign_add"):
            if name in var_cls.__dict__:
                patches.replace(var_cls, name, lambda f: _assign(f, it))
    function = polymorphic_function.Function
    patches.replace(function, "__call__", lambda f: _function_call(f, it))
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "optimizers"):
        patch_keras(patches, it)
    else:
        it.monitor.on_keras_imported.append(lambda: patch_keras(patches, it))


def patch_keras(patches: Patches, it: LoopInterceptor) -> None:
    """Wrap the Keras optimizer's ``apply`` and Keras variables' ``assign_sub``/``assign_add``."""
    if it.tf is None:
        return  # the run is over
    from keras.src.backend.common.variables import Variable
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    patches.replace(BaseOptimizer, "apply", lambda f: _apply(f, it))
    # keras.Variable.assign_sub is assign(self - value): it never calls tf's assign_sub
    for name in ("assign_sub", "assign_add"):
        patches.replace(Variable, name, lambda f: _assign(f, it))


def _gradient(original: Callable[..., Any], it: LoopInterceptor) -> Callable[..., Any]:
    monitor = it.monitor

    def gradient(tape: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        grads = original(tape, target, sources, *args, **kwargs)
        if monitor.in_fit or it.detector.updating:
            return grads
        if monitor.stop_requested.is_set() and it.eager():
            raise RunStopped()
        it.gradient_taken(target, sources, grads)
        return grads

    return gradient


def _apply(original: Callable[..., Any], it: LoopInterceptor) -> Callable[..., Any]:
    monitor = it.monitor
    detector = it.detector

    def apply(optimizer: Any, grads: Any, trainable_variables: Any = None) -> Any:
        if monitor.in_fit or detector.updating:
            return original(optimizer, grads, trainable_variables)
        variables = list(trainable_variables) if trainable_variables is not None else []
        if not variables:
            variables = list(getattr(optimizer, "_trainable_variables", []) or [])
        detector.updating += 1
        try:
            result = original(optimizer, grads, trainable_variables)
        finally:
            detector.updating -= 1
        it.updated(variables, optimizer, "custom loop (optimizer)")
        return result

    return apply


def _assign(original: Callable[..., Any], it: LoopInterceptor) -> Callable[..., Any]:
    monitor = it.monitor
    detector = it.detector

    def assign(variable: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(variable, *args, **kwargs)
        if detector.pending and not detector.updating and not monitor.in_fit:
            it.updated([variable], None, "custom loop (assign)")
        return result

    return assign


def _function_call(original: Callable[..., Any], it: LoopInterceptor) -> Callable[..., Any]:
    from tensorflow.python.eager.context import executing_eagerly  # tf.executing_eagerly

    monitor = it.monitor
    sampler = it.sampler
    controls = it.controls
    metrics = it.metrics
    commands = monitor.channel.command_queue
    resume = monitor.resume
    stop = monitor.stop_requested

    def waiting() -> bool:
        """Whether a stop, a pause or a command waits for the next step boundary."""
        return bool(commands) or stop.is_set() or not resume.is_set()

    def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        # The quiet path, for a step function's call: until call `quiet_until` nothing
        # is due (no twin, no sample, no control's work) and no command waits: count it,
        # call. The full path below cost 10-15 us a call, as much
        # as the graph's write of the loss: Python right after a TensorFlow call is slow.
        if (
            sampler.calls + 1 < sampler.quiet_until
            and not commands
            and id(function) in sampler.current_fns
        ):
            sampler.calls += 1
            return original(function, *args, **kwargs)
        if sampler.probing or monitor.in_fit or not executing_eagerly():
            return original(function, *args, **kwargs)  # probes, fit, nested calls
        fid = id(function)
        if fid in sampler.step_fns and fid not in sampler.current_fns:
            it.function_called(fid)  # a step function of an earlier loop: it goes on anew
        if it.graph_active and controls.started and waiting():
            # It came while the previous call ran its quiet path: the boundary after it.
            if stop.is_set():
                raise RunStopped()
            it.sync()
            controls.after_step(None)
        if sampler.calls + 1 >= sampler.special_call and fid in sampler.step_fns:
            result = sampler.special(function, original, args, kwargs)  # a twin's call
        else:
            result = original(function, *args, **kwargs)
        if metrics.traced_graphs:  # traced during this call: their traces are over
            metrics.discover(it.tf)
        if it.graph_active:
            # A graph step ran: the step boundary for stop, pause and commands.
            if stop.is_set():
                raise RunStopped()
            if fid in sampler.step_fns:
                sampler.calls += 1
            # The full step boundary only when it has work: a per-call control step
            # (learning-rate reads sync the device) cost ~5% of a small graph loop.
            if controls.per_step or not controls.started or waiting():
                it.sync()
                controls.after_step(None)
            # The calls before the next special one may take the quiet path, unless
            # work waits (looked at after the store: a thread that makes work wait, or
            # wakes the sampler, then sets quiet_until to 0 is never overwritten).
            sampler.quiet_until = sampler.special_call
            if (
                sampler.special_call < sampler.quiet_until
                or controls.per_step
                or not controls.started
                or waiting()
            ):
                sampler.quiet_until = 0
        return result

    sampler.call_code = __call__.__code__
    monitor.on_stop = sampler.stop_due
    return __call__
