"""Cost of the system view: the window's 1 Hz sample, and the worker's memory sampler per step.

1. Window side: one sample of a process tree (psutil: the process, its children,
   the machine), one NVML read (a fake module with one GPU, as no GPU is here;
   the real reader on this machine is timed too), and the panel's redraw with
   ten minutes of history. Milliseconds per sample; it happens once a second.
2. Worker side: steps/s of a small MLP ``fit``, monitored as in a run
   (interceptor, StudioCallback, a consumer draining at 60 Hz), with the
   TensorFlow memory sampler off vs on, in one process, interleaved in adjacent
   pairs; R is the median of the pairs' ratios. On this CPU-only machine the real
   sampler says "not available" once and stops, so the "on" side runs a sampler
   that keeps sampling as it would on a GPU: every interval it asks TensorFlow's
   context for a device's memory info (``get_memory_info('CPU:0')``, which goes
   through the same C API and raises for the CPU) and emits a DeviceMemory event.

    QT_QPA_PLATFORM=offscreen python bench/system_cost.py [--rounds 30] [--steps 400]

Ends with one line: ``system: monitored/bare = R`` (sampler on / off, steps/s).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def window_side(n: int) -> None:
    """Milliseconds per window-side sample: psutil, NVML, and the panel's redraw."""
    from PySide6.QtWidgets import QApplication

    from tests.fake_nvml import H100, FakeNvml
    from tfstudio.core.gpu import GpuReader
    from tfstudio.core.system import ProcessSampler
    from tfstudio.ui.panels.system import SystemPanel

    child = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); time.sleep(300)"  # noqa: E501
    tree = subprocess.Popen([sys.executable, "-c", child])
    try:
        time.sleep(0.5)
        sampler = ProcessSampler(tree.pid)
        fake = GpuReader(FakeNvml([dict(H100, procs=[(tree.pid, 1)])]))
        real = GpuReader()

        def per_call_ms(fn) -> float:  # noqa: ANN001
            fn()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            return (time.perf_counter() - t) / n * 1e3

        psutil_ms = per_call_ms(sampler.sample)
        children = sampler.sample().children
        fake_ms = per_call_ms(lambda: fake.read(sampler.pids()))
        real_ms = per_call_ms(lambda: real.read(sampler.pids()))
        app = QApplication.instance() or QApplication([])
        panel = SystemPanel(gpu_reader=fake)
        panel.resize(380, 700)
        panel.show()
        panel.start_run(tree.pid)
        panel.stop()  # its timer: this benchmark drives the samples
        sample, gpus = sampler.sample(), fake.read(sampler.pids())
        for i in range(600):  # ten minutes of history at 1 Hz
            panel.add_sample(float(i), sample, gpus)
        app.processEvents()
        t = time.perf_counter()
        for _ in range(n // 4):
            panel.sample_now()
            app.processEvents()  # the paint
        redraw_ms = (time.perf_counter() - t) / (n // 4) * 1e3
    finally:
        tree.kill()
        tree.wait()
    print(
        f"window sample (per second of a run): psutil {psutil_ms:.2f} ms "
        f"(process + {children} child + machine), NVML {fake_ms:.3f} ms (fake, 1 GPU; "
        f"real reader here, no GPU: {real_ms:.4f} ms), "
        f"whole panel tick with redraw and paint, 600 samples of history: {redraw_ms:.1f} ms"
    )


def worker_side(rounds: int, steps: int, interval: float) -> float:
    """Median steps/s ratio of fits with the memory sampler on vs off."""
    import keras
    import tensorflow as tf
    from bench_model import mlp_and_data

    from tfstudio.core.channel import Channel
    from tfstudio.core.events import DeviceMemory
    from tfstudio.engine.instrument import FitInterceptor
    from tfstudio.engine.monitor import RunMonitor
    from tfstudio.engine.probes.memory import TFMemorySampler

    class KeepSampling(TFMemorySampler):
        """The shipped sampler, made to keep sampling on a CPU as it would on a GPU."""

        def _sample(self) -> DeviceMemory:
            t = time.perf_counter()
            try:
                return self._sample_inner()
            finally:
                spent[0] += time.perf_counter() - t

        def _sample_inner(self) -> DeviceMemory:
            try:
                info = tf.config.experimental.get_memory_info("CPU:0")
            except ValueError:  # the CPU allocator keeps no stats
                info = {"current": 0, "peak": 0}
            event = DeviceMemory(
                self.monitor.now(), ("CPU:0",), (info["current"],), (info["peak"],)
            )
            self.samples += 1
            self.monitor.channel.emit(event)
            return event

    spent = [0.0]  # seconds the sampler thread spent sampling (it holds the GIL meanwhile)
    model, data = mlp_and_data(64)
    epochs, per_epoch = 2, steps // 2
    sampled = [0]
    cpu_us: dict[bool, list[float]] = {False: [], True: []}  # process CPU time per step

    def rate(with_sampler: bool) -> float:
        channel = Channel()
        done = threading.Event()

        def consume() -> None:
            while not done.is_set():
                channel.drain()
                time.sleep(1 / 60)

        consumer = threading.Thread(target=consume, daemon=True)
        consumer.start()
        monitor = RunMonitor(channel)
        sampler = KeepSampling(monitor, interval=interval) if with_sampler else None
        start, cpu0 = time.perf_counter(), time.process_time()
        with FitInterceptor(monitor):
            if sampler is not None:
                with sampler:
                    model.fit(data, epochs=epochs, steps_per_epoch=per_epoch, verbose=0)
                sampled[0] += sampler.samples
            else:
                model.fit(data, epochs=epochs, steps_per_epoch=per_epoch, verbose=0)
        elapsed = time.perf_counter() - start
        cpu_us[with_sampler].append((time.process_time() - cpu0) / (epochs * per_epoch) * 1e6)
        done.set()
        consumer.join()
        return epochs * per_epoch / elapsed

    rate(False)  # warm-up
    rate(True)
    sampled[0] = 0
    spent[0] = 0.0
    cpu_us[False].clear()
    cpu_us[True].clear()
    ratios, off, on = [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            b, m = rate(False), rate(True)
        else:
            m, b = rate(True), rate(False)
        off.append(b)
        on.append(m)
        ratios.append(m / b)
        print(f"  round {r + 1:2d}: off {b:7.1f} steps/s  on {m:7.1f} steps/s  ratio {m / b:.4f}")
    print(
        f"sampler every {interval:g} s: {sampled[0]} samples over {rounds} fits; median off "
        f"{statistics.median(off):.1f} steps/s, on {statistics.median(on):.1f} steps/s "
        f"(TF {tf.__version__}, Keras {keras.__version__}, MLP 32-128-128-10, batch 64, "
        f"{steps} steps per fit)"
    )
    per_sample_us = spent[0] / max(1, sampled[0]) * 1e6
    per_step_us = spent[0] / (rounds * epochs * per_epoch) * 1e6
    print(
        f"sampler's own time: {per_sample_us:.0f} us per sample, {per_step_us:.2f} us per "
        f"training step = {100 * per_step_us / (1e6 / statistics.median(off)):.3f}% of a step"
    )
    cpu_off, cpu_on = statistics.median(cpu_us[False]), statistics.median(cpu_us[True])
    print(
        f"process CPU time per step (median, all threads): off {cpu_off:.0f} us, "
        f"on {cpu_on:.0f} us ({100 * (cpu_on / cpu_off - 1):+.1f}%)"
    )
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="pairs of fits to compare")
    parser.add_argument("--steps", type=int, default=400, help="training steps per fit")
    parser.add_argument("--samples", type=int, default=400, help="window-side samples timed")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    window_side(args.samples)
    stress = worker_side(max(4, args.rounds // 2), args.steps, interval=0.05)
    print(f"stress (sampler every 0.05 s, 20x the shipped rate): on/off = {stress:.4f}")
    shipped = worker_side(args.rounds, args.steps, interval=1.0)
    print(f"system: monitored/bare = {shipped:.4f}")


if __name__ == "__main__":
    main()
