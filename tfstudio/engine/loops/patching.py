"""Discovery by patching: the wrappers put in while a run lasts (and put back after).

A tape gradient may begin a step; the Keras optimizer's ``apply`` or a variable's
``assign_sub``/``assign_add`` completes it; a call of a step function (``tf.function``'s
``__call__``, the sampler's wrapper) is a step boundary. The wrappers only route to
:class:`LoopHooks`, whose methods report their own failures: a wrapper adds no ``try``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

from tfstudio.engine.loops.sampling import Sampler
from tfstudio.engine.loops.steps import StepDetector
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.patches import Patches
from tfstudio.engine.script import RunStopped


class LoopHooks(Protocol):
    """What the wrappers call (the run's :class:`LoopInterceptor`)."""

    tf: Any
    monitor: RunMonitor
    detector: StepDetector
    sampler: Sampler

    def eager(self) -> bool: ...
    def gradient_taken(self, target: Any, sources: Any, grads: Any) -> None: ...
    def updated(self, variables: list[Any], optimizer: Any, where: str) -> None: ...


def patch_tensorflow(tf: Any, patches: Patches, it: LoopHooks) -> None:
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
    patches.replace(polymorphic_function.Function, "__call__", it.sampler.wrap)
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "optimizers"):
        patch_keras(patches, it)
    else:
        it.monitor.on_keras_imported.append(lambda: patch_keras(patches, it))


def patch_keras(patches: Patches, it: LoopHooks) -> None:
    """Wrap the Keras optimizer's ``apply`` and Keras variables' ``assign_sub``/``assign_add``."""
    if it.tf is None:
        return  # the run is over
    from keras.src.backend.common.variables import Variable
    from keras.src.optimizers.base_optimizer import BaseOptimizer
    from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

    patches.replace(BaseOptimizer, "apply", lambda f: _apply(f, it))
    for cls in (BaseOptimizer, LossScaleOptimizer):  # loss_scale_factor; mixed precision
        patches.replace(cls, "scale_loss", lambda f: _scale_loss(f, it))
    # keras.Variable.assign_sub is assign(self - value): it never calls tf's assign_sub
    for name in ("assign_sub", "assign_add"):
        patches.replace(Variable, name, lambda f: _assign(f, it))


def _gradient(original: Callable[..., Any], it: LoopHooks) -> Callable[..., Any]:
    monitor, detector = it.monitor, it.detector

    def gradient(tape: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        grads = original(tape, target, sources, *args, **kwargs)
        if monitor.in_fit or detector.updating:
            return grads
        if monitor.stop_requested.is_set() and it.eager():
            raise RunStopped()
        it.gradient_taken(target, sources, grads)
        return grads

    return gradient


def _apply(original: Callable[..., Any], it: LoopHooks) -> Callable[..., Any]:
    monitor, detector = it.monitor, it.detector

    def apply(optimizer: Any, grads: Any, trainable_variables: Any = None) -> Any:
        if monitor.in_fit or detector.updating:
            return original(optimizer, grads, trainable_variables)
        variables = list(trainable_variables) if trainable_variables is not None else []
        if not variables:
            variables = list(getattr(optimizer, "_trainable_variables", []) or [])
        with detector.applying():  # its own assigns are no steps
            result = original(optimizer, grads, trainable_variables)
        it.updated(variables, optimizer, "custom loop (optimizer)")
        return result

    return apply


def _scale_loss(original: Callable[..., Any], it: LoopHooks) -> Callable[..., Any]:
    monitor, detector = it.monitor, it.detector

    def scale_loss(optimizer: Any, loss: Any) -> Any:
        scaled = original(optimizer, loss)
        if not monitor.in_fit:
            detector.scaled_loss(scaled, loss)
        return scaled

    return scale_loss


def _assign(original: Callable[..., Any], it: LoopHooks) -> Callable[..., Any]:
    monitor, detector = it.monitor, it.detector

    def assign(variable: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(variable, *args, **kwargs)
        if detector.pending and not detector.updating and not monitor.in_fit:
            it.updated([variable], None, "custom loop (assign)")
        return result

    return assign
