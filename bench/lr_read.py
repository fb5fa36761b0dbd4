"""What reading a Keras schedule's learning rate costs the training thread, old way and new.

A fit's batch hook (and a graph loop's step boundary) sends the rate a few times a
second; for a ``LearningRateSchedule`` it must be read, as ``schedule(iterations)``.
Interleaved single reads (``interleave.Interleaved``), each timed:

- ``eager``: what tfstudio did before: ``hasattr(opt, "learning_rate")`` (the property
  runs the schedule eagerly) and then ``opt.learning_rate`` again;
- ``tfstudio``: ``TrainingController._learning_rate()`` now (the schedule through a
  ``tf.function`` made once; its trace is done before timing);
- ``tfstudio2``: a second controller, the same way: the method's resolution.

Prints the median and mean of each, in microseconds, and the reads per second a fit
does at most (4), as a share of a second.

    python bench/lr_read.py [--rounds 400]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    """Time the reads, interleaved, and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400, help="reads of each kind")
    args = parser.parse_args()

    import keras
    from interleave import Interleaved

    from tfstudio.core.channel import Channel
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.control import TrainingController
    from tfstudio.engine.monitor import RunMonitor

    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.5)
    opt = keras.optimizers.SGD(schedule)
    opt.build([keras.Variable(1.0)])

    def controller() -> TrainingController:
        control = TrainingController(RunMonitor(Channel(), options=RunOptions()))
        control.optimizer = opt
        return control

    ours, again = controller(), controller()

    def eager() -> float:
        assert hasattr(opt, "learning_rate")
        return float(opt.learning_rate.numpy())

    sides = {"eager": eager, "tfstudio": ours._learning_rate, "tfstudio2": again._learning_rate}
    bench = Interleaved(sides)
    for name in sides:
        bench.warm(name, 5)  # the tf.functions' traces
    assert abs(ours._learning_rate()[0] - eager()) <= 1e-6 * eager()  # the same rate
    bench.run(args.rounds)
    for name in sides:
        med, mean = bench.median(name) * 1e6, bench.mean(name) * 1e6
        share = 4 * mean / 1e4  # percent of a second, at 4 reads a second
        print(f"{name:10s} median {med:7.1f} us  mean {mean:7.1f} us  at 4/s: {share:.3f}%")


if __name__ == "__main__":
    main()
