"""Stop through the process launcher: from pressing Stop to the run's end on the channel.

What the window does when Stop is pressed, without the window: a
``ProcessLauncher`` runs each script in a worker process and ``stop()`` asks for
a batch boundary, then escalates (SIGINT, SIGTERM, SIGKILL; see
``tfstudio/core/process.py``). Three kinds of script, ``--runs`` runs each:

1. ``fit``: a small MLP in ``model.fit``. Stop is honoured at the next batch
   boundary; the figure is press -> ``RunEnded`` (worker pump, validation
   skipped, the script's exit and the drain of its output included).
2. ``sleeping``: a script stuck in one ``time.sleep`` C call between fits. No
   batch boundary comes: after ``GRACE_S`` the worker gets SIGINT and the
   ``KeyboardInterrupt`` ends the script.
3. ``ignores SIGINT``: a loop that ignores SIGINT; SIGTERM ends it after
   ``GRACE_S + STAGE_S``.

The escalation figures are the schedule plus the cost of each step of it; the
tests only check that the stages come in order (tests/e2e/test_isolated_runs.py).

    python bench/stop_time.py [--runs 3] [--grace 5.0] [--stage 2.0]

Ends with one line per kind, starting ``stop:``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

FIT = """
import sys
sys.path.insert(0, {bench!r})
from bench_model import mlp_and_data
model, data = mlp_and_data(64)
model.fit(data, epochs=1000, steps_per_epoch=100, verbose=0)
"""

SLEEPING = """
import time
print("waiting", flush=True)
time.sleep(600)
"""

IGNORES_SIGINT = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("waiting", flush=True)
while True:
    time.sleep(0.01)
"""


def stop_once(script: Path, warm: bool, ready: str) -> tuple[float, str, str]:
    """Start ``script`` in a worker, press Stop once it is ``ready``; (seconds, status, message)."""
    from tfstudio.core.channel import Channel
    from tfstudio.core.events import ConsoleOutput, RunEnded, StepEnded, step_rows
    from tfstudio.core.process import ProcessLauncher

    channel = Channel()
    launcher = ProcessLauncher(channel, warm=warm, keep_spare=False)
    events: list[object] = []

    def wait_for(predicate, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{script.name}: nothing after {timeout} s")
            events.extend(channel.drain())
            time.sleep(0.001)

    def is_ready() -> bool:
        if ready == "steps":  # a few hundred steps in: traced and running at full speed
            return sum(isinstance(e, StepEnded) for e in step_rows(events)) >= 300
        return ready in "".join(e.text for e in events if isinstance(e, ConsoleOutput))

    try:
        launcher.start(str(script))
        wait_for(is_ready)
        t0 = time.perf_counter()
        launcher.stop()
        ended: list[RunEnded] = []

        def run_ended() -> bool:
            ended.extend(e for e in channel.drain() if isinstance(e, RunEnded))
            return bool(ended)

        wait_for(run_ended, timeout=120)
        took = time.perf_counter() - t0
    finally:
        launcher.shutdown()
    return took, ended[0].status, ended[0].message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grace", type=float, help="override process.GRACE_S (seconds)")
    parser.add_argument("--stage", type=float, help="override process.STAGE_S (seconds)")
    args = parser.parse_args()
    import tfstudio.core.process as process

    if args.grace is not None:
        process.GRACE_S = args.grace
    if args.stage is not None:
        process.STAGE_S = args.stage
    kinds = (
        ("fit", FIT.format(bench=str(HERE)), True, "steps", 0.0),
        ("sleeping", SLEEPING, False, "waiting", process.GRACE_S),
        ("ignores SIGINT", IGNORES_SIGINT, False, "waiting", process.GRACE_S + process.STAGE_S),
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="tfstudio-bench-stop-") as tmp:
        for name, source, warm, ready, schedule in kinds:
            script = Path(tmp) / (name.replace(" ", "_") + ".py")
            script.write_text(textwrap.dedent(source))
            times = []
            for i in range(args.runs):
                took, status, message = stop_once(script, warm, ready)
                times.append(took)
                print(f"{name} {i + 1}: {took:.3f} s, {status}: {message}", flush=True)
            results.append((name, schedule, times))
    print(f"GRACE_S = {process.GRACE_S} s, STAGE_S = {process.STAGE_S} s")
    for name, schedule, times in results:
        extra = statistics.median(times) - schedule
        print(
            f"stop: {name}: press -> run ended median {statistics.median(times):.3f} s "
            f"(max {max(times):.3f} s, {len(times)} runs; schedule {schedule:.1f} s, "
            f"+{extra:.3f} s)"
        )


if __name__ == "__main__":
    main()
