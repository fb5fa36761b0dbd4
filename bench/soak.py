"""Endurance soak: faults survived and a monitor that changes nothing (issue 19).

1. Checkpoint kill rounds: a run saves a ~50 MB checkpoint after every step in
   a worker; the worker is SIGKILLed at a random moment inside a save (right
   after a step's hook, while that step's save runs); the folder must restore
   (its latest checkpoint and every one its index lists load into a fresh
   model). One launcher keeps a warm spare, so rounds do not wait for imports.
2. Bit-exact: tests/scripts/bit_exact.py (seeded, op-deterministic: Dense,
   BatchNormalization, Dropout, a layer writing a variable in ``call``, a
   custom ``train_step`` and a custom GradientTape loop) under plain Python and
   in a worker with everything on (inspector every step, recording, NaN guard,
   a checkpoint every 2 steps): every saved array compared byte for byte.

    python bench/soak.py [--rounds 50]

Prints four ``soak:`` lines; the window and worker memory lines are measured
elsewhere (not yet: they say so).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

from tests.e2e.checkpoint_kill import (  # noqa: E402
    kill_during_a_save,
    left_partial,
    restores,
    write_saver,
)
from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import RunEnded  # noqa: E402
from tfstudio.core.options import RunOptions  # noqa: E402
from tfstudio.core.process import ProcessLauncher  # noqa: E402

BIT_EXACT = ROOT / "tests" / "scripts" / "bit_exact.py"


def checkpoint_kill_rounds(rounds: int, work: Path, seed: int) -> tuple[int, int, float]:
    """Kill ``rounds`` workers inside a save; returns (restorable, killed inside a save, s)."""
    script = write_saver(work)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    launcher.prepare()
    rng = random.Random(seed)
    restorable = inside = 0
    started = time.perf_counter()
    try:
        for i in range(rounds):
            folder = work / f"checkpoints-{i}"
            saves = kill_during_a_save(launcher, channel, script, folder, rng)
            partial = left_partial(folder)
            ok, detail = restores(folder, script)
            restorable += ok
            inside += partial
            print(
                f"round {i + 1}/{rounds}: {len(saves)} saves, "
                f"{'inside a save' if partial else 'between saves'}, "
                f"{'restorable' if ok else 'NOT restorable'} ({detail})",
                flush=True,
            )
    finally:
        launcher.shutdown()
    return restorable, inside, time.perf_counter() - started


def bit_exact(work: Path) -> tuple[bool, str]:
    """Plain Python vs a worker with everything on: the same bytes in every saved array?"""
    import numpy as np

    env = {k: v for k, v in os.environ.items() if not k.startswith("TFSTUDIO")}
    plain = subprocess.run(
        [sys.executable, str(BIT_EXACT), str(work / "plain.npz")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if plain.returncode != 0:
        return False, f"plain Python failed: {plain.stderr[-2000:]}"
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    options = RunOptions(
        logdir=str(work / "runs"),
        record=True,
        inspector=True,
        sample_every=1,
        checkpoint_every=2,
        checkpoint_dir=str(work / "bit-exact-checkpoints"),
        on_nan="stop",
    )
    try:
        launcher.start(str(BIT_EXACT), (str(work / "studio.npz"),), options)
        ended = None
        while ended is None:
            ended = next((e for e in channel.drain() if isinstance(e, RunEnded)), None)
            time.sleep(0.02)
    finally:
        launcher.shutdown()
    if ended.status != "finished":
        return False, f"under tfstudio: {ended.summary()}"
    want, got = np.load(work / "plain.npz"), np.load(work / "studio.npz")
    if sorted(want.files) != sorted(got.files):
        return False, "the scripts saved different arrays"
    different = [k for k in want.files if want[k].tobytes() != got[k].tobytes()]
    if different:
        return False, "differ: " + ", ".join(different)
    return True, f"{len(want.files)} arrays equal byte for byte"


def main() -> None:
    """Run the soak and print the ``soak:`` lines."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=50, help="checkpoint kill rounds (default 50)")
    p.add_argument("--seed", type=int, default=0)
    ns = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfstudio-soak-") as tmp:
        work = Path(tmp)
        same, detail = bit_exact(work)
        print(f"bit-exact: {detail}", flush=True)
        restorable, inside, seconds = checkpoint_kill_rounds(ns.rounds, work, ns.seed)
    print(f"checkpoint kill rounds: {inside}/{ns.rounds} killed inside a save, {seconds:.0f} s")
    print("soak: window rss growth per run MB = not measured yet")
    print("soak: worker peak rss above baseline MB = not measured yet")
    print(f"soak: checkpoint kill rounds restorable = {restorable}/{ns.rounds}")
    print(f"soak: bit-exact with everything on = {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
