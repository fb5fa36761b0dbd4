"""Opening big TensorBoard log folders: tfstudio's reader against TensorBoard's.

Builds, in a temporary folder (``--dir`` to keep it):

1. a log folder of 100 runs x 10,000 steps x 3 tags, written with the bytes
   tfstudio's recorder writes (its own encoding functions, no TensorFlow), each
   with a ``run.json``;
2. one run of 2,000,000 steps (one tag, ``step/loss``);
3. a foreign folder written by TensorFlow itself: ``tf.summary.scalar`` (3 tags,
   one value a record) and Keras's ``TensorBoard(update_freq="batch")`` callback;
4. one run of 10,000,000 steps (one tag), for the memory figure;
5. 1,000 small run folders, for listing.

Then measures, in this one run: tfstudio's reader (every point, full resolution,
one thread), TensorBoard's Python ``EventAccumulator`` (every point), and
TensorBoard's Rust data server (``tensorboard --load_fast=true`` on 127.0.0.1,
timed until every run's ``step/loss`` is served whole, downsampled to 1,000
points a run as it serves them); the 2M-step run read and exported; values/s on
our files and on TensorFlow's; listing; and the peak memory of reading the
10M-step run into a :class:`tfstudio.core.run_store.RunStore` the way the window
reads a picked run (``FolderFeed`` chunks into the store's bounded series).

    python bench/logdir.py [--quick] [--dir DIR] [--skip-tensorboard]

Last lines:
``logdir: tfstudio s = A, tensorboard s = B, ratio = R``,
``logdir: 2M-step run opens in s = C``, ``logdir: values/s own = X, foreign = Y``,
``logdir: 10M-step run in the window MB = M``; before them the time to a big run's
overview (coarse first) and ``logdir: follow 100 runs cpu % of one core = P, lag s = L``
(100 run folders followed as the Runs panel follows them, while a writer process
appends 10 steps/s to each; ``--follow`` measures only this).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tfstudio.core.eventfile import masked_crc  # noqa: E402

TAGS = ("step/loss", "step/accuracy", "step/mae")


def frame(data: bytes) -> bytes:
    """One TFRecord around ``data``."""
    header = struct.pack("<Q", len(data))
    return (
        header + struct.pack("<I", masked_crc(header)) + data + struct.pack("<I", masked_crc(data))
    )


def write_recorder_run(folder: Path, steps: int, tags: tuple[str, ...]) -> int:
    """A run folder as tfstudio's recorder writes it; returns the values written."""
    from tensorboard.compat.proto import event_pb2

    from tfstudio.engine.recorder import scalars_event

    folder.mkdir(parents=True, exist_ok=True)
    t0 = 1.7e9
    described: set[str] = set()
    name = f"events.out.tfevents.{int(t0)}.bench.1.1.v2"
    with open(folder / name, "wb") as f:
        f.write(
            frame(event_pb2.Event(wall_time=t0, file_version="brain.Event:2").SerializeToString())
        )
        block: list[bytes] = []
        for s in range(1, steps + 1):
            x = 1.0 / s
            values = dict(zip(tags, (x, 1.0 - x, x * 0.5)[: len(tags)], strict=True))
            block.append(frame(scalars_event(s, values, t0 + s * 0.01, described)))
            if len(block) >= 50_000:
                f.write(b"".join(block))
                block = []
        f.write(b"".join(block))
    info = {"format": 1, "status": "finished", "start_time": t0, "steps": steps, "script": "b.py"}
    info["final_loss"] = 1.0 / steps
    (folder / "run.json").write_text(json.dumps(info))
    return steps * len(tags)


