"""One command that checks every GPU path of tfstudio on a machine with NVIDIA GPUs.

Each check writes a tiny script to a temporary folder and runs it in a worker
process exactly as the window does (``ProcessLauncher`` and a ``Channel``),
then judges what came back: the events the worker sent, what the script
printed about itself (lines ``GPUCHECK {json}``), and what the viewer's side
sampled through NVML. The checks:

- ``nvml``: the NVML sampler (core/gpu.py) sees utilisation, memory and the
  run's own process memory while the script keeps the GPU busy;
- ``tf-memory``: TensorFlow's memory figures (``DeviceMemory`` events) show a
  1 GiB tensor the script holds;
- ``device``: the device line (``RunDevices``) names the GPUs TensorFlow uses;
- ``mixed-precision``: a ``mixed_float16`` fit: the optimizer is a
  ``LossScaleOptimizer``, the per-step loss tfstudio reports equals the loss the
  script computes itself, and the gradient norms shown are unscaled;
- ``jit-inspector``: a ``jit_compile=True`` model with the inspector sampling
  every other step: weights, gradients and layer outputs arrive, all finite;
- ``mirrored``: ``MirroredStrategy`` over all GPUs with ``tfstudio.StudioCallback``:
  the run folder it writes reads back (core.runs) with the steps the worker saw;
- ``idle-notice``: a fit starved by a slow input pipeline earns the system
  view's idle-GPU notice (the window's own ``SystemPanel``, offscreen);
- ``worker-sampler``: the worker's own 1 Hz sampler (``SystemSampled``: what the run
  folder records and the window draws) finds the GPU memory its process holds.

    python bench/gpu_check.py [--only NAME] [--cpu]

Prints ``gpu: NAME ok (...)`` or ``gpu: NAME FAILED why`` per check and ends
``gpu: K/N checks hold``. Without an NVIDIA GPU (NVML and ``nvidia-smi`` see
none, or ``CUDA_VISIBLE_DEVICES`` hides them) it prints ``gpu: no NVIDIA GPU:
skipped`` and exits 0. When NVML sees a GPU that TensorFlow cannot use (not
installed, or it lists none), ``nvml`` and ``idle-notice`` run against a
stand-in load (a PyTorch or CuPy process, sampled from outside as the window
samples a worker) and the rest print ``gpu: NAME not run``. ``--cpu`` runs the
checks anyway (to develop them on a CPU machine: the GPU figures then fail, the
rest is exercised). Exit status: 0 when every check held (or skipped), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARK = "GPUCHECK "  # a line the check's script prints about itself: MARK + json
SKIP_LINE = "gpu: no NVIDIA GPU: skipped"
RUN_TIMEOUT_S = 300.0
GPU_SAMPLE_S = 0.25
# float16 keeps ~3 significant digits; XLA may fuse the forward pass differently
# from the script's own eager pass: a loss within 1% (or 1e-3) is the same loss.
LOSS_RTOL = 1e-2
LOSS_ATOL = 1e-3
GRAD_RTOL = 5e-2


# -- does this machine have an NVIDIA GPU? ------------------------------------------
def nvml_gpu_names() -> list[str] | None:
    """Names of the GPUs NVML (or ``nvidia-smi -L``) lists; None when neither can tell."""
    from tfstudio.core.gpu import GpuReader

    reader = GpuReader()
    try:
        if reader.available:
            return [gpu.name for gpu in reader.read()]
    finally:
        reader.close()
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [
        line.split(":", 1)[1].split("(UUID")[0].strip() for line in out.splitlines() if ":" in line
    ]


def tensorflow_gpu_count() -> tuple[int, str]:
    """GPUs TensorFlow lists, asked in a child process (the bench never imports TensorFlow)."""
    code = "import tensorflow as tf; print('GPUS', len(tf.config.list_physical_devices('GPU')))"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return 0, f"TensorFlow could not be asked: {exc}"
    for line in proc.stdout.splitlines():
        if line.startswith("GPUS "):
            return int(line.split()[1]), ""
    last = [line for line in proc.stderr.splitlines() if line.strip()][-1:]
    return (
        0,
        f"TensorFlow failed to import (exit {proc.returncode}{': ' + last[0] if last else ''})",
    )


def why_no_gpu() -> str | None:
    """None when an NVIDIA GPU is there to check; else why not ("" for no NVIDIA GPU at all).

    Cheap checks only: TensorFlow is not asked here (see :func:`why_tensorflow_cannot`).
    """
    names = nvml_gpu_names()
    if not names:
        return ""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        return f"NVML sees {len(names)} GPU(s) but CUDA_VISIBLE_DEVICES hides them all"
    return None


def why_tensorflow_cannot() -> str | None:
    """None when TensorFlow lists a GPU here; else why not (asked in a child process)."""
    count, problem = tensorflow_gpu_count()
    if count == 0:
        return problem or "TensorFlow lists no GPU"
    return None


# -- running a script in a worker, as the window does ------------------------------
@dataclass
class Outcome:
    """Everything one run reported, and what the viewer's side sampled."""

    events: list[Any] = field(default_factory=list)
    console: str = ""
    gpu_samples: list[tuple[float, tuple[Any, ...]]] = field(default_factory=list)
    timed_out: bool = False
    stopped_by_check: bool = False  # the check itself pressed Stop (the idle notice came)

    def of(self, kind: type) -> list[Any]:
        """The events of one kind, in order (steps one by one)."""
        from tfstudio.core.events import step_rows

        return [e for e in step_rows(self.events) if isinstance(e, kind)]

    def reports(self) -> list[dict[str, Any]]:
        """What the script printed about itself (``GPUCHECK {json}`` lines)."""
        out = []
        for line in self.console.splitlines():
            if line.startswith(MARK):
                out.append(json.loads(line[len(MARK) :]))
        return out

    def report(self, key: str) -> Any:
        """The last value the script reported under ``key`` (None if never)."""
        found = None
        for item in self.reports():
            if key in item:
                found = item[key]
        return found

    def ended(self) -> Any:
        """The run's ``RunEnded``, or None."""
        from tfstudio.core.events import RunEnded

        ends = self.of(RunEnded)
        return ends[-1] if ends else None

    def failure(self) -> str | None:
        """Why the run itself failed (timeout, script error, monitoring error), else None."""
        from tfstudio.core.events import MonitorError

        if self.timed_out:
            return "the run did not end in time"
        end = self.ended()
        if end is None:
            return "the run never ended"
        errors = self.of(MonitorError)
        if end.status != "finished" and not (end.status == "stopped" and self.stopped_by_check):
            return f"the run {end.status}: {end.message or end.status}"
        if errors:
            return f"tfstudio reported a monitoring error in {errors[0].where}: {errors[0].message}"
        return None


