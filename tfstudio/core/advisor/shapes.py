"""What a shape error that ended a run means, in the words of the script's data and model.

Keras and TensorFlow name a mismatch between the data and the model in their own
terms: a matrix product of the wrong sizes inside a graph node, a rank that differs
between targets and outputs, a label past the last class. :func:`explain_shape_error`
reads such an error's text (only the text: no TensorFlow here) and says which side
has which shape and what to change; it stays silent on any text it does not know.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

_SHAPE = r"\(([^)]*)\)"  # a printed shape "(None, 8)": its inside
_MATMUL = re.compile(
    r"Matrix size-incompatible: In\[0\]: \[(\d+),(\d+)\], In\[1\]: \[(\d+),(\d+)\]"
)
_NODE = re.compile(r"\{\{node ([^}]+)\}\}")
_AXIS = re.compile(
    r"of layer '([^']+)' is incompatible with the layer: expected axis (-?\d+) of input "
    r"shape to have value (\d+), but received input with shape " + _SHAPE
)
_INPUT = re.compile(
    r"of layer '([^']+)' is incompatible with the layer: expected shape=" + _SHAPE + r", "
    r"found shape=" + _SHAPE
)
_NDIM = re.compile(
    r"of layer '([^']+)' is incompatible with the layer: expected (min_)?ndim=(\d+), "
    r"found ndim=(\d+)\. Full shape received: " + _SHAPE
)
_RANK = re.compile(
    r"`target` and `output` must have the same rank \(ndim\)\. Received: "
    r"target\.shape=" + _SHAPE + r", output\.shape=" + _SHAPE
)
_SPARSE_ONE_HOT = re.compile(
    r"Argument `output` must have rank \(ndim\) `target\.ndim - 1`\. Received: "
    r"target\.shape=" + _SHAPE + r", output\.shape=" + _SHAPE
)
_SAME_SHAPE = re.compile(
    r"`target` and `output` must have the same shape\. Received: "
    r"target\.shape=" + _SHAPE + r", output\.shape=" + _SHAPE
)
_LABEL = re.compile(
    r"Received a label value of (-?\d+) which is outside the valid range of \[0, (\d+)\)"
)
_LOSS_DIMS = re.compile(
    r"Dimensions must be equal, but are (\d+) and (\d+) for '\{\{node compile_loss/([^/]+)/"
    r"[^}]*\}\} = [^(]*\(([^,]+), ([^)]+)\)"
)


def explain_shape_error(message: str) -> tuple[str, str] | None:
    """``(what happened, what to change)`` for a known shape error's text, else None.

    Args:
        message: the exception's message (``str(exc)``; a graph error's whole text).
    """
    for pattern, explain in _EXPLAINED:
        m = pattern.search(message)
        found = explain(m) if m is not None else None
        if found is not None:
            return found
    return None


def _dims(inside: str) -> list[str]:
    return [d.strip() for d in inside.split(",") if d.strip()]


def _labels_and_outputs(m: re.Match[str]) -> str:
    """The two shapes a loss compared (the match's first two groups: target, output)."""
    return f"the labels are shaped ({m.group(1)}) and the model's outputs ({m.group(2)})"


def _matmul(m: re.Match[str]) -> tuple[str, str] | None:
    got, wanted, units = int(m.group(2)), int(m.group(3)), int(m.group(4))
    node = _NODE.search(m.string)
    parts = node.group(1).split("/") if node else []
    if parts and parts[0].startswith("compile_loss"):
        return None  # a product inside the loss: not the data against a layer
    # "sequential_1/dense_1/Relu": the layer is the part before the op
    layer = f"layer '{parts[-2]}'" if len(parts) >= 2 else "a Dense layer"
    return (
        f"{layer} was built for inputs of {wanted} features (its kernel is {wanted} x "
        f"{units}), but this data gives it {got} per sample: the model was built (or "
        f"trained) on data of another shape",
        f"give the model data with {wanted} features per sample (check which columns x "
        f"keeps), or build a new model for this data (keras.Input(({got},)))",
    )


def _axis(m: re.Match[str]) -> tuple[str, str] | None:
    layer, axis, wanted, shape = m.group(1), m.group(2), m.group(3), m.group(4)
    got = _dims(shape)
    have = got[int(axis)] if got and -len(got) <= int(axis) < len(got) else "?"
    where = "its last axis" if axis == "-1" else f"axis {axis}"
    return (
        f"layer '{layer}' takes inputs with {wanted} values on {where}, but the data "
        f"reaching it has shape ({shape}), {have} there",
        f"match the model to the data (keras.Input(({have},)) for {have} features), or "
        f"select the {wanted} features the model was built for",
    )


def _input(m: re.Match[str]) -> tuple[str, str] | None:
    wanted, got = _dims(m.group(2)), _dims(m.group(3))
    fix = "reshape or select the data to the model's input shape, or change keras.Input"
    if len(got) == len(wanted) and len(got) > 1:
        fix += f": keras.Input(({', '.join(got[1:])},)) for this data"
    return (
        f"the model '{m.group(1)}' takes inputs shaped ({m.group(2)}) (None: any batch "
        f"size), but the data is shaped ({m.group(3)})",
        fix,
    )


def _ndim(m: re.Match[str]) -> tuple[str, str] | None:
    layer, wanted, got, shape = m.group(1), int(m.group(3)), int(m.group(4)), m.group(5)
    least = "at least " if m.group(2) else ""
    message = (
        f"layer '{layer}' takes inputs of {least}{wanted} dimensions (the batch included), but "
        f"the data reaching it has {got}, shape ({shape})"
    )
    if wanted == got + 1 and wanted >= 3:
        return (
            message + ": images without a channel axis",
            f"add the channel axis: x = x[..., None] (shape ({shape}, 1)), or start the "
            f"model with keras.layers.Reshape(({', '.join(_dims(shape)[1:])}, 1))",
        )
    if got == 2 and wanted >= 4:
        return (
            message + ": flattened images",
            "reshape them to the model's input: x.reshape(-1, height, width, channels)"
            + _square_image(_dims(shape)[-1])
            + ", or flatten the model's input instead",
        )
    return message, "reshape the data to the layer's rank, or change the layers before it"


def _square_image(values: str) -> str:
    """For a flat sample of ``values`` numbers that can be a square image (grey or RGB): the
    reshape that makes it one, as ``" (x.reshape(-1, 28, 28, 1) for 784 values)"``; else ""."""
    if not values.isdigit():
        return ""
    n = int(values)
    for channels in (1, 3):
        side = math.isqrt(n // channels) if n % channels == 0 else 0
        if side > 1 and side * side * channels == n:
            return f" (x.reshape(-1, {side}, {side}, {channels}) for {n} values)"
    return ""


def _rank(m: re.Match[str]) -> tuple[str, str] | None:
    target, output = _dims(m.group(1)), _dims(m.group(2))
    message = _labels_and_outputs(m)
    if len(target) == len(output) - 1 and output:
        return (
            message + f": integer class labels, given to a loss that wants one-hot labels "
            f"of {output[-1]} values per sample",
            'use loss="sparse_categorical_crossentropy" (integer labels), or one-hot the '
            f"labels: keras.utils.to_categorical(y, {output[-1]})",
        )
    return (
        message + ": the loss compares them element by element",
        "give the labels the outputs' shape, or pick the loss made for these labels",
    )


def _sparse_one_hot(m: re.Match[str]) -> tuple[str, str] | None:
    return (
        f"the labels are shaped ({m.group(1)}) like the outputs ({m.group(2)}): one-hot "
        "labels, given to a sparse loss that wants one integer class per sample",
        'use loss="categorical_crossentropy" for one-hot labels, or give integer labels: '
        "y.argmax(axis=-1)",
    )


def _same_shape(m: re.Match[str]) -> tuple[str, str] | None:
    target, output = _dims(m.group(1)), _dims(m.group(2))
    message = _labels_and_outputs(m)
    if len(target) != len(output) or not target:
        return message, "give the labels the outputs' shape, or change the last layer"
    want, have = target[-1], output[-1]
    if have == "1":
        return (
            message + f": {want} values a label (one-hot classes?) against a single output",
            f'for {want} classes end with Dense({want}, activation="softmax") and '
            'loss="categorical_crossentropy"; for one yes/no label give y one column',
        )
    return (
        message + f": {want} values a label against {have} outputs (one per class)",
        f"make the last layer Dense({want}), one unit per class of the labels, or give "
        f"labels of {have} classes",
    )


def _label(m: re.Match[str]) -> tuple[str, str] | None:
    value, classes = int(m.group(1)), int(m.group(2))
    if value < 0:
        return (
            f"a label is {value}: class labels count from 0 (the output has {classes} classes)",
            "map the labels to 0..classes-1 (e.g. y - y.min()), or drop the negative ones",
        )
    return (
        f"a label is {value}, but the output layer has {classes} units, one per class: "
        f"labels 0 to {classes - 1} only",
        f"give the last layer one unit per class, at least Dense({value + 1}), or map the "
        f"labels to 0..{classes - 1} (labels that start at 1: y - 1)",
    )


def _loss_dims(m: re.Match[str]) -> tuple[str, str] | None:
    first, second, loss = m.group(1), m.group(2), m.group(3)
    # the op's inputs: the targets come in as "data_N", the outputs from the model's layers
    if m.group(4).startswith("data"):
        target, output = first, second
    elif m.group(5).startswith("data"):
        target, output = second, first
    else:
        return None
    return (
        f"the targets have {target} values per sample and the model outputs {output}: "
        f"the loss ({loss}) compares them value by value",
        f"make the last layer output {target} values (Dense({target})), or give targets "
        f"with {output} columns",
    )


# Each known message and what says it in the script's terms, tried in this order.
_EXPLAINED: tuple[
    tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str] | None]], ...
] = (
    (_MATMUL, _matmul),
    (_AXIS, _axis),
    (_INPUT, _input),
    (_NDIM, _ndim),
    (_RANK, _rank),
    (_SPARSE_ONE_HOT, _sparse_one_hot),
    (_SAME_SHAPE, _same_shape),
    (_LABEL, _label),
    (_LOSS_DIMS, _loss_dims),
)
