"""Weight statistics of every trainable variable, computed on the device in one call.

One ``tf.function`` reduces all variables at once to a ``(V, 7)`` stats array and
a ``(V, BINS)`` histogram array; only those (a few kB) leave the device. Small
variables (at most ``SMALL`` values) also send their values.

Tracing that function costs far more than a sample (~0.1-0.2 s on a 2-core CPU),
so under a time budget the inspector first summarises on the host (the values
copied out, the same figures computed with numpy: :func:`summarize_host`) and
traces only once the budget has room for it (``sample(..., traced=False)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tfstudio.core.events import VariableStats, WeightStats
from tfstudio.engine.probes.model import variable_path
from tfstudio.engine.probes.values import host_values

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


def summarize_host(x: np.ndarray, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """:func:`summarize` computed with numpy on the host (float32, the same bins)."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    size = np.float32(x.size)
    safe = max(size, np.float32(1.0))
    lo = x.min() if x.size else np.float32(0.0)
    hi = x.max() if x.size else np.float32(0.0)
    mean = x.sum(dtype=np.float32) / safe
    std = np.sqrt(max(np.square(x - mean).sum(dtype=np.float32) / safe, np.float32(0.0)))
    norm = np.sqrt(np.square(x).sum(dtype=np.float32))
    zeros = np.float32(np.count_nonzero(x == 0.0)) / safe
    width = max(hi - lo, np.float32(1e-12))
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.floor((x - lo) / width * np.float32(bins))
        idx = np.clip(np.nan_to_num(scaled, nan=0.0), 0, bins - 1).astype(np.int64)
    hist = np.bincount(idx, minlength=bins)[:bins].astype(np.int32)
    stats = np.array([mean, std, lo, hi, norm, zeros, size], dtype=np.float32)
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
        self._concrete: Any = None
        self.traced = False  # whether the device function has been traced (used once)

    def _on_host(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the device function returns, computed with numpy from copies of the values."""
        values = [np.asarray(x, dtype=np.float32) for x in host_values(self.variables)]
        pairs = [summarize_host(x, self.bins) for x in values]
        small = [values[i].reshape(-1) for i in self._small]
        flat = np.concatenate(small) if small else np.zeros([0], np.float32)
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]), flat

    def sample(self, fit_index: int, step: int, traced: bool = True) -> WeightStats | None:
        """Stats of every trainable variable now, or None when the model has none.

        Args:
            traced: on the device through the traced function (traced at its first
                use), or on the host with numpy (no trace; copies the values out).
        """
        if not self.variables:
            return None
        if traced:
            if self._concrete is None:  # its graph, called without the function's lookup
                self._concrete = self._compute.get_concrete_function()
            stats, hists, flat = (t.numpy() for t in self._concrete())
            self.traced = True
        else:
            stats, hists, flat = self._on_host()
        values: dict[int, tuple[float, ...]] = {}
        offset = 0
        flat_values = flat.tolist()  # Python numbers at once (not element by element)
        for i in self._small:
            n = int(np.prod(self.shapes[i]))
            values[i] = tuple(flat_values[offset : offset + n])
            offset += n
        out = []
        rows = zip(self.paths, stats.tolist(), hists.tolist(), strict=True)
        for i, (path, s, hist) in enumerate(rows):
            out.append(
                VariableStats(
                    path=path,
                    shape=self.shapes[i],
                    mean=s[0],
                    std=s[1],
                    min=s[2],
                    max=s[3],
                    norm=s[4],
                    zero_fraction=s[5],
                    hist=tuple(hist),
                    values=values.get(i, ()),
                )
            )
        return WeightStats(fit_index, step, tuple(out))