Watcher = Callable[[list[Any], Any, Outcome], None]


def run_in_worker(
    source: str,
    folder: Path,
    name: str,
    options: Any = None,
    watch: Watcher | None = None,
    timeout: float = RUN_TIMEOUT_S,
) -> Outcome:
    """Run ``source`` as a script in a worker process; sample the GPUs meanwhile.

    Args:
        source: the script's text.
        folder: where the script is written (it also runs there).
        name: the script's file name.
        options: ``RunOptions`` for the run (recording off unless given).
        watch: called with each batch of events, the launcher and the outcome so far.
        timeout: seconds before the run is stopped and the check fails.
    """
    from tfstudio.core.channel import Channel
    from tfstudio.core.events import ConsoleOutput, RunEnded
    from tfstudio.core.gpu import GpuReader
    from tfstudio.core.options import RunOptions
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.core.system import ProcessSampler

    script = folder / name
    script.write_text(source)
    options = options or RunOptions(record=False)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    outcome = Outcome()
    reader = GpuReader()
    done = threading.Event()

    def sample_gpus(pid: int) -> None:
        sampler = ProcessSampler(pid)
        t0 = time.monotonic()
        while not done.is_set():
            sampler.sample()  # finds the worker's children, as the window's sampler does
            gpus = reader.read(sampler.pids())
            outcome.gpu_samples.append((time.monotonic() - t0, gpus))
            done.wait(GPU_SAMPLE_S)

    console: list[str] = []
    sampler_thread: threading.Thread | None = None
    try:
        launcher.start(str(script), (), options)
        deadline = time.monotonic() + timeout
        ended = False
        while not ended:
            batch = channel.drain()
            if sampler_thread is None and launcher.pid():
                sampler_thread = threading.Thread(
                    target=sample_gpus, args=(launcher.pid(),), daemon=True
                )
                sampler_thread.start()
            for event in batch:
                if isinstance(event, ConsoleOutput):
                    console.append(event.text)
                ended = ended or isinstance(event, RunEnded)
            outcome.events.extend(batch)
            outcome.console = "".join(console)
            if watch is not None:
                watch(batch, launcher, outcome)
            if time.monotonic() > deadline:
                outcome.timed_out = True
                launcher.stop()
                launcher.wait(30)
                break
            time.sleep(0.02)
        launcher.wait(10)
    finally:
        done.set()
        if sampler_thread is not None:
            sampler_thread.join(5)
        launcher.shutdown()
        reader.close()
    outcome.events.extend(channel.drain())
    return outcome


def _finite(*values: float) -> bool:
    return all(math.isfinite(float(v)) for v in values)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


# -- the checks' scripts --------------------------------------------------------------
def script_nvml() -> str:
    """Keeps the GPU busy with matmuls for a few seconds, holding a little memory."""
    return textwrap.dedent(
        """\
        import json, time
        import tensorflow as tf

        x = tf.random.normal([4096, 4096]) / 64.0
        t0 = time.time()
        count = 0
        while time.time() - t0 < 5.0:
            y = x
            for _ in range(10):
                y = tf.linalg.matmul(y, x)
            float(y[0, 0])  # wait for the GPU, so the work does not queue up unbounded
            count += 10
        print("GPUCHECK " + json.dumps({"matmuls": count, "device": y.device}), flush=True)
        """
    )


def script_tf_memory() -> str:
    """Holds a 1 GiB tensor on the GPU for a few seconds."""
    return textwrap.dedent(
        """\
        import json, time
        import tensorflow as tf

        held = tf.ones([256, 1024, 1024], tf.float32)  # 1 GiB
        info = {}
        if tf.config.list_logical_devices("GPU"):
            info = tf.config.experimental.get_memory_info("GPU:0")
        print("GPUCHECK " + json.dumps({"bytes": 256 * 1024 * 1024 * 4, "device": held.device,
              "current": info.get("current"), "peak": info.get("peak")}), flush=True)
        time.sleep(2.5)  # the worker samples TensorFlow's figures once a second
        del held
        """
    )


