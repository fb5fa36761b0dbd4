"""Weight statistics of every trainable variable, computed on the device in one call.

One ``tf.function`` reduces all variables at once to a ``(V, 7)`` stats array and
a ``(V, BINS)`` histogram array; only those (a few kB) leave the device. Small
variables (at most ``SMALL`` values) also send their values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tfstudio.core.events import VariableStats, WeightStats
from tfstudio.engine.probes.model import variable_path

BINS = 30
SMALL = 16


def summarize(x: tf.Tensor, bins: int = BINS) -> tuple[tf.Tensor, tf.Tensor]:
    """``[mean, std, min, max, l2 norm, zero fraction, size]`` and a histogram of a tensor."""
    x = tf.reshape(tf.cast(x, tf.float32), [-1])
    size = tf.cast(tf.size(x), tf.float32)
    safe = tf.maximum(size, 1.0)
    lo = tf.reduce_min(x) if x.shape[0] != 0 else tf.constant(0.0)
    hi = tf.reduce_max(x) if x.shape[0] != 0 else tf.constant(0.0)
    mean = tf.reduce_sum(x) / safe
    std = tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(x - mean)) / safe, 0.0))
    norm = tf.norm(x)
    zeros = tf.reduce_sum(tf.cast(tf.equal(x, 0.0), tf.float32)) / safe
    # Equal min and max: widen the range so every value falls in the middle bin.
    width = tf.maximum(hi - lo, 1e-12)
    # unsorted_segment_sum (not histogram_fixed_width) so XLA-compiled train steps take it too.
    idx = tf.cast(tf.floor((x - lo) / width * bins), tf.int32)
    idx = tf.clip_by_value(idx, 0, bins - 1)
    hist = tf.cast(tf.math.unsorted_segment_sum(tf.ones_like(x), idx, bins), tf.int32)
    stats = tf.stack([mean, std, lo, hi, norm, zeros, size])
    return stats, hist


class WeightProbe:
    """Summarises a model's trainable variables with one device call.

    Args:
        model: the Keras model being trained (its trainable variables at fit start).
    """

    def __init__(self, model: Any, bins: int = BINS) -> None:
        self.variables = list(model.trainable_variables)
        self.paths = [variable_path(v) for v in self.variables]
        self.shapes = [tuple(int(d) for d in v.shape) for v in self.variables]
        self._small = [i for i, s in enumerate(self.shapes) if int(np.prod(s)) <= SMALL]
        self.bins = bins
        variables = self.variables
        small = self._small

        @tf.function(autograph=False)
        def compute() -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
            stats, hists = [], []
            for v in variables:
                s, h = summarize(tf.convert_to_tensor(v), bins)
                stats.append(s)
                hists.append(h)
            values = [tf.reshape(tf.cast(variables[i], tf.float32), [-1]) for i in small]
            flat = tf.concat(values, 0) if values else tf.zeros([0])
            return tf.stack(stats), tf.stack(hists), flat

        self._compute = compute

    def sample(self, fit_index: int, step: int) -> WeightStats | None:
        """Stats of every trainable variable now, or None when the model has none."""
        if not self.variables:
            return None
        stats, hists, flat = (t.numpy() for t in self._compute())
        values: dict[int, tuple[float, ...]] = {}
        offset = 0
        for i in self._small:
            n = int(np.prod(self.shapes[i]))
            values[i] = tuple(float(x) for x in flat[offset : offset + n])
            offset += n
        out = []
        for i, path in enumerate(self.paths):
            s = stats[i]
            out.append(
                VariableStats(
                    path=path,
                    shape=self.shapes[i],
                    mean=float(s[0]),
                    std=float(s[1]),
                    min=float(s[2]),
                    max=float(s[3]),
                    norm=float(s[4]),
                    zero_fraction=float(s[5]),
                    hist=tuple(int(c) for c in hists[i]),
                    values=values.get(i, ()),
                )
            )
        return WeightStats(fit_index, step, tuple(out))
