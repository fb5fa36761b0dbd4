"""Rule 6: ``batch`` before ``shuffle``; ``drop_remainder=True`` leaving no batch at all."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, int_literal, is_const, keyword, method
from tfstudio.core.advisor.base import Rule

KEEPS_SIZE = frozenset({"map", "prefetch", "cache", "shuffle", "with_options"})


def _source_size(script: Script, call: ast.Call) -> int | None:
    """Elements in a dataset source when the script spells it out as literals."""
    name = script.qualname(call.func) or ""
    if name.endswith("Dataset.range") and len(call.args) == 1:
        return int_literal(call.args[0])
    if name.endswith("Dataset.from_tensor_slices") and call.args:
        return _length(script, call.args[0])
    return None


def _length(script: Script, node: ast.AST) -> int | None:
    if isinstance(node, ast.Name):
        value = script.single_value(node.id)
        return _length(script, value) if value is not None else None
    if isinstance(node, (ast.List, ast.Tuple)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        if isinstance(node, ast.Tuple) and node.elts:  # (x, y): the length of x
            lengths = {_length(script, e) for e in node.elts}
            return lengths.pop() if len(lengths) == 1 else None
        return len(node.elts)
    if isinstance(node, ast.Call):
        name = script.qualname(node.func) or ""
        if name in ("numpy.arange",) and len(node.args) == 1:
            return int_literal(node.args[0])
        if name in ("numpy.zeros", "numpy.ones", "numpy.empty") and node.args:
            shape = node.args[0]
            first = shape.elts[0] if isinstance(shape, ast.Tuple) and shape.elts else shape
            return int_literal(first)
        if name in ("numpy.random.rand", "numpy.random.randn") and node.args:
            return int_literal(node.args[0])
    return None


def _size(script: Script, chain: list[ast.Call]) -> int | None:
    """Elements coming out of ``chain`` (None when unknown)."""
    size = _source_size(script, chain[0])
    for call in chain[1:]:
        if size is None:
            return None
        m = method(call)
        n = int_literal(call.args[0]) if call.args else None
        if m in KEEPS_SIZE:
            continue
        if m == "take" and n is not None:
            size = size if n < 0 else min(size, n)
        elif m == "skip" and n is not None:
            size = max(0, size - n)
        elif m == "batch" and n:
            drop = keyword(call, "drop_remainder") or (call.args[1] if len(call.args) > 1 else None)
            size = size // n if is_const(drop, True) else -(-size // n)
        else:
            return None
    return size


def check(script: Script) -> Iterator[tuple[int, str]]:
    """Batch-then-shuffle chains, and drop_remainder batches larger than the dataset."""
    for node in script.nodes:
        if not isinstance(node, ast.Call):
            continue
        m = method(node)
        if m == "shuffle":
            chain = script.chain(node)
            prior = [method(c) for c in chain[:-1]]
            if "batch" in prior and "unbatch" not in prior[prior.index("batch") :]:
                yield (
                    node.lineno,
                    (
                        "shuffle() after batch() shuffles whole batches: the same examples stay "
                        "together in the same batch every epoch"
                    ),
                )
        elif m == "batch" and is_const(keyword(node, "drop_remainder"), True):
            chain = script.chain(node)
            n = int_literal(node.args[0]) if node.args else None
            size = _size(script, chain[:-1]) if len(chain) > 1 else None
            if n is not None and size is not None and size < n:
                yield (
                    node.lineno,
                    (
                        f"batch({n}, drop_remainder=True) on a dataset of {size} elements "
                        "yields no batch at all: every epoch has 0 steps and the model never trains"
                    ),
                )


RULE = Rule(
    name="batch-order",
    title="Dataset batched before shuffling, or batched into nothing",
    explanation=(
        "shuffle() must come before batch() to mix examples; batch(n, drop_remainder=True) on "
        "fewer than n elements drops them all."
    ),
    fix="ds.shuffle(buffer).batch(n) (shuffle first); drop_remainder=False or a smaller batch",
    check=check,
)
