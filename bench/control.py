"""Run controls: pause/stop latency, checkpoint save time against model size, eager/graph ratio.

Everything in one process (TrainingSession on a thread, as inside the worker;
the worker's pump adds up to ~20 ms to a command from the window):

1. Pause: press (``channel.send(Pause())``) -> the training thread parked (the
   ``RunState("paused")`` event it emits just before it blocks): ms and steps
   trained in between, over ``--presses`` presses. Stop: press -> the fit left
   (``FitEnded``), over ``--stops`` runs.
2. Checkpoint save (``CheckpointStore.save``: model + Adam slots + step) for
   models of growing size: median seconds of 3 saves, and MB on disk.
3. Eager/graph: steps/s of the same MLP fit in graph mode and eagerly, in
   adjacent pairs; the median ratio.

    python bench/control.py [--presses 20] [--stops 5] [--pairs 4]

Ends with three lines starting ``pause:``, ``checkpoint:`` and ``eager/graph:``.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCRIPT = """
import sys
sys.path.insert(0, {bench!r})
from bench_model import mlp_and_data
model, data = mlp_and_data(64)
model.fit(data, epochs=1000, steps_per_epoch=100, verbose=0)
"""


def _session(folder: Path):
    from tfstudio.core.channel import Channel
    from tfstudio.engine.session import TrainingSession

    script = folder / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(bench=str(Path(__file__).parent))))
    channel = Channel()
    session = TrainingSession(script, (), channel, capture_output=False)
    session.start()
    return session, channel


def _wait(channel, kind, seen: list, timeout: float = 120.0):
    """Drain until an event of ``kind`` not yet looked at arrives; (event, arrival time).

    ``seen`` is ``[i, events...]``: ``i`` is the index of the last event looked at.
    """
    from tfstudio.core.events import step_rows

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.extend(step_rows(channel.drain()))
        while seen[0] < len(seen) - 1:
            seen[0] += 1
            event = seen[seen[0]]
            if isinstance(event, kind):
                return event, time.perf_counter()
        time.sleep(0.0005)
    raise TimeoutError(f"no {kind.__name__} within {timeout}s")


def pause_and_stop(presses: int, stops: int, folder: Path) -> tuple[list, list]:
    """(pause samples, stop samples): each (ms, steps) from press to parked."""
    from tfstudio.core.commands import Pause, Resume, Stop
    from tfstudio.core.events import FitEnded, RunEnded, RunState, StepEnded

    pauses: list[tuple[float, int]] = []
    session, channel = _session(folder)
    seen: list = [0]
    _wait(channel, StepEnded, seen)
    for _ in range(presses):
        time.sleep(0.2)  # train a while
        step0 = session.monitor.global_step
        t0 = time.perf_counter()
        channel.send(Pause())
        state, t1 = _wait(channel, RunState, seen)
        pauses.append(((t1 - t0) * 1e3, state.global_step - step0))
        print(f"pause {len(pauses)}: {pauses[-1][0]:.1f} ms, {pauses[-1][1]} steps", flush=True)
        channel.send(Resume())
        _wait(channel, RunState, seen)
    session.stop()
    session.join(60)
    stops_: list[tuple[float, int]] = []
    for _ in range(stops):
        session, channel = _session(folder)
        seen = [0]
        _wait(channel, StepEnded, seen)
        time.sleep(0.5)
        step0 = session.monitor.global_step
        t0 = time.perf_counter()
        channel.send(Stop())
        ended, t1 = _wait(channel, FitEnded, seen)
        stops_.append(((t1 - t0) * 1e3, ended.global_step - step0))
        print(f"stop {len(stops_)}: {stops_[-1][0]:.1f} ms, {stops_[-1][1]} steps", flush=True)
        session.stop()
        _wait(channel, RunEnded, seen)
    return pauses, stops_


def checkpoint_sizes(folder: Path) -> list[tuple[int, float, float]]:
    """(parameters, median save seconds, MB on disk) for growing Dense models."""
    import keras

    from tfstudio.engine.checkpoints import CheckpointStore

    out = []
    for width in (64, 512, 2048, 4096):
        model = keras.Sequential(
            [keras.Input((width,)), keras.layers.Dense(width), keras.layers.Dense(width)]
        )
        model.compile(keras.optimizers.Adam(), "mse")
        store = CheckpointStore(folder / f"w{width}", model, model.optimizer, max_to_keep=2)
        store.build_optimizer()
        times = []
        for step in range(1, 4):
            times.append(store.save(step).seconds)
        latest = store.manager.latest_checkpoint
        size = sum(p.stat().st_size for p in Path(latest).parent.glob(Path(latest).name + ".*"))
        out.append((model.count_params(), statistics.median(times), size / 1e6))
    return out


def eager_graph(pairs: int, steps: int = 100, eager_steps: int = 20) -> list[tuple[float, float]]:
    """(graph steps/s, eager steps/s) in adjacent pairs on one model."""
    from bench_model import mlp_and_data

    model, data = mlp_and_data(64)

    def rate(eager: bool) -> float:
        model.run_eagerly = eager
        model.make_train_function(force=True)
        model.fit(data, epochs=1, steps_per_epoch=5, verbose=0)  # warm-up / trace
        n = eager_steps if eager else steps
        t = time.perf_counter()
        model.fit(data, epochs=1, steps_per_epoch=n, verbose=0)
        return n / (time.perf_counter() - t)

    out = []
    for i in range(pairs):
        if i % 2 == 0:
            g, e = rate(False), rate(True)
        else:
            e, g = rate(True), rate(False)
        out.append((g, e))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--stops", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from tfstudio.engine.tf_import import ensure_keras

    ensure_keras()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pauses, stops = pause_and_stop(args.presses, args.stops, folder)
        sizes = checkpoint_sizes(folder)
    pairs = eager_graph(args.pairs)
    for params, seconds, mb in sizes:
        print(
            f"checkpoint save: {params:>11,} params, {mb:7.1f} MB on disk, {seconds * 1e3:8.1f} ms"
        )
    for g, e in pairs:
        print(f"graph {g:7.1f} steps/s  eager {e:7.1f} steps/s  ratio {g / e:.2f}")
    pm = statistics.median(ms for ms, _ in pauses)
    ps = statistics.median(s for _, s in pauses)
    sm = statistics.median(ms for ms, _ in stops)
    ss = statistics.median(s for _, s in stops)
    pmax = max(m for m, _ in pauses)
    smax = max(m for m, _ in stops)
    print(
        f"pause: press -> parked median {pm:.1f} ms, {ps:.0f} steps (max {pmax:.1f} ms, "
        f"{max(s for _, s in pauses)} steps, {len(pauses)} presses); stop: press -> fit left "
        f"median {sm:.1f} ms, {ss:.0f} steps (max {smax:.1f} ms, {len(stops)} stops)"
    )
    big = sizes[-1]
    print(
        "checkpoint: save "
        + ", ".join(f"{p / 1e6:.2g}M params {s * 1e3:.0f} ms" for p, s, _ in sizes)
        + f" ({big[2] / big[1]:.0f} MB/s at the largest)"
    )
    ratio = statistics.median(g / e for g, e in pairs)
    print(f"eager/graph: graph is {ratio:.2f}x the eager steps/s (median of {len(pairs)} pairs)")


if __name__ == "__main__":
    main()