def script_device() -> str:
    """Runs one op and reports the GPUs TensorFlow sees, with their names."""
    return textwrap.dedent(
        """\
        import json
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        names = [tf.config.experimental.get_device_details(g).get("device_name", g.name)
                 for g in gpus]
        value = tf.reduce_sum(tf.ones([8, 8]))
        print("GPUCHECK " + json.dumps({"gpus": names, "device": value.device}), flush=True)
        """
    )


def script_mixed_precision() -> str:
    """A mixed_float16 fit that prints each step's own loss and gradient norm."""
    return textwrap.dedent(
        """\
        import json
        import keras
        import numpy as np
        import tensorflow as tf

        keras.mixed_precision.set_global_policy("mixed_float16")
        rng = np.random.default_rng(0)
        x = rng.normal(size=(192, 16)).astype("float32")
        y = (x @ rng.normal(size=(16, 1)) / 4.0).astype("float32")
        BATCH = 32
        model = keras.Sequential([
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1, dtype="float32"),  # outputs in float32, as the guide says
        ])
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")


        class OwnLoss(keras.callbacks.Callback):
            # The loss and gradients of the coming step, computed here on the same weights.
            step = 0

            def on_train_batch_begin(self, batch, logs=None):
                xb = x[batch * BATCH:(batch + 1) * BATCH]
                yb = y[batch * BATCH:(batch + 1) * BATCH]
                with tf.GradientTape() as tape:
                    pred = self.model(xb, training=True)
                    loss = tf.reduce_mean(tf.square(yb - tf.cast(pred, tf.float32)))
                grads = tape.gradient(loss, self.model.trainable_variables)
                norm = tf.linalg.global_norm([tf.cast(g, tf.float32) for g in grads])
                OwnLoss.step += 1
                print("GPUCHECK " + json.dumps({"step": OwnLoss.step, "loss": float(loss),
                      "grad_norm": float(norm)}), flush=True)


        model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0,
                  callbacks=[OwnLoss()])
        opt = model.optimizer
        inner = getattr(opt, "inner_optimizer", opt)
        scale = getattr(opt, "dynamic_scale", None)
        print("GPUCHECK " + json.dumps({
            "optimizer": type(opt).__name__,
            "learning_rate": float(inner.learning_rate),
            "loss_scale": None if scale is None else float(scale),
            "compute_dtype": model.layers[0].compute_dtype,
            "variable_dtype": model.layers[0].variable_dtype,
        }), flush=True)
        """
    )


def script_jit_inspector() -> str:
    """A small conv model compiled with jit_compile=True; the inspector samples it."""
    return textwrap.dedent(
        """\
        import json
        import keras
        import numpy as np

        rng = np.random.default_rng(0)
        x = rng.normal(size=(128, 8, 8, 1)).astype("float32")
        y = rng.integers(0, 4, size=(128,))
        model = keras.Sequential([
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(4),
        ])
        model.compile(optimizer="adam",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=True)
        history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        print("GPUCHECK " + json.dumps({"jit_compile": bool(model.jit_compile),
              "loss": history.history["loss"][-1]}), flush=True)
        """
    )


def script_mirrored(logdir: str) -> str:
    """MirroredStrategy over every GPU, recorded by tfstudio.StudioCallback into ``logdir``."""
    return textwrap.dedent(
        f"""\
        import json
        import keras
        import numpy as np
        import tensorflow as tf
        from tfstudio import StudioCallback

        strategy = tf.distribute.MirroredStrategy()
        replicas = strategy.num_replicas_in_sync
        rng = np.random.default_rng(0)
        x = rng.normal(size=(256, 16)).astype("float32")
        y = (x @ rng.normal(size=(16, 1))).astype("float32")
        with strategy.scope():
            model = keras.Sequential([
                keras.Input((16,)),
                keras.layers.Dense(32, activation="relu"),
                keras.layers.Dense(1),
            ])
            model.compile(optimizer="sgd", loss="mse")
        recorder = StudioCallback({logdir!r})
        model.fit(x, y, batch_size=16 * replicas, epochs=2, verbose=0, callbacks=[recorder])
        print("GPUCHECK " + json.dumps({{
            "replicas": replicas,
            "gpus": len(tf.config.list_logical_devices("GPU")),
            "run_dir": str(recorder.run_dir),
        }}), flush=True)
        """
    )


def script_idle_notice() -> str:
    """A tiny model fed by a generator that sleeps: the GPU waits for input most of the time."""
    return textwrap.dedent(
        """\
        import time
        import keras
        import numpy as np
        import tensorflow as tf

        def slow_batches():
            rng = np.random.default_rng(0)
            while True:
                time.sleep(0.05)  # a slow reader: the GPU waits for every batch
                xb = rng.normal(size=(32, 16)).astype("float32")
                yield xb, xb.sum(axis=1, keepdims=True)

        data = tf.data.Dataset.from_generator(
            slow_batches,
            output_signature=(tf.TensorSpec((32, 16), tf.float32),
                              tf.TensorSpec((32, 1), tf.float32)),
        )
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(data, steps_per_epoch=1200, epochs=1, verbose=0)  # ~60 s; stopped at the notice
        """
    )


