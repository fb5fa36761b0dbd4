"""Rule 8: ``tf.py_function`` / ``tf.numpy_function`` inside ``Dataset.map``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script
from tfstudio.core.advisor.base import Rule

PY_FUNCS = frozenset(
    {
        "tensorflow.py_function",
        "tensorflow.numpy_function",
        "tensorflow.compat.v1.py_func",
        "tensorflow.py_func",
    }
)


def check(script: Script) -> Iterator[tuple[int, str]]:
    """A Python-function op in a dataset function."""
    for fn in script.traced:
        if fn.kind != "dataset":
            continue
        for node in fn.body_nodes():
            if isinstance(node, ast.Call) and script.qualname(node.func) in PY_FUNCS:
                short = (script.qualname(node.func) or "").replace("tensorflow.", "tf.")
                yield (
                    node.lineno,
                    (
                        f"{short} in a Dataset.map function: every element goes back to Python "
                        "and holds the GIL, so num_parallel_calls cannot run it in parallel and "
                        "the input pipeline may starve the model"
                    ),
                )


RULE = Rule(
    name="py-function-in-map",
    title="Python function in Dataset.map",
    explanation=(
        "tf.py_function/tf.numpy_function work, but run element by element in Python under "
        "the GIL; the rest of tf.data runs in parallel C++."
    ),
    fix="write the transformation with TensorFlow ops (tf.image, tf.strings, tf.io); or "
    "precompute it once and .cache() the dataset",
    check=check,
)
