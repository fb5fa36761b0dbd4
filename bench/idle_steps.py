"""A training script that stops stepping for a while (used by bench/idle_cost.py).

A short fit (traced, its steps sent), then ``$TFSTUDIO_BENCH_IDLE`` seconds (default 6)
in ``time.sleep``, as a script does between fits, in its own evaluation or while the
user has it paused; then a short fit again. Writes ``{"t0", "t1", "cpu_s"}`` to the
file named by $TFSTUDIO_BENCH_OUT: the quiet stretch (``time.perf_counter``, the same
clock in every process here) and this process's CPU time over it, all its threads:
what tfstudio's helper threads spend while no step comes.

With ``$TFSTUDIO_BENCH_GPU_FIGURES=1`` the worker's GPU memory sampler sends made-up
figures for one GPU every second, as it does on a GPU machine (this one has none).
"""

import json
import os
import time

from bench_model import mlp_and_data  # beside this script: its folder is on sys.path

IDLE_S = float(os.environ.get("TFSTUDIO_BENCH_IDLE", "6"))
if os.environ.get("TFSTUDIO_BENCH_GPU_FIGURES") == "1":
    from tfstudio.core.events import DeviceMemory
    from tfstudio.engine.probes import memory

    def _figures(sampler: memory.TFMemorySampler) -> DeviceMemory:
        # the sampler's thread, already running: its next sample (within a second) is this
        event = DeviceMemory(sampler.monitor.now(), ("GPU:0",), (1 << 30,), (2 << 30,))
        sampler.samples += 1
        sampler.monitor.channel.emit(event)
        return event

    memory.TFMemorySampler._sample = _figures  # type: ignore[method-assign]
model, data = mlp_and_data(prefetch=False)
model.fit(data, epochs=1, steps_per_epoch=200, verbose=0)
t0, cpu0 = time.perf_counter(), time.process_time()
time.sleep(IDLE_S)
t1, cpu1 = time.perf_counter(), time.process_time()
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)
print(f"quiet {t1 - t0:.1f} s: {1000 * (cpu1 - cpu0) / (t1 - t0):.2f} ms CPU a second")
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    json.dump({"t0": t0, "t1": t1, "cpu_s": cpu1 - cpu0}, f)
