"""Two checkouts' cost of watching, compared arm by arm: the window line of each, side by side.

``bench/window_overhead.py`` compares a run in the window with a headless one, each a
process of its own; on a shared VM a run's CPU per step moves with the machine's regime
by more than a change does. This runs that benchmark's two arms (``measure``: the window
offscreen with live plots, and ``tfstudio run``) from two checkouts in turn, round by
round: old window, new window, old headless, new headless, the order of the trees
reversed every other round, so each pair of one arm runs seconds apart. Each checkout's
arms run its own tfstudio (the worker starts from the checkout its viewer came from).

    python bench/window_trees.py --old /path/to/older/checkout [--new .] [--rounds 8]

Prints each round, then per arm the median of the rounds' new/old CPU per step, and each
checkout's window/headless ratio (what ``window_overhead.py`` reports) over the same
rounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
from pathlib import Path
from types import ModuleType

ARMS = ("window", "headless")


def load(root: Path, name: str) -> ModuleType:
    """``bench/window_overhead.py`` of the checkout at ``root`` as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, root / "bench" / "window_overhead.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no bench/window_overhead.py in {root}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Run the rounds and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the older checkout")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    trees = {"old": load(args.old.resolve(), "window_old"), "new": load(args.new, "window_new")}
    cpu: dict[tuple[str, str], list[float]] = {(t, a): [] for t in trees for a in ARMS}
    redraws: dict[str, list[float]] = {t: [] for t in trees}
    for r in range(args.rounds):
        first, second = ("old", "new") if r % 2 == 0 else ("new", "old")
        parts = []
        for arm in ARMS:
            for tree in (first, second):
                result, window = trees[tree].measure(arm)
                cpu[tree, arm].append(result["cpu_per_step"])
                if window is not None:
                    redraws[tree].append(window["redraws_per_s"])
                parts.append(
                    f"{tree} {arm} {result['rate']:,.0f} steps/s "
                    f"{result['cpu_per_step'] * 1e6:,.0f} us CPU/step"
                )
        print(f"round {r + 1}: " + ", ".join(parts), flush=True)
    for arm in ARMS:
        pairs = [n / o for n, o in zip(cpu["new", arm], cpu["old", arm], strict=True)]
        each = ", ".join(f"{p:.3f}" for p in pairs)
        print(f"{arm}: new/old CPU per step, median {statistics.median(pairs):.3f} ({each})")
    for tree in trees:
        ratios = [w / h for w, h in zip(cpu[tree, "window"], cpu[tree, "headless"], strict=True)]
        print(
            f"{tree}: window/headless median {statistics.median(ratios):.3f}, "
            f"redraws {statistics.median(redraws[tree]):.1f}/s"
        )


if __name__ == "__main__":
    main()
