"""Rule 4: a Python number on a model or layer updated in ``call``/``train_step``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import NUMERIC, Script
from tfstudio.core.advisor.base import Rule


def _numeric_attrs(cls: ast.ClassDef) -> set[str]:
    """``self.x = <number>`` attributes set in ``__init__`` (and never to anything else)."""
    numeric: set[str] = set()
    other: set[str] = set()
    for item in cls.body:
        if not (isinstance(item, ast.FunctionDef) and item.name == "__init__"):
            continue
        for node in ast.walk(item):
            if not isinstance(node, ast.Assign):
                continue
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    if t.value.id != "self":
                        continue
                    v = node.value
                    if (
                        isinstance(v, ast.Constant)
                        and isinstance(v.value, NUMERIC)
                        and not isinstance(v.value, bool)
                    ):
                        numeric.add(t.attr)
                    else:
                        other.add(t.attr)
    return numeric - other


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def check(script: Script) -> Iterator[tuple[int, str]]:
    """``self.n += 1`` (or ``self.n = self.n + 1``) on a Python number in a Keras method."""
    if script.eager:
        return
    for fn in script.traced:
        if fn.kind != "keras" or fn.cls is None:
            continue
        attrs = _numeric_attrs(fn.cls)
        for node in fn.body_nodes():
            attr = None
            if isinstance(node, ast.AugAssign):
                attr = _self_attr(node.target)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                attr = _self_attr(node.targets[0])
                uses = {_self_attr(n) for n in ast.walk(node.value)}
                attr = attr if attr in uses else None
            if attr in attrs:
                yield (
                    node.lineno,
                    (
                        f"self.{attr} is a Python number updated in {fn.name}: fit() runs that "
                        f"line once, while tracing, so self.{attr} stops counting after the "
                        "first step"
                    ),
                )


RULE = Rule(
    name="python-state",
    title="Python counter on a model or layer stops counting",
    explanation=(
        "A Python number changed inside call/train_step is changed once, at trace time; the "
        "compiled step never touches it again."
    ),
    fix="self.counter = tf.Variable(0, trainable=False) in __init__, "
    "self.counter.assign_add(1) in call/train_step",
    check=check,
)
