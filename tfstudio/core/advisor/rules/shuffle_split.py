"""Rule 5: a dataset shuffled every epoch, then split with ``take``/``skip``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, is_const, keyword, method
from tfstudio.core.advisor.base import Rule


def reshuffles(call: ast.Call) -> bool:
    """True for a ``shuffle(...)`` that reshuffles every iteration (the default)."""
    value = keyword(call, "reshuffle_each_iteration")
    if value is None and len(call.args) >= 3:
        value = call.args[2]
    return not is_const(value, False)


def check(script: Script) -> Iterator[tuple[int, str]]:
    """``take`` and ``skip`` on the same reshuffling dataset."""
    splits: dict[int, tuple[ast.Call, set[str], list[int]]] = {}
    for node in script.nodes:
        if not (isinstance(node, ast.Call) and method(node) in ("take", "skip")):
            continue
        chain = script.chain(node)
        if not chain:
            continue
        shuffled = [c for c in chain[:-1] if method(c) == "shuffle" and reshuffles(c)]
        if not shuffled:
            continue
        # take/skip further up the chain already split: look at the split right after the shuffle
        after = chain[chain.index(shuffled[-1]) + 1 :]
        if after[0] is not node and method(after[0]) in ("take", "skip"):
            continue
        entry = splits.setdefault(id(shuffled[-1]), (shuffled[-1], set(), []))
        entry[1].add(method(node))
        entry[2].append(node.lineno)
    for shuffle, kinds, lines in splits.values():
        if kinds == {"take", "skip"}:
            where = ", ".join(str(n) for n in sorted(set(lines)))
            yield (
                shuffle.lineno,
                (
                    f"this shuffle reshuffles every epoch, and take/skip (lines {where}) split it: "
                    "each epoch puts different elements in each part, so training sees test data"
                ),
            )


RULE = Rule(
    name="shuffle-split",
    title="Shuffled dataset split with take/skip mixes train and test",
    explanation=(
        "shuffle() reshuffles on every iteration by default, so take(n)/skip(n) after it pick "
        "different elements every epoch: the test set leaks into training."
    ),
    fix="ds = ds.shuffle(buffer, seed=42, reshuffle_each_iteration=False) before take/skip; "
    "or split first and shuffle only the training part",
    check=check,
)
