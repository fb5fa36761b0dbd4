"""Rule 10: softmax output with ``from_logits=True``, or logits with ``from_logits=False``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, is_const, keyword
from tfstudio.core.advisor.base import Rule

CROSSENTROPY = {
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "binary_crossentropy": "BinaryCrossentropy",
}
PROBABILITY = frozenset({"softmax", "sigmoid"})


def _last_layer(script: Script, model: ast.AST) -> ast.Call | None:
    """The last layer of ``keras.Sequential([...])`` when written out in the call (no ``add``)."""
    if not (
        isinstance(model, ast.Call) and (script.qualname(model.func) or "").endswith("Sequential")
    ):
        return None
    layers = model.args[0] if model.args else keyword(model, "layers")
    if not isinstance(layers, ast.List) or not layers.elts:
        return None
    last = layers.elts[-1]
    return last if isinstance(last, ast.Call) else None


def _output_activation(script: Script, layer: ast.Call) -> str | None:
    """``"softmax"``/``"sigmoid"``/``"linear"`` for a final layer, None when not visible."""
    name = (script.qualname(layer.func) or "").rsplit(".", 1)[-1]
    if name in ("Softmax",):
        return "softmax"
    if name == "Activation" and layer.args and isinstance(layer.args[0], ast.Constant):
        return str(layer.args[0].value)
    if name != "Dense":
        return None
    act = keyword(layer, "activation")
    if act is None and len(layer.args) >= 2:
        act = layer.args[1]
    if act is None or is_const(act, None):
        return "linear"
    if isinstance(act, ast.Constant) and isinstance(act.value, str):
        return act.value
    dotted = script.qualname(act) or ""
    tail = dotted.rsplit(".", 1)[-1]
    return tail if tail in PROBABILITY else None


def _loss(script: Script, node: ast.AST) -> tuple[str, bool] | None:
    """(crossentropy kind, from_logits) of a loss expression, None if not a visible one."""
    if isinstance(node, ast.Name):
        value = script.single_value(node.id)
        return _loss(script, value) if value is not None else None
    if isinstance(node, ast.Constant) and node.value in CROSSENTROPY:
        return node.value, False
    if isinstance(node, ast.Call):
        tail = (script.qualname(node.func) or "").rsplit(".", 1)[-1]
        for kind, cls in CROSSENTROPY.items():
            if tail == cls:
                flag = keyword(node, "from_logits")
                if flag is None:
                    return kind, False
                if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
                    return kind, flag.value
                return None
    return None


def check(script: Script) -> Iterator[tuple[int, str]]:
    """Compile calls on a Sequential model whose output and loss disagree about logits."""
    for node in script.nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compile"
            and isinstance(node.func.value, ast.Name)
        ):
            continue
        model = node.func.value.id
        if script.methods_on.get(model, set()) & {"add", "pop"}:
            continue
        value = script.single_value(model)
        layer = _last_layer(script, value) if value is not None else None
        loss_node = keyword(node, "loss") or (node.args[1] if len(node.args) > 1 else None)
        if layer is None or loss_node is None:
            continue
        act = _output_activation(script, layer)
        loss = _loss(script, loss_node)
        if act is None or loss is None:
            continue
        kind, from_logits = loss
        if from_logits and act in PROBABILITY:
            yield (
                loss_node.lineno,
                (
                    f"the output layer (line {layer.lineno}) already applies {act}, and the loss "
                    f"treats its output as logits (from_logits=True): {act} is applied twice, "
                    "gradients shrink and training stalls"
                ),
            )
        elif not from_logits and act == "linear":
            yield (
                loss_node.lineno,
                (
                    f"the output layer (line {layer.lineno}) has no activation (it outputs "
                    f"logits), but {kind} expects probabilities (from_logits=False): "
                    "the loss is wrong and may be NaN"
                ),
            )


RULE = Rule(
    name="logits-mismatch",
    title="Output activation and from_logits disagree",
    explanation=(
        "A crossentropy loss must know whether the model outputs probabilities (softmax/"
        "sigmoid) or raw logits; getting it wrong trains badly or not at all."
    ),
    fix="either Dense(n) + SparseCategoricalCrossentropy(from_logits=True) (preferred), or "
    'Dense(n, activation="softmax") + from_logits=False',
    check=check,
)
