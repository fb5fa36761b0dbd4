"""A training script that stops stepping for a while (used by bench/idle_cost.py).

A short fit (traced, its steps sent), then ``$TFSTUDIO_BENCH_IDLE`` seconds (default 6)
in ``time.sleep``, as a script does between fits, in its own evaluation or while the
user has it paused; then a short fit again. Writes ``{"t0", "t1", "cpu_s"}`` to the
file named by $TFSTUDIO_BENCH_OUT: the quiet stretch (``time.perf_counter``, the same
clock in every process here) and this process's CPU time over it, all its threads:
what tfstudio's helper threads spend while no step comes.
"""

import json
import os
import time

from bench_model import mlp_and_data  # beside this script: its folder is on sys.path

IDLE_S = float(os.environ.get("TFSTUDIO_BENCH_IDLE", "6"))
model, data = mlp_and_data(prefetch=False)
model.fit(data, epochs=1, steps_per_epoch=200, verbose=0)
t0, cpu0 = time.perf_counter(), time.process_time()
time.sleep(IDLE_S)
t1, cpu1 = time.perf_counter(), time.process_time()
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)
print(f"quiet {t1 - t0:.1f} s: {1000 * (cpu1 - cpu0) / (t1 - t0):.2f} ms CPU a second")
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    json.dump({"t0": t0, "t1": t1, "cpu_s": cpu1 - cpu0}, f)
