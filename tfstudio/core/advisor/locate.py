"""Find lines in a user's script for live advice (pure ``ast``; None when not found)."""

from __future__ import annotations

import ast
from functools import lru_cache


@lru_cache(maxsize=8)
def _tree(path: str) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def def_line(path: str, name: str) -> int:
    """Line of ``def name`` (a function or method) in the script; 0 when not found."""
    tree = _tree(path)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node.lineno
    return 0


def call_line(path: str, method: str) -> int:
    """Line of the first ``x.method(...)`` call in the script; 0 when not found."""
    tree = _tree(path)
    lines = [
        node.lineno
        for node in (ast.walk(tree) if tree else ())
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
    ]
    return min(lines, default=0)


CALLBACK_INTS = {"batch", "epoch"}  # Keras passes these to callback hooks as Python ints


def python_number_args(path: str, name: str) -> list[tuple[int, str]]:
    """Calls of ``name(...)`` in the script passing a visible Python number: ``(line, why)``.

    Visible means a numeric literal, a ``for`` variable over ``range(...)``, or the
    ``batch``/``epoch`` argument of a Keras callback hook (``on_train_batch_end``...).
    """
    tree = _tree(path)
    if tree is None:
        return []
    ints: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            it = node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
                ints[node.target.id] = f"`{node.target.id}`, a Python int from range()"
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("on_"):
            for arg in node.args.args:
                if arg.arg in CALLBACK_INTS:
                    ints.setdefault(arg.arg, f"`{arg.arg}`, a Python int from Keras ({node.name})")
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _callee(node.func) == name):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Constant) and type(arg.value) in (int, float):
                out.append((node.lineno, f"the Python number {arg.value!r}"))
            elif isinstance(arg, ast.Name) and arg.id in ints:
                out.append((node.lineno, ints[arg.id]))
    return sorted(set(out))


def _callee(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""