SCRIPTS: dict[str, Callable[..., str]] = {
    "nvml": script_nvml,
    "tf-memory": script_tf_memory,
    "device": script_device,
    "mixed-precision": script_mixed_precision,
    "jit-inspector": script_jit_inspector,
    "mirrored": lambda logdir="tfstudio-runs": script_mirrored(logdir),
    "idle-notice": script_idle_notice,
    "worker-sampler": script_tf_memory,  # (the 1 GiB tensor, seen by the worker's sampler)
}


# -- without TensorFlow on the GPU: the window's side, against a stand-in load ---------
# On a machine whose GPU TensorFlow cannot use (no TensorFlow, or one built for another
# CUDA), what the window does without TensorFlow can still be checked against the
# real device: NVML's figures, the run's own memory found by pid, the system view's busy
# figure and idle notice, the headless peak line. The load is a process that uses the
# GPU as a run would, through whichever of these libraries is there.
STAND_IN_LIBRARIES = ("torch", "cupy")
STAND_IN_READY_S = 180.0  # importing the library and making a CUDA context
STAND_IN_BUSY_S = 6.0  # the busy load's length, once its first kernel ran


def script_stand_in() -> str:
    """A process that loads the GPU like a run: ``busy SECONDS`` or ``starved SECONDS``.

    ``busy`` multiplies 4096x4096 matrices back to back holding 1 GiB; ``starved``
    runs one 64x64 product every 50 ms, as a fit waiting on a slow input pipeline
    does. It prints ``GPUCHECK {"ready": ...}`` once its first kernel ran, and a
    summary at the end; without a usable library it prints why and exits 3.
    """
    return textwrap.dedent(
        """\
        import json, sys, time

        mode, seconds = sys.argv[1], float(sys.argv[2])


        def with_torch():
            import torch
            if not torch.cuda.is_available():
                raise RuntimeError("torch sees no CUDA device")
            dev = torch.device("cuda")
            return ("torch " + torch.__version__,
                    lambda n: torch.randn(n, n, device=dev) / n ** 0.5,
                    lambda nbytes: torch.ones(nbytes // 4, dtype=torch.float32, device=dev),
                    torch.cuda.synchronize)


        def with_cupy():
            import cupy
            cupy.cuda.runtime.getDeviceCount()
            return ("cupy " + cupy.__version__,
                    lambda n: cupy.random.standard_normal((n, n), dtype=cupy.float32) / n ** 0.5,
                    lambda nbytes: cupy.ones(nbytes // 4, dtype=cupy.float32),
                    cupy.cuda.Device().synchronize)


        errors = []
        for name in LIBRARIES:
            try:
                library, matrix, hold, sync = globals()["with_" + name]()
                break
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
        else:
            print("GPUCHECK " + json.dumps({"error": "; ".join(errors)}), flush=True)
            sys.exit(3)
        busy = mode == "busy"
        x = matrix(4096 if busy else 64)
        held = hold(2 ** 30) if busy else None
        y = x @ x
        sync()
        print("GPUCHECK " + json.dumps({"ready": library}), flush=True)
        t0, count = time.time(), 0
        while time.time() - t0 < seconds:
            y = x
            for _ in range(10 if busy else 1):
                y = y @ x
            sync()  # wait for the GPU, so the work does not queue up unbounded
            count += 10 if busy else 1
            if not busy:
                time.sleep(0.05)
        print("GPUCHECK " + json.dumps({"library": library, "products": count,
              "held": 2 ** 30 if busy else 0}), flush=True)
        """
    ).replace("LIBRARIES", repr(STAND_IN_LIBRARIES))  # each has a with_NAME above


OnSample = Callable[[float, tuple[Any, ...]], bool]


