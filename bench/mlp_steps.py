"""A small MLP training script that reports its own steps/s (used by bench/window_overhead.py).

Writes the measured steps/s to the file named by $TFSTUDIO_BENCH_OUT (stdout
is the window's console when it runs inside tfstudio).
"""

import os
import time

from bench_model import mlp_and_data  # beside this script: its folder is on sys.path

STEPS = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "2000"))
model, data = mlp_and_data(prefetch=False)
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)  # warm-up: tracing
start = time.perf_counter()
model.fit(data, epochs=4, steps_per_epoch=STEPS // 4, verbose=0)
rate = STEPS / (time.perf_counter() - start)
print(f"{rate:.1f} steps/s")
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    f.write(f"{rate}\n")
