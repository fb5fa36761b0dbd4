"""Steps as columns, before and after: a fast loop's rate and the worker's memory, old vs new.

Runs ``bench/soak_worker.py`` (``monitor.log`` in a loop, in a worker as the
window starts it, recording on, this process the viewer) on this tree and on an
earlier commit (checked out in a temporary worktree), alternating in random order
round by round, so both see the same machine. Prints each round and the medians:
the loop's steps/s (what the training thread manages while the pump, the recorder
and the pipe share the process) and the worker's peak RSS above its baseline.

    python bench/step_path.py [--against a95c871] [--rounds 3] [--steps 1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout(commit: str) -> Path:
    """A worktree of ``commit`` (made once, kept in the temp folder)."""
    where = Path(tempfile.gettempdir()) / f"tfstudio-step-path-{commit}"
    if not where.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), commit],
            check=True,
            capture_output=True,
        )
    shutil.copy(ROOT / "bench" / "soak_worker.py", where / "bench" / "soak_worker.py")
    return where


def one(tree: Path, steps: int) -> dict:
    """soak_worker's figures for one run on ``tree``."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                sys.executable,
                str(tree / "bench" / "soak_worker.py"),
                "--steps",
                str(steps),
                "--json",
                out.name,
                "--rate",
                "0",
            ],
            check=True,
            capture_output=True,
            cwd=tree,
        )
        return json.loads(Path(out.name).read_text())


def main() -> None:
    """Alternate old and new; print rounds and medians."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--against", default="a95c871", help="the commit before (default a95c871)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    ns = p.parse_args()
    trees = {"before": checkout(ns.against), "after": ROOT}
    rng = random.Random(ns.seed)
    got: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(ns.rounds):
        order = ["before", "after"]
        rng.shuffle(order)
        for name in order:
            out = one(trees[name], ns.steps)
            got[name].append(out)
            print(
                f"round {r + 1} {name:6s}: {out['rate']:8.0f} steps/s, worker rss "
                f"{out['base']:.0f} -> peak {out['peak']:.0f} MB "
                f"(+{out['peak'] - out['base']:.0f}), viewer saw step {out['store_steps']}",
                flush=True,
            )
    for name in ("before", "after"):
        rate = statistics.median(o["rate"] for o in got[name])
        above = statistics.median(o["peak"] - o["base"] for o in got[name])
        print(
            f"step path {name} ({ns.against if name == 'before' else 'this tree'}): "
            f"median {rate:.0f} steps/s, peak rss above baseline {above:.0f} MB "
            f"over {ns.steps} steps"
        )


if __name__ == "__main__":
    main()
