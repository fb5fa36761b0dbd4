"""A small MLP training script that reports its own speed (used by bench/window_overhead.py).

Writes ``{"rate": steps/s, "cpu_per_step": s}`` to the file named by
$TFSTUDIO_BENCH_OUT: steps/s around ``fit`` and the CPU time of this (the
training) process per step, all its threads included. Start-up is not counted.
"""

import json
import os
import time

from bench_model import mlp_and_data  # beside this script: its folder is on sys.path

STEPS = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "2000"))
METRICS = tuple(os.environ.get("TFSTUDIO_BENCH_METRICS", "accuracy").split(","))
model, data = mlp_and_data(prefetch=False, metrics=METRICS)
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)  # warm-up: tracing
start, cpu0 = time.perf_counter(), time.process_time()
model.fit(data, epochs=4, steps_per_epoch=STEPS // 4, verbose=0)
rate = STEPS / (time.perf_counter() - start)
cpu_per_step = (time.process_time() - cpu0) / STEPS
print(f"{rate:.1f} steps/s, {cpu_per_step * 1e6:.0f} us CPU per step")
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    json.dump({"rate": rate, "cpu_per_step": cpu_per_step}, f)
