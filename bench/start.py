"""Time from Run to the script's first line, with a warm and with a cold worker.

Warm: the window keeps a spare worker that has imported TensorFlow; Run hands
the script to it. Cold: no spare (or a script that sets ``TF_*`` variables), so
Run starts a process that imports TensorFlow first. Measured from
``ProcessLauncher.start`` to the moment the viewer reads the script's first
printed line, rounds interleaved.

    python bench/start.py [--rounds 5]

Ends with one line: ``start: run to first line s = W (warm), C (cold)`` (medians).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

SCRIPT = "print('first line', flush=True)\nimport keras\n"


def first_line(warm: bool, script: Path) -> float:
    from tfstudio.core.channel import Channel
    from tfstudio.core.events import ConsoleOutput, RunEnded
    from tfstudio.core.process import ProcessLauncher

    channel = Channel()
    launcher = ProcessLauncher(channel, keep_spare=warm)
    try:
        if warm:
            launcher.prepare()
            while not launcher.spare.ready.is_set():
                time.sleep(0.01)
            time.sleep(0.5)  # the spare is idle, as after the user opened a script
        t0 = time.perf_counter()
        launcher.start(str(script))
        seen = None
        ended = False
        while not ended:
            for event in channel.drain():
                if seen is None and isinstance(event, ConsoleOutput) and "first line" in event.text:
                    seen = time.perf_counter() - t0
                ended = ended or isinstance(event, RunEnded)
            time.sleep(0.001)
        return seen
    finally:
        launcher.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"warm": [], "cold": []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "first_line.py"
        script.write_text(SCRIPT)
        for r in range(args.rounds):
            for kind in ("warm", "cold") if r % 2 == 0 else ("cold", "warm"):
                times[kind].append(first_line(kind == "warm", script))
            print(
                f"round {r + 1}: warm {times['warm'][-1]:.3f} s, cold {times['cold'][-1]:.3f} s",
                flush=True,
            )
    w, c = statistics.median(times["warm"]), statistics.median(times["cold"])
    print(f"start: run to first line s = {w:.2f} (warm), {c:.2f} (cold)")


if __name__ == "__main__":
    main()
