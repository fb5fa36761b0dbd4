"""Rule 2: ``.numpy()`` or a Python ``if`` on a tensor inside a traced function."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, Traced
from tfstudio.core.advisor.base import Rule

PYTHON_VALUED = (
    "config.",
    "executing_eagerly",
    "layers.",
    "Variable",
    "Input",
    "is_tensor",
    "is_symbolic",
    "is_keras_tensor",
    "get_static_value",
    "TensorShape",
    "as_dtype",
    "dtypes.",
    "nest.",
    "is_nested",
    "is_sparse",
    "is_ragged",
    "saving.",
    "utils.",
    "backend.backend",
    "distribute.",
)  # calls under tensorflow/keras that return Python values, not tensors


def _tensor_names(script: Script, fn: Traced) -> set[str]:
    """Locals assigned (only) from TensorFlow ops in ``fn``."""
    values: dict[str, list[ast.expr]] = {}
    for node in fn.body_nodes():
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    values.setdefault(t.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            target = getattr(node, "target", None)
            if isinstance(target, ast.Name):
                values.setdefault(target.id, []).append(ast.Constant(None))
    return {
        name
        for name, vals in values.items()
        if name not in fn.params() and all(_is_op(script, v) for v in vals)
    }


def _is_op(script: Script, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and script.is_tf(node.func) and not _static(script, node)


def _static(script: Script, call: ast.Call) -> bool:
    """Calls under tensorflow/keras that give Python values, not tensors."""
    name = script.qualname(call.func) or ""
    return any(part in name for part in PYTHON_VALUED)


def _is_tensor(script: Script, node: ast.AST, names: set[str]) -> bool:
    """True when ``node`` is visibly a symbolic tensor (a TF op's result)."""
    if _is_op(script, node):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Compare):
        return any(_is_tensor(script, n, names) for n in (node.left, *node.comparators))
    if isinstance(node, ast.BoolOp):
        return any(_is_tensor(script, n, names) for n in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _is_tensor(script, node.operand, names)
    if isinstance(node, ast.BinOp):
        return _is_tensor(script, node.left, names) or _is_tensor(script, node.right, names)
    return False


def check(script: Script) -> Iterator[tuple[int, str]]:
    """``.numpy()`` in any traced function; ``if``/``while``/``bool()`` on a tensor where
    AutoGraph does not convert (``call``/``train_step`` under ``fit``)."""
    for fn in script.traced:
        if script.eager and fn.kind != "dataset":
            continue
        names = _tensor_names(script, fn) if not fn.autograph else set()
        for node in fn.body_nodes():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "numpy"
                and not node.args
            ):
                yield (
                    node.lineno,
                    (
                        f".numpy() in {fn.name}, which runs as a graph: there is no value to read "
                        'while it is traced, and TensorFlow fails with "numpy() is only available '
                        'when eager execution is enabled"'
                    ),
                )
            elif fn.autograph:
                continue
            elif isinstance(node, (ast.If, ast.While, ast.IfExp)) and _is_tensor(
                script, node.test, names
            ):
                word = {ast.If: "if", ast.While: "while", ast.IfExp: "... if ... else"}[type(node)]
                yield (
                    node.lineno,
                    (
                        f"Python `{word}` on a tensor in {fn.name}: fit() traces it without "
                        "AutoGraph, so the tensor has no True/False value yet and TensorFlow fails "
                        "with OperatorNotAllowedInGraphError"
                    ),
                )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("bool", "float", "int")
                and node.args
                and _is_tensor(script, node.args[0], names)
            ):
                yield (
                    node.lineno,
                    (
                        f"{node.func.id}(...) of a tensor in {fn.name}: a traced tensor has no "
                        "Python value"
                    ),
                )


RULE = Rule(
    name="tensor-as-python",
    title="Tensor used as a Python value in a traced function",
    explanation=(
        "In a traced function tensors are symbolic: .numpy(), bool() and Python if/while on "
        "them fail, because their value exists only when the graph runs."
    ),
    fix="tf.cond(pred, lambda: a, lambda: b) or tf.where(...) instead of if; keep values as "
    "tensors (tf.print to see them); or run eagerly to debug: tfstudio --eager, "
    "model.compile(..., run_eagerly=True)",
    check=check,
)
