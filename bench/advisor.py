"""Static advisor speed: all rules on a generated 2,000-line training script.

The script repeats a block with what the rules look at (tf.function, a Keras
subclass with call/train_step, tf.data chains with map/shuffle/batch/take/skip/zip,
a Sequential model compiled with a crossentropy loss, save), so every rule has work.

    python bench/advisor.py          # last line: advisor: static check of 2000 lines s = X
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tfstudio.core.advisor import check_text  # noqa: E402

HEADER = (
    "import random\nimport time\n\nimport keras\nimport numpy as np\nimport tensorflow as tf\n\n"
)
BLOCK = """
@tf.function
def step_{i}(x):
    y = tf.reduce_sum(x) * 2.0
    tf.print("step", y)
    return y


class Layer{i}(keras.layers.Layer):
    def __init__(self, units={i}):
        super().__init__()
        self.units = units
        self.count = tf.Variable(0, trainable=False)

    def call(self, x):
        self.count.assign_add(1)
        return tf.where(tf.reduce_sum(x) > 0, x * 2.0, x)


def parse_{i}(v):
    return tf.cast(v, tf.float32) / 255.0, v % 10


ds_{i} = tf.data.Dataset.range(1000).map(parse_{i})
ds_{i} = ds_{i}.shuffle(1000, seed=1, reshuffle_each_iteration=False)
train_{i} = ds_{i}.take(800).batch(32, drop_remainder=True).prefetch(2)
test_{i} = ds_{i}.skip(800).batch(32)
xs_{i} = tf.data.Dataset.range(100).map(lambda v: tf.cast(v, tf.float32))
ys_{i} = tf.data.Dataset.range(100).map(lambda v: v % 2)
pairs_{i} = tf.data.Dataset.zip((xs_{i}, ys_{i})).shuffle(100).batch(10)
model_{i} = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                             keras.layers.Dense(3)])
model_{i}.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model_{i}.save_weights("m_{i}.weights.h5")
"""


def script(lines: int = 2000) -> str:
    """A generated script of exactly ``lines`` lines."""
    out = HEADER
    i = 0
    while out.count("\n") < lines:
        out += BLOCK.format(i=i)
        i += 1
    return "\n".join(out.splitlines()[:lines]) + "\n"


def live_cost(n: int = 200_000) -> tuple[float, float]:
    """Microseconds per StepEnded: on the training thread (a plain ``emit``: the advisor is
    a sink of the pump, in the worker and in-process alike), and the advisor's own work
    per event (on the pump thread, batches of 500 as at 25k steps/s)."""
    from tfstudio.core.channel import Channel
    from tfstudio.core.events import StepEnded
    from tfstudio.engine.advisor_live import LiveAdvisor

    events = [StepEnded(0, i, 0, i, 1, {"loss": 1.0 / i}, {"loss": 1.0}, 0.0) for i in range(1, n)]
    out = []
    channel = Channel()
    t0 = time.perf_counter()
    for e in events:
        channel.emit(e)
    out.append((time.perf_counter() - t0) / len(events) * 1e6)
    advisor = LiveAdvisor()
    t0 = time.perf_counter()
    for i in range(0, len(events), 500):
        advisor.write(events[i : i + 500])
    out.append((time.perf_counter() - t0) / len(events) * 1e6)
    return out[0], out[1]


def main() -> None:
    source = script(2000)
    n = source.count("\n")
    findings = check_text(source, "generated.py")
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        check_text(source, "generated.py")
        times.append(time.perf_counter() - t0)
    print(f"findings on the generated script: {len(findings)} (the script is correct)")
    print(f"runs: {', '.join(f'{t:.3f}' for t in times)} s; min {min(times):.3f}")
    plain, advice = live_cost()
    print(
        f"live advisor: training thread {plain:.2f} us per event (a plain emit: the advisor "
        f"is a pump sink); advice itself {advice:.2f} us per event on the pump thread"
    )
    print(f"advisor: static check of {n} lines s = {statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
