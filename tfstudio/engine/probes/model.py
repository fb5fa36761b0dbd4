"""What a model is made of, for the events that describe it.

One builder for both descriptions: :func:`model_summary` (the flat layer list
announced with a fit's ``FitStarted``) and :func:`model_tree` (the inspector's
tree of nested layers with shapes, dtypes, parameters and variables) share the
same shape and parameter helpers.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from typing import Any

import numpy as np

from tfstudio.core.events import LayerSummary, ModelNode, ModelSummary, VariableInfo

MAX_DEPTH = 8
SUMMARY_DEPTH = 4  # nested layers listed in a fit's summary, below the model's own


def model_summary(model: Any) -> ModelSummary:
    """Name, layers (nested ones indented), output shapes and parameter counts."""
    layers: list[LayerSummary] = []

    def walk(owner: Any, depth: int) -> None:
        for layer in getattr(owner, "layers", []) or []:
            layers.append(
                LayerSummary(
                    name=layer.name,
                    class_name=type(layer).__name__,
                    output_shape=_output_shape(layer),
                    params=_count(layer.weights),
                    trainable_params=_count(layer.trainable_weights),
                    depth=depth,
                )
            )
            if depth < SUMMARY_DEPTH and getattr(layer, "layers", None):
                walk(layer, depth + 1)

    walk(model, 0)
    total = _count(model.weights)
    return ModelSummary(
        name=model.name,
        class_name=type(model).__name__,
        layers=tuple(layers),
        total_params=total,
        trainable_params=_count(model.trainable_weights),
        # a model Keras builds at the first step has no weights to count yet
        built=bool(total or getattr(model, "built", True)),
    )


def model_tree(model: Any) -> ModelNode:
    """The model and its sublayers (nested models, subclassed attributes) as a tree."""
    return _node(model, model.name, 0, set())


def model_summary_text(model: Any) -> str:
    """What ``model.summary()`` prints (plain text), or why it could not."""
    lines: list[str] = []
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            model.summary(print_fn=lambda line, *a, **k: lines.append(str(line)), line_length=100)
    except Exception as exc:  # noqa: BLE001 - unbuilt subclassed models cannot summarise
        return f"model.summary() failed: {type(exc).__name__}: {exc}"
    text = "\n".join(lines) if lines else buf.getvalue()
    return _strip_markup(text)


def sublayers(layer: Any) -> list[Any]:
    """The direct sublayers of a layer or model, in the order Keras tracks them."""
    layers = getattr(layer, "_layers", None)
    if layers is None:
        layers = getattr(layer, "layers", None)
    out = []
    seen = set()
    for sub in layers or []:
        if id(sub) not in seen and sub is not layer:
            seen.add(id(sub))
            out.append(sub)
    return out


def variable_path(variable: Any) -> str:
    """The unique path Keras gives a variable (its name when it has no path)."""
    return str(getattr(variable, "path", None) or getattr(variable, "name", "?"))


def _node(layer: Any, path: str, depth: int, seen: set[int]) -> ModelNode:
    seen.add(id(layer))
    children: list[ModelNode] = []
    own = {id(v) for v in layer.weights}
    if depth < MAX_DEPTH:
        for sub in sublayers(layer):
            if id(sub) in seen:
                continue  # a layer shared under two parents appears once
            child = _node(sub, f"{path}/{sub.name}", depth + 1, seen)
            children.append(child)
    for sub in sublayers(layer):
        own -= {id(v) for v in sub.weights}
    variables = tuple(
        VariableInfo(
            name=str(v.name),
            path=variable_path(v),
            shape=tuple(int(d) for d in v.shape),
            dtype=str(getattr(v, "dtype", "?")),
            trainable=bool(getattr(v, "trainable", True)),
        )
        for v in layer.weights
        if id(v) in own
    )
    return ModelNode(
        name=str(layer.name),
        path=path,
        class_name=type(layer).__name__,
        output_shape=_output_shape(layer),
        dtype=str(getattr(layer, "compute_dtype", None) or getattr(layer, "dtype", "?")),
        trainable_params=_count(layer.trainable_weights),
        non_trainable_params=_count(layer.non_trainable_weights),
        variables=variables,
        children=tuple(children),
    )


def _count(weights: Any) -> int:
    return sum(int(np.prod(tuple(w.shape))) if len(w.shape) else 1 for w in weights or [])


def _output_shape(layer: Any) -> str:
    try:
        output = layer.output
    except Exception:  # noqa: BLE001 - subclassed layers have no symbolic output
        # A Sequential model not called yet (the tree is sent as its fit starts) has no
        # output tensor, but knows its output shape from its Input.
        try:
            shape = layer.output_shape
        except Exception:  # noqa: BLE001
            return "?"
        if isinstance(shape, tuple) and all(d is None or isinstance(d, int) for d in shape):
            return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"
        return "?"
    try:
        if isinstance(output, list | tuple):
            return ", ".join(_shape(o) for o in output)
        if isinstance(output, dict):
            return ", ".join(f"{k}: {_shape(o)}" for k, o in output.items())
        return _shape(output)
    except Exception:  # noqa: BLE001
        return "?"


def _shape(tensor: Any) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in tensor.shape) + ")"


def _strip_markup(text: str) -> str:
    """Keras 3 summaries carry rich markup like ``[1m``; keep the plain text."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.sub(r"\[/?[a-z0-9 ]+\]", "", text)