def run_stand_in(
    mode: str,
    seconds: float,
    folder: Path,
    every: float,
    on_sample: OnSample | None = None,
    gpu_reader: Any = None,
) -> Outcome:
    """Run the stand-in load and sample it from outside, as the window samples a worker.

    Args:
        mode: ``"busy"`` or ``"starved"``.
        seconds: how long the load runs once its first kernel ran.
        folder: where its script is written.
        every: seconds between samples (the window's system view takes one a second).
        on_sample: called with each sample's time (from the load's start) and figures;
            returning True ends the load early.
        gpu_reader: NVML access (a ``GpuReader`` over a fake NVML in tests); a real
            one when None. It is closed at the end either way.
    """
    from tfstudio.core.gpu import GpuReader
    from tfstudio.core.system import ProcessSampler

    script = folder / "stand_in_load.py"
    script.write_text(script_stand_in())
    proc = subprocess.Popen(
        [sys.executable, str(script), mode, str(seconds)],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(MARK) and "ready" in line:
                ready.set()
        ready.set()  # ended without becoming ready

    reader_thread = threading.Thread(target=read, daemon=True)
    reader_thread.start()
    outcome = Outcome()
    reader = gpu_reader if gpu_reader is not None else GpuReader()
    try:
        if not ready.wait(STAND_IN_READY_S):
            outcome.timed_out = True
        sampler = ProcessSampler(proc.pid)  # the load itself, as the window's is the worker
        t0 = time.monotonic()
        while proc.poll() is None and not outcome.timed_out:
            sampler.sample()
            gpus = reader.read(sampler.pids())
            t = time.monotonic() - t0
            outcome.gpu_samples.append((t, gpus))
            if on_sample is not None and on_sample(t, gpus):
                outcome.stopped_by_check = True
                break
            if t > seconds + 60:
                outcome.timed_out = True
                break
            time.sleep(every)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        reader_thread.join(5)
        reader.close()
    outcome.console = "".join(lines)
    return outcome


def _raise_on_stand_in_failure(out: Outcome) -> None:
    error = out.report("error")
    if error:
        raise CheckFailed(f"no library to load the GPU with ({error})")
    if out.timed_out:
        raise CheckFailed("the stand-in load did not start or end in time")
    if out.report("ready") is None:
        tail = [line for line in out.console.splitlines() if line.strip()][-3:]
        raise CheckFailed("the stand-in load failed" + (f" [{' | '.join(tail)}]" if tail else ""))


def check_nvml_stand_in(folder: Path, gpu_reader: Any = None) -> str:
    """NVML sees a stand-in load busy and holding memory (TensorFlow cannot use the GPU)."""
    out = run_stand_in("busy", STAND_IN_BUSY_S, folder, GPU_SAMPLE_S, gpu_reader=gpu_reader)
    _raise_on_stand_in_failure(out)
    return f"{judge_busy_samples(out.gpu_samples)}; load: {out.report('ready')}"


def check_idle_notice_stand_in(folder: Path, gpu_reader: Any = None) -> str:
    """The system view's idle rule gives its notice on a starved stand-in load."""
    from tfstudio.core.gpu import IdleGpuWatch, run_utilization
    from tfstudio.core.system import SAMPLE_INTERVAL_S

    watch = IdleGpuWatch()
    fired: list[float] = []

    def on_sample(t: float, gpus: tuple[Any, ...]) -> bool:
        # Every sample counts as training: a run's steps would be arriving all along.
        if watch.feed(t, run_utilization(gpus), training=True):
            fired.append(t)
        return bool(fired)

    out = run_stand_in(
        "starved", watch.sustain_s + 20, folder, SAMPLE_INTERVAL_S, on_sample, gpu_reader
    )
    _raise_on_stand_in_failure(out)
    samples = [gpus for _, gpus in out.gpu_samples if gpus]
    if not samples:
        raise CheckFailed("NVML gave no GPU figures while the load lasted")
    busiest = max(run_utilization(gpus) or 0 for gpus in samples)
    if not fired:
        if all(run_utilization(gpus) is None for gpus in samples):
            raise CheckFailed("NVML gives no utilisation here (MIG devices): no idle notice")
        raise CheckFailed(f"no idle notice over {len(samples)} samples (busiest {busiest:.0f}%)")
    own = any(g.process_memory for gpus in samples for g in gpus)
    return (
        f"notice after {fired[0]:.0f} s of a starved load (busiest {busiest:.0f}%, "
        f"{'on the GPU it holds memory on' if own else 'over all GPUs: its memory not found'}); "
        f"the rule without the Qt panel; load: {out.report('ready')}"
    )


# -- the checks ---------------------------------------------------------------------
class CheckFailed(Exception):
    """A check did not hold; the message says why."""


def check_nvml(folder: Path) -> str:
    """NVML sees the worker busy and holding memory."""
    out = run_in_worker(script_nvml(), folder, "nvml_busy.py")
    _raise_on_failure(out)
    return judge_busy_samples(out.gpu_samples)


def judge_busy_samples(timed: list[tuple[float, tuple[Any, ...]]]) -> str:
    """What NVML showed of a run that kept its GPU busy: utilisation, memory, its own memory.

    Judged as the window uses them: the system view's busy figure (the GPUs the run
    holds memory on) must read busy through most of the load, and the headless
    runner's peak-memory line must name the run's GPU. Raises :class:`CheckFailed`
    when a figure the window shows was missing or wrong.
    """
    from tfstudio.core.gpu import IdleGpuWatch, run_utilization
    from tfstudio.core.system import PeakTracker, format_bytes

    samples = [gpus for _, gpus in timed if gpus]
    if not samples:
        raise CheckFailed("NVML gave no GPU figures while the run lasted")
    used = max(g.memory_used for gpus in samples for g in gpus)
    total = max(g.memory_total for gpus in samples for g in gpus)
    own = [g.process_memory for gpus in samples for g in gpus if g.process_memory]
    if not (0 < used <= total):
        raise CheckFailed(f"memory used {used} of total {total} bytes")
    if not own:
        raise CheckFailed(
            "the run's own process memory was never found (NVML lists processes by pid; "
            "in a container without the host's pid namespace the pids do not match)"
        )
    # The first samples can fall before the first kernel: judge the busy figure's median.
    figures = sorted(u for u in (run_utilization(gpus) for gpus in samples) if u is not None)
    if figures:
        busiest, median = figures[-1], figures[len(figures) // 2]
        threshold = IdleGpuWatch().threshold
        if busiest <= 0:
            raise CheckFailed(f"utilisation stayed at 0% over {len(samples)} samples of matmuls")
        if median < threshold:
            raise CheckFailed(
                f"the system view's busy figure had a median of {median:.0f}% under "
                f"back-to-back matmuls (its idle notice counts under {threshold:.0f}% as idle)"
            )
        busy = f"busiest {busiest:.0f}% (median {median:.0f}%)"
    else:  # MIG devices: NVML gives no utilisation, and the view says so
        busy = "utilisation not given (MIG)"
    peaks = PeakTracker()
    for gpus in samples:
        peaks.add_gpus(gpus)
    summary = peaks.summary().replace("host --, ", "")  # the bench samples no host figures
    if "GPU:" not in summary:
        raise CheckFailed(f"the headless summary names no GPU: {summary!r}")
    last = samples[-1][0]
    sensors = ", ".join(
        text
        for text, value in (
            (f"{last.temperature:.0f} C", last.temperature),
            (f"{last.power:.0f} of {last.power_limit or 0:.0f} W", last.power),
        )
        if value is not None
    )
    mig = [g.name for g in samples[-1] if g.mig is not None]
    mode = f"MIG: {len(mig)} device(s)" if mig else "no MIG"
    return (
        f"{last.name}: {busy}, {mode}, used "
        f"{format_bytes(used)} of {format_bytes(total)}, run's process "
        f"{format_bytes(max(own))}, {sensors or 'no sensors'}, {len(samples)} samples; "
        f"headless '{summary}'"
    )


def check_tf_memory(folder: Path) -> str:
    """DeviceMemory events carry TensorFlow's figures, the held tensor included."""
    from tfstudio.core.events import DeviceMemory

    out = run_in_worker(script_tf_memory(), folder, "tf_memory.py")
    _raise_on_failure(out)
    events = out.of(DeviceMemory)
    if not events:
        raise CheckFailed("no DeviceMemory event arrived")
    figures = [e for e in events if e.available]
    if not figures:
        raise CheckFailed(f"DeviceMemory said: {events[0].note or 'no devices'}")
    held = out.report("bytes") or 0
    if "GPU:0" not in figures[0].devices:
        raise CheckFailed(f"devices {figures[0].devices} lack GPU:0")
    i = figures[0].devices.index("GPU:0")
    peak = max(e.peak[i] for e in figures)
    current = max(e.current[i] for e in figures)
    if peak < held or current < held:
        raise CheckFailed(
            f"current {current} / peak {peak} bytes, below the {held} bytes the script held"
        )
    return f"{len(figures)} events, peak {peak / 2**30:.2f} GiB on GPU:0 (1 GiB held)"


def _worker_gpu_memory(events: list[Any]) -> list[float]:
    """The GPU memory of a run's process tree in its worker's own samples (SystemSampled)."""
    from tfstudio.core.system_sampling import GPU_PROCESS_MEMORY

    return [
        v
        for e in events
        for k, v in e.values.items()
        if k.endswith(GPU_PROCESS_MEMORY) and "gpu" in k and v
    ]


def check_worker_sampler(folder: Path) -> str:
    """The worker's own 1 Hz sampler (what the run folder records and the window draws)
    finds the GPU memory its process holds: at least the 1 GiB tensor of the script."""
    from tfstudio.core.events import SystemSampled

    out = run_in_worker(script_tf_memory(), folder, "worker_sampler.py")
    _raise_on_failure(out)
    samples = out.of(SystemSampled)
    own = _worker_gpu_memory(samples)
    held = out.report("bytes") or 0
    if not own or max(own) < held:
        raise CheckFailed(f"{len(samples)} worker samples; its GPU memory {own[-3:]} < {held}")
    return f"{len(samples)} worker samples, its GPU memory up to {max(own) / 2**30:.2f} GiB"


def check_worker_sampler_stand_in(folder: Path, gpu_reader: Any = None) -> str:
    """The worker's own sampler (``core.system.SystemSampling``: its process and children),
    here in this process while its child, the stand-in load, holds GPU memory."""
    from tfstudio.core.system import SystemSampling

    events: list[Any] = []
    sampling = SystemSampling(events.append, time.monotonic, lambda: 0, on_error=print)

    def on_sample(t: float, gpus: tuple[Any, ...]) -> bool:
        sampling.sample()  # as the worker's own thread does, once a second
        return False

    out = run_stand_in("busy", STAND_IN_BUSY_S, folder, GPU_SAMPLE_S, on_sample)
    _raise_on_stand_in_failure(out)
    own = _worker_gpu_memory(events)
    if not own:
        raise CheckFailed(f"no GPU memory of its process tree in {len(events)} samples")
    return f"{len(events)} samples, its child's GPU memory up to {max(own) / 2**30:.2f} GiB"


def check_device(folder: Path) -> str:
    """The device line names the GPUs TensorFlow uses."""
    from tfstudio.core.events import RunDevices

    out = run_in_worker(script_device(), folder, "device.py")
    _raise_on_failure(out)
    lines = out.of(RunDevices)
    if not lines:
        raise CheckFailed("no RunDevices event arrived")
    devices = lines[0].devices
    expected = out.report("gpus") or []
    if not expected:
        raise CheckFailed(f"the script's TensorFlow lists no GPU (device line: {devices})")
    gpu_lines = [d for d in devices if d.startswith("GPU ")]
    if len(gpu_lines) != len(expected):
        raise CheckFailed(f"device line {devices} for TensorFlow's GPUs {expected}")
    for index, (line, name) in enumerate(zip(gpu_lines, expected, strict=True)):
        if line != f"GPU {index}: {name}":
            raise CheckFailed(f"device line {line!r}, TensorFlow calls it {name!r}")
    return lines[0].describe()


def check_mixed_precision(folder: Path) -> str:
    """Loss scaling in place; per-step loss and gradient norms match the script's own."""
    from tfstudio.core.events import GradientStats, LearningRate, StepEnded
    from tfstudio.core.options import RunOptions

    options = RunOptions(record=False, sample_every=2)
    out = run_in_worker(script_mixed_precision(), folder, "mixed_precision.py", options)
    _raise_on_failure(out)
    if out.report("optimizer") != "LossScaleOptimizer":
        raise CheckFailed(f"the optimizer is {out.report('optimizer')}, not a LossScaleOptimizer")
    if out.report("compute_dtype") != "float16":
        raise CheckFailed(f"layers compute in {out.report('compute_dtype')}, not float16")
    own = {r["step"]: r for r in out.reports() if "step" in r}
    steps = {e.global_step: e for e in out.of(StepEnded)}
    if not own or set(own) != set(steps):
        raise CheckFailed(f"steps reported {sorted(steps)}, the script ran {sorted(own)}")
    for step, mine in own.items():
        shown = steps[step].values.get("loss")
        if shown is None or not _close(shown, mine["loss"], LOSS_RTOL, LOSS_ATOL):
            raise CheckFailed(
                f"step {step}: per-step loss shown {shown}, the script computed {mine['loss']}"
            )
    rates = out.of(LearningRate)
    if not rates or not _close(rates[-1].value, out.report("learning_rate"), 1e-6, 0):
        shown = rates[-1].value if rates else None
        raise CheckFailed(
            f"learning rate shown {shown}, the inner optimizer's is {out.report('learning_rate')}"
        )
    grads = out.of(GradientStats)
    if not grads:
        raise CheckFailed("the inspector sent no gradients")
    for g in grads:
        mine = own.get(g.step)
        if mine is None:
            continue
        if not _close(g.global_norm, mine["grad_norm"], GRAD_RTOL, 1e-6):
            ratio = g.global_norm / mine["grad_norm"] if mine["grad_norm"] else float("inf")
            raise CheckFailed(
                f"step {g.step}: gradient norm shown {g.global_norm:.4g}, the script's "
                f"{mine['grad_norm']:.4g} ({ratio:.4g}x; loss scale {out.report('loss_scale')})"
            )
    return (
        f"{len(own)} steps match within {LOSS_RTOL:.0%}, {len(grads)} gradient samples, "
        f"loss scale {out.report('loss_scale'):g}"
    )


def check_jit_inspector(folder: Path) -> str:
    """With jit_compile=True the inspector's weights, gradients and layer outputs are finite."""
    from tfstudio.core.events import GradientStats, LayerOutputs, StepEnded, WeightStats
    from tfstudio.core.options import RunOptions

    options = RunOptions(record=False, sample_every=2)
    out = run_in_worker(script_jit_inspector(), folder, "jit_inspector.py", options)
    _raise_on_failure(out)
    if out.report("jit_compile") is not True:
        raise CheckFailed(f"the model's jit_compile is {out.report('jit_compile')}")
    weights, layers = out.of(WeightStats), out.of(LayerOutputs)
    grads = out.of(GradientStats)
    if not out.of(StepEnded):
        raise CheckFailed("no step was reported")
    missing = [n for n, got in (("weights", weights), ("layer outputs", layers)) if not got]
    if missing:
        raise CheckFailed("the inspector sent no " + " and no ".join(missing))
    for event in weights:
        for v in event.variables:
            if not _finite(v.mean, v.std, v.min, v.max, v.norm):
                raise CheckFailed(f"step {event.step}: {v.path} has non-finite statistics")
    for event in layers:
        for layer in event.layers:
            if not _finite(layer.mean, layer.std, layer.min, layer.max):
                raise CheckFailed(f"step {event.step}: layer {layer.name} output is non-finite")
    for event in grads:
        if not _finite(event.global_norm):
            raise CheckFailed(f"step {event.step}: gradient norm {event.global_norm}")
    return f"{len(weights)} weight, {len(grads)} gradient, {len(layers)} layer-output samples"


def check_mirrored(folder: Path) -> str:
    """MirroredStrategy over all GPUs; StudioCallback's run folder reads back."""
    from tfstudio.core.events import StepEnded
    from tfstudio.core.runs import STEP_PREFIX, list_runs, read_scalars

    logdir = folder / "mirrored-runs"
    out = run_in_worker(script_mirrored(str(logdir)), folder, "mirrored.py")
    _raise_on_failure(out)
    steps = out.of(StepEnded)
    if not steps:
        raise CheckFailed("the worker reported no step of the distributed fit")
    runs = list_runs(logdir)
    if len(runs) != 1:
        raise CheckFailed(f"{len(runs)} run folders in {logdir}, expected 1")
    run = runs[0]
    if run.status != "finished" or run.steps != steps[-1].global_step:
        raise CheckFailed(
            f"run folder says {run.status}, {run.steps} steps; the worker saw "
            f"{steps[-1].global_step}"
        )
    loss = read_scalars(run.path).get(f"{STEP_PREFIX}loss")
    if loss is None or len(loss.values) != len(steps):
        count = None if loss is None else len(loss.values)
        raise CheckFailed(f"{count} recorded loss values for {len(steps)} steps")
    shown = [e.values.get("loss") for e in steps]
    for step, recorded, live in zip(loss.steps, loss.values, shown, strict=True):
        if live is None or not _close(recorded, live, 1e-5, 1e-7):
            raise CheckFailed(f"step {step}: recorded loss {recorded}, the worker sent {live}")
    replicas, gpus = out.report("replicas"), out.report("gpus")
    if not gpus or replicas != gpus:  # last: on a CPU (--cpu) everything above is still checked
        raise CheckFailed(f"{replicas} replica(s) over {gpus} GPU(s)")
    return f"{replicas} replica(s), {len(steps)} steps recorded and read back"


def check_idle_notice(folder: Path, gpu_reader: Any = None) -> str:
    """The window's system view (offscreen) gives its idle-GPU notice on a starved pipeline.

    Args:
        folder: where the script is written.
        gpu_reader: the panel's NVML access (a ``GpuReader`` over a fake NVML to try
            the check without a GPU); the panel's own when None, as in the window.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.events import StepColumns, StepEnded, step_rows
    from tfstudio.core.gpu import run_utilization
    from tfstudio.ui.panels.system import SystemPanel

    app = QApplication.instance() or QApplication([])
    panel = SystemPanel(gpu_reader=gpu_reader)
    kinds = SystemPanel.EVENTS

    def watch(batch: list[Any], launcher: Any, outcome: Outcome) -> None:
        # The bridge hands the panel steps in runs and the other kinds one by one.
        steps = [e for e in step_rows(batch) if isinstance(e, StepEnded)]
        for event in batch:
            if isinstance(event, kinds) and not isinstance(event, StepEnded | StepColumns):
                panel.ingest_event(event)
        if steps:
            panel.ingest_steps(steps)
        app.processEvents()  # the panel takes the samples its thread took
        if panel.notice_text and not outcome.stopped_by_check:
            outcome.stopped_by_check = True
            launcher.stop()

    try:
        out = run_in_worker(script_idle_notice(), folder, "starved_input.py", watch=watch)
    finally:
        panel.stop()
    _raise_on_failure(out)
    if not panel.gpu_samples or not any(panel.gpu_samples):
        raise CheckFailed("the system view got no GPU figures")
    if not panel.notice_text:
        busiest = max((run_utilization(gpus) or 0 for gpus in panel.gpu_samples), default=0)
        raise CheckFailed(f"no idle-GPU notice (busiest sample {busiest:.0f}%)")
    return f"notice after {panel.sample_times[-1]:.0f} s of the run"


def _raise_on_failure(out: Outcome) -> None:
    problem = out.failure()
    if problem:
        end = out.ended()
        tail = [] if end is not None and end.status == "finished" else out.console.splitlines()
        tail = [line for line in tail if line.strip() and not line.startswith(MARK)][-3:]
        raise CheckFailed(problem + (f" [{' | '.join(tail)}]" if tail else ""))


CHECKS: dict[str, Callable[[Path], str]] = {
    "nvml": check_nvml,
    "tf-memory": check_tf_memory,
    "device": check_device,
    "mixed-precision": check_mixed_precision,
    "jit-inspector": check_jit_inspector,
    "mirrored": check_mirrored,
    "idle-notice": check_idle_notice,
    "worker-sampler": check_worker_sampler,
}


# The checks that still mean something when TensorFlow cannot use the GPU, in that form.
STAND_INS: dict[str, Callable[[Path], str]] = {
    "nvml": check_nvml_stand_in,
    "idle-notice": check_idle_notice_stand_in,
    "worker-sampler": check_worker_sampler_stand_in,
}


def run_checks(names: list[str], without_tensorflow: str | None = None) -> int:
    """Run the named checks, one line each; returns how many held.

    Args:
        names: the checks to run, in order.
        without_tensorflow: why TensorFlow cannot use the GPU here, when it cannot:
            the checks with a stand-in form run in it, the others are not run.
    """
    held = 0
    for name in names:
        check = CHECKS[name]
        if without_tensorflow is not None:
            if name not in STAND_INS:
                print(f"gpu: {name} not run (TensorFlow cannot use the GPU here)", flush=True)
                continue
            check = STAND_INS[name]
        with tempfile.TemporaryDirectory(prefix=f"gpu-check-{name}-") as tmp:
            try:
                detail = check(Path(tmp))
            except CheckFailed as exc:
                print(f"gpu: {name} FAILED {exc}", flush=True)
                continue
            except Exception as exc:  # noqa: BLE001 - one broken check must not hide the rest
                print(f"gpu: {name} FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
        held += 1
        print(f"gpu: {name} ok ({detail})", flush=True)
    print(f"gpu: {held}/{len(names)} checks hold", flush=True)
    return held


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, decide whether there is a GPU, run the checks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CHECKS), help="run this one check")
    parser.add_argument(
        "--cpu", action="store_true", help="run the checks even without a GPU (to develop them)"
    )
    args = parser.parse_args(argv)
    without_tensorflow = None
    if not args.cpu:
        reason = why_no_gpu()
        if reason is not None:
            print(SKIP_LINE + (f" ({reason})" if reason else ""), flush=True)
            return 0
        without_tensorflow = why_tensorflow_cannot()
        if without_tensorflow is not None:
            print(
                f"gpu: TensorFlow cannot use the GPU here ({without_tensorflow}): "
                f"{', '.join(STAND_INS)} run against a stand-in load "
                f"({' or '.join(STAND_IN_LIBRARIES)}), the rest are not run",
                flush=True,
            )
    names = [args.only] if args.only else list(CHECKS)
    held = run_checks(names, without_tensorflow)
    return 0 if held == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
