"""Rule 1: Python side effects in a traced function run once, at trace time."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, Traced
from tfstudio.core.advisor.base import Rule

TIME_CALLS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time"})


def _init_lists(cls: ast.ClassDef | None) -> set[str]:
    """``self.x = []`` attributes set in the class's ``__init__``."""
    out: set[str] = set()
    for item in cls.body if cls else []:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for node in ast.walk(item):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                    for t in node.targets:
                        if (
                            isinstance(t, ast.Attribute)
                            and isinstance(t.value, ast.Name)
                            and t.value.id == "self"
                        ):
                            out.add(t.attr)
    return out


def _is_list(script: Script, name: str) -> bool:
    values = script.assigns.get(name, [])
    return bool(values) and all(
        isinstance(v, ast.List)
        or (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "list")
        for v in values
    )


def side_effects(script: Script, fn: Traced) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each Python side effect in ``fn``."""
    local = fn.locals()
    self_lists = _init_lists(fn.cls)
    for node in fn.body_nodes():
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "print" and "print" not in local:
            yield node.lineno, "print(...) prints once, while TensorFlow traces it, not every step"
            continue
        name = script.qualname(f) or ""
        if name in TIME_CALLS:
            yield node.lineno, f"{name}() is read once, at trace time: every step sees that value"
        elif name.startswith(("random.", "numpy.random.")):
            yield node.lineno, (f"{name}() draws one number at trace time: every step reuses it")
        elif isinstance(f, ast.Attribute) and f.attr == "append":
            target = f.value
            if isinstance(target, ast.Name) and target.id not in local:
                if _is_list(script, target.id):
                    yield (
                        node.lineno,
                        (
                            f"{target.id}.append(...) on a Python list runs at trace time only: "
                            "it gets one symbolic tensor, not one value per step"
                        ),
                    )
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr in self_lists
            ):
                yield (
                    node.lineno,
                    (
                        f"self.{target.attr}.append(...) on a Python list runs at trace time only: "
                        "it gets one symbolic tensor, not one value per step"
                    ),
                )


def check(script: Script) -> Iterator[tuple[int, str]]:
    """Python print/time/random/list append inside traced functions."""
    for fn in script.traced:
        if script.eager and fn.kind != "dataset":
            continue
        for line, what in side_effects(script, fn):
            yield line, f"{what} ({fn.name} is traced: {_why(fn)})."


def _why(fn: Traced) -> str:
    if fn.why:
        return fn.why
    return {
        "tf.function": "it is a tf.function",
        "keras": "fit() compiles it into a graph",
        "dataset": "Dataset.map/filter functions always run as graphs",
    }[fn.kind]


RULE = Rule(
    name="trace-side-effect",
    title="Python side effect inside a traced function",
    explanation=(
        "Python code in a traced function runs once, when TensorFlow traces it; the graph "
        "that runs every step has no print, clock or Python random in it."
    ),
    fix="tf.print(...) instead of print; tf.timestamp(), tf.random.uniform(...); "
    "a tf.Variable or tf.TensorArray instead of a Python list",
    check=check,
)