FOREIGN = """
import sys, numpy as np, tensorflow as tf, keras
out, steps = sys.argv[1], int(sys.argv[2])
w = tf.summary.create_file_writer(out + "/tf_summary")
@tf.function
def log(n):
    with w.as_default():
        for i in tf.range(n, dtype=tf.int64):
            x = 1.0 / tf.cast(i + 1, tf.float32)
            tf.summary.scalar("loss", x, step=i)
            tf.summary.scalar("accuracy", 1.0 - x, step=i)
            tf.summary.scalar("mean_absolute_error", x * 0.5, step=i)
log(tf.constant(steps, tf.int64))
w.close()
x = np.random.rand(4096, 8).astype("float32"); y = np.random.rand(4096, 1).astype("float32")
m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
m.compile("sgd", "mse", metrics=["mae"])
tb = keras.callbacks.TensorBoard(out + "/keras", update_freq="batch")
m.fit(x, y, epochs=3, batch_size=8, validation_split=0.1, verbose=0, callbacks=[tb])
"""


def build(base: Path, runs: int, steps: int, big: int, huge: int, foreign: int) -> dict:
    """Write every case under ``base`` (skipping what is there from an earlier run)."""
    done = base / "built.json"
    if done.exists():
        return json.loads(done.read_text())
    t = time.perf_counter()
    values = 0
    for i in range(runs):
        values += write_recorder_run(base / "logdir" / f"run-{i:03d}", steps, TAGS)
    big_values = write_recorder_run(base / "big" / "run-2m", big, TAGS[:1])
    write_recorder_run(base / "huge" / "run-10m", huge, TAGS[:1])
    print(f"built the recorder's cases in {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = base / "write_foreign.py"  # a file: autograph reads the loop's source
    script.write_text(FOREIGN)
    subprocess.run(
        [sys.executable, str(script), str(base / "foreign"), str(foreign)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    print(f"built the foreign folder with TensorFlow in {time.perf_counter() - t:.1f} s")
    listing = base / "listing"
    for i in range(1000):
        run = listing / f"run-{i:04d}"
        run.mkdir(parents=True)
        (run / "run.json").write_text(
            json.dumps({"status": "finished", "start_time": 1.7e9 + i, "steps": 10})
        )
        (run / "events.out.tfevents.1.bench.v2").write_bytes(b"")
    built = {"runs": runs, "steps": steps, "values": values, "big_values": big_values, "huge": huge}
    done.write_text(json.dumps(built))
    return built


# -- tfstudio ------------------------------------------------------------------------
def tfstudio_read(logdir: Path) -> tuple[float, int, float]:
    """Seconds to read every point of every run in ``logdir``, values read, CPU seconds."""
    from tfstudio.core.runs import RunFolderReader, list_runs

    t, cpu = time.perf_counter(), time.process_time()
    values = 0
    for run in list_runs(logdir):
        for cols in RunFolderReader(run.path).read().values():
            values += len(cols)
    return time.perf_counter() - t, values, time.process_time() - cpu


def tfstudio_read_folder(folder: Path) -> tuple[float, int, float]:
    """Seconds to read every point of one log folder's sub-folders, values read, CPU seconds."""
    from tfstudio.core.runs import RunFolderReader

    t, cpu = time.perf_counter(), time.process_time()
    values = 0
    for sub in sorted(p for p in folder.rglob("*") if p.is_dir()):
        if any(sub.glob("events.out.tfevents.*")):
            values += sum(len(c) for c in RunFolderReader(sub).read().values())
    return time.perf_counter() - t, values, time.process_time() - cpu


MEMORY = """
import sys, psutil
from tfstudio.core.run_loading import FolderFeed
from tfstudio.core.run_store import RunStore
proc = psutil.Process()
base = proc.memory_info().rss
feed = FolderFeed(sys.argv[1])
store = RunStore("run-10m", smoothing=0.6)  # as the window keeps a picked run (smoothing on)
peak = base
while True:
    batch = feed.read()
    batch.apply(store)
    peak = max(peak, proc.memory_info().rss)
    if not batch.more:
        break
points = sum(t.count() for t in store.steps.values())
print(points, (peak - base) / 2**20, base / 2**20)
"""


def memory_10m(run: Path) -> tuple[int, float, float]:
    """(points, peak RSS growth MB, baseline RSS MB) reading ``run`` into a run store, as the
    window reads a picked run (the reading thread's chunks, the store's bounded series)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", MEMORY, str(run)], capture_output=True, text=True, env=env
    )
    if out.returncode:
        raise RuntimeError(out.stderr)
    points, grown, base = out.stdout.split()
    return int(points), float(grown), float(base)


# -- TensorBoard -------------------------------------------------------------------------
def accumulator_read(logdir: Path) -> tuple[float, int]:
    """Seconds for TensorBoard's Python EventAccumulator to load every point of every run."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    t = time.perf_counter()
    values = 0
    for run in sorted(p for p in logdir.iterdir() if p.is_dir()):
        acc = EventAccumulator(str(run), size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        tags = acc.Tags()
        values += sum(len(acc.Tensors(tag)) for tag in tags.get("tensors", []))
        values += sum(len(acc.Scalars(tag)) for tag in tags.get("scalars", []))
    return time.perf_counter() - t, values


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - our own local server
        return json.loads(r.read())


def rust_server(logdir: Path, runs: int, last_step: int, limit_s: float) -> float:
    """Seconds until TensorBoard (``--load_fast=true``) serves every run's whole ``step/loss``."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "tensorboard.main",
        "--logdir",
        str(logdir),
        "--load_fast=true",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--reload_interval",
        "1",
    ]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    waiting = {f"run-{i:03d}" for i in range(runs)}
    try:
        while waiting:
            if proc.poll() is not None:
                raise RuntimeError(f"tensorboard ended: {proc.stderr.read().decode()[-2000:]}")
            if time.perf_counter() - t > limit_s:
                raise TimeoutError(f"{len(waiting)} runs not served after {limit_s:.0f} s")
            for run in sorted(waiting):
                query = urllib.parse.urlencode({"run": run, "tag": "step/loss"})
                try:
                    data = _get(f"{base}/data/plugin/scalars/scalars?{query}")
                except (OSError, ValueError):
                    break  # not up yet, or the run is not loaded yet
                if isinstance(data, list) and data and data[-1][1] == last_step:
                    waiting.discard(run)
                else:
                    break
            else:
                continue
            time.sleep(0.05)
        return time.perf_counter() - t
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def overview_then_full(run: Path) -> tuple[float, float, int]:
    """Seconds until a picked run's first batch (its overview of the whole run) and until
    every point is read, as the window reads it (``FolderFeed`` chunks); overview points."""
    from tfstudio.core.run_loading import FolderFeed

    t = time.perf_counter()
    feed = FolderFeed(run)
    batch = feed.read()
    first = time.perf_counter() - t
    points = sum(len(xs) for _, xs, _ in batch.overview)
    while batch.more:
        batch = feed.read()
    return first, time.perf_counter() - t, points


# -- following ---------------------------------------------------------------------------
FOLLOW_WRITER = """
import json, os, socket, sys, time
from pathlib import Path
from tfstudio.core.eventfile import masked_crc
from tfstudio.core.runs import write_run_json
from tfstudio.engine.recorder import scalars_event
import struct

def frame(data):
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked_crc(head)) + data + struct.pack("<I", masked_crc(data))

base, runs = Path(sys.argv[1]), int(sys.argv[2])
rate, seconds = float(sys.argv[3]), float(sys.argv[4])
info = {"format": 1, "status": "running", "script": "f.py", "start_time": time.time(),
        "hostname": socket.gethostname(), "pid": os.getpid(), "steps": 0,
        "segments": [{"kind": "fit", "index": 0, "model": "m", "start_step": 0}]}
files, described = [], [set() for _ in range(runs)]
for i in range(runs):
    folder = base / f"run-{i:03d}"
    folder.mkdir(parents=True)
    write_run_json(folder, info)
    f = open(folder / "events.out.tfevents.1.follow.v2", "ab")
    f.write(frame(bytes([9]) + struct.pack("<d", time.time()) + bytes([26, 13]) + b"brain.Event:2"))
    f.flush()
    files.append(f)
print("ready", flush=True)
t0 = time.monotonic()
step, json_at = 0, t0
while time.monotonic() - t0 < seconds:
    step += 1
    for i, f in enumerate(files):
        values = {"step/loss": 1.0 / step, "step/accuracy": 1.0 - 1.0 / step}
        f.write(frame(scalars_event(step, values, time.time(), described[i])))
        f.flush()
    if time.monotonic() - json_at >= 0.5:  # the recorder rewrites run.json at each flush
        json_at = time.monotonic()
        for i in range(runs):
            write_run_json(base / f"run-{i:03d}", {**info, "steps": step})
    time.sleep(max(0.0, t0 + step / rate - time.monotonic()))
"""


def follow(base: Path, runs: int, rate: float, seconds: float) -> tuple[float, float, int]:
    """Follow ``runs`` folders while a writer appends ``rate`` steps/s to each, as the Runs
    panel does (its reading thread, its poll); returns (CPU % of one core of this process,
    the largest lag in s from a record's write to its being in the store, points taken)."""
    from tfstudio.core.run_loading import FolderFeed, FolderLoader
    from tfstudio.core.run_store import RunStore
    from tfstudio.ui.panels.runs import LOADING_POLL_MS, POLL_MS

    folder = base / "follow"
    shutil.rmtree(folder, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-c", FOLLOW_WRITER, str(folder), str(runs), str(rate), str(seconds + 6)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    loader = FolderLoader()
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        feeds = [FolderFeed(folder / f"run-{i:03d}") for i in range(runs)]
        stores = {id(f): RunStore(f.path.name, path=str(f.path)) for f in feeds}
        lags: list[float] = []
        points = 0
        start = time.monotonic()
        measure_from = start + 3.0  # the first reads (and the imports) are not following
        cpu0 = 0.0
        next_submit = 0.0
        while True:
            now = time.monotonic()
            if now >= measure_from and not cpu0:
                cpu0, lags, points = time.process_time(), [], 0
            if now >= measure_from + seconds:
                break
            for feed, batch in loader.take():
                if isinstance(batch, Exception):
                    raise batch
                batch.apply(stores[id(feed)])
                applied = time.time()
                for _key, _kind, _xs, _ys, wall in batch.columns:
                    if len(wall):
                        lags.append(applied - float(wall.min()))
                points += batch.points
            if now >= next_submit and loader.idle():
                next_submit = now + POLL_MS / 1000
                for feed in feeds:
                    loader.submit(feed)
            # the panel's timer: soon while a read is out, else at the next time to follow
            idle = loader.idle()
            time.sleep(max(0.001, next_submit - now) if idle else LOADING_POLL_MS / 1000)
        cpu = time.process_time() - cpu0
        return 100 * cpu / seconds, max(lags, default=float("nan")), points
    finally:
        loader.close()
        writer.kill()
        writer.wait()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Build the cases, measure, print the summary lines."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 runs x 2,000 steps; 200k; 1M")
    ap.add_argument("--dir", help="build (or reuse) the cases here and keep them")
    ap.add_argument("--skip-tensorboard", action="store_true", help="tfstudio's figures only")
    ap.add_argument(
        "--follow", action="store_true", help="only the follow figure (100 runs, 10 steps/s)"
    )
    ns = ap.parse_args()
    if ns.follow:
        base = Path(tempfile.mkdtemp(prefix="tfstudio-follow-"))
        try:
            cpu, lag, points = follow(base, 100, 10.0, 20.0)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        print(f"followed {points:,} points in 20 s; machine load {os.getloadavg()[0]:.1f}")
        print(f"logdir: follow 100 runs cpu % of one core = {cpu:.1f}, lag s = {lag:.2f}")
        return
    if ns.quick:
        runs, steps, big, huge, foreign = 10, 2_000, 200_000, 1_000_000, 20_000
    else:
        runs, steps, big, huge, foreign = 100, 10_000, 2_000_000, 10_000_000, 200_000
    base = Path(ns.dir) if ns.dir else Path(tempfile.mkdtemp(prefix="tfstudio-logdir-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        built = build(base, runs, steps, big, huge, foreign)
        logdir = base / "logdir"
        size = sum(p.stat().st_size for p in logdir.rglob("events.out.tfevents.*"))
        print(f"case 1: {runs} runs x {steps:,} steps x {len(TAGS)} tags, {size / 1e6:.0f} MB")

        from tfstudio.core.runs import export_scalars_csv, list_runs

        t = time.perf_counter()
        listed = list_runs(base / "listing")
        list_s = time.perf_counter() - t
        print(f"list_runs of {len(listed)} run folders: {list_s:.2f} s")

        own_s, own_values, own_cpu = tfstudio_read(logdir)
        print(
            f"tfstudio reader: {own_values:,} values in {own_s:.2f} s (every point; "
            f"{own_cpu:.2f} s of CPU: {own_values / own_cpu:.3g} values per CPU second)"
        )
        tb_s = acc_s = float("nan")
        if not ns.skip_tensorboard:
            acc_s, acc_values = accumulator_read(logdir)
            print(f"tensorboard EventAccumulator: {acc_values:,} values in {acc_s:.1f} s")
            tb_s = rust_server(logdir, runs, steps, limit_s=900)
            print(f"tensorboard --load_fast (Rust): every run's step/loss served in {tb_s:.1f} s")

        big_s, big_values, big_cpu = tfstudio_read(base / "big")
        print(f"{big:,}-step run: {big_values:,} values in {big_s:.2f} s ({big_cpu:.2f} s CPU)")
        first_s, full_s, overview = overview_then_full(base / "big" / "run-2m")
        print(
            f"{big:,}-step run picked: overview of the whole run ({overview:,} points) after "
            f"{first_s:.3f} s, every point after {full_s:.2f} s"
        )
        out = base / "export.csv"
        t = time.perf_counter()
        rows = export_scalars_csv(base / "big" / "run-2m", out)
        print(f"export of the {big:,}-step run: {rows:,} rows in {time.perf_counter() - t:.2f} s")
        out.unlink()

        foreign_s, foreign_values, foreign_cpu = tfstudio_read_folder(base / "foreign")
        print(
            f"foreign (tf.summary, Keras): {foreign_values:,} values in {foreign_s:.2f} s "
            f"({foreign_cpu:.2f} s CPU: {foreign_values / foreign_cpu:.3g} values per CPU second)"
        )

        points, grown, rss = memory_10m(base / "huge" / "run-10m")
        print(
            f"{huge:,}-step run read ({points:,} points) into a RunStore as the window reads a "
            f"picked run: peak RSS growth {grown:.0f} MB over a {rss:.0f} MB process"
        )
        cpu_p, lag_s, _ = follow(base, 100, 10.0, 20.0)
        print(f"logdir: follow 100 runs cpu % of one core = {cpu_p:.1f}, lag s = {lag_s:.2f}")
        own_rate, foreign_rate = own_values / own_s, foreign_values / foreign_s
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        ratio = tb_s / own_s
        print(f"logdir: tfstudio s = {own_s:.2f}, tensorboard s = {tb_s:.1f}, ratio = {ratio:.1f}")
        print(f"logdir: 2M-step run opens in s = {big_s:.2f}")
        print(f"logdir: values/s own = {own_rate:.3g}, foreign = {foreign_rate:.3g}")
        print(f"logdir: 10M-step run in the window MB = {grown:.0f}")
        del built, acc_s
    finally:
        if not ns.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
