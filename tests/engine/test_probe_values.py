"""The probes' host paths: raw variable reads and writes (the same values as the public
path, copies, everything put back, for Keras variables, plain ``tf.Variable``s and the kinds
that take the public path), and numpy summaries that match the device's."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.tf


def test_host_values_are_the_variables_values_and_copies():
    import keras
    import tensorflow as tf

    from tfstudio.engine.probes.values import host_values

    kv = keras.Variable(np.arange(12, dtype="float32").reshape(3, 4))
    tv = tf.Variable(np.array([1, 2, 3], dtype="int64"))
    flag = tf.Variable([True, False])
    got = host_values([kv, tv, flag])
    assert [g.dtype for g in got] == [np.float32, np.int64, np.bool_]
    np.testing.assert_array_equal(got[0], kv.numpy())
    np.testing.assert_array_equal(got[1], [1, 2, 3])
    np.testing.assert_array_equal(got[2], [True, False])
    holder: list = []

    @tf.function
    def make():  # a variable made at a tf.function's first trace (as the probes' buffers)
        if not holder:
            holder.append(tf.Variable([1.5, 2.5]))
        return holder[0] + 0.0

    make()
    assert type(holder[0]).__name__ == "UnliftedInitializerVariable"
    np.testing.assert_array_equal(host_values(holder)[0], [1.5, 2.5])
    kv.assign(kv + 100.0)  # later training does not reach what was read
    tv.assign_add([10, 10, 10])
    np.testing.assert_array_equal(got[0], np.arange(12, dtype="float32").reshape(3, 4))
    np.testing.assert_array_equal(got[1], [1, 2, 3])


def test_variables_restored_puts_every_kind_back_bit_for_bit():
    import keras
    import tensorflow as tf

    from tfstudio.engine.probes.values import variables_restored

    rng = np.random.default_rng(0)
    start = rng.normal(size=(5, 7)).astype("float32")
    kv = keras.Variable(start.copy())
    tv = tf.Variable(start.copy())
    counter = tf.Variable(3, dtype=tf.int64)
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        mirrored = tf.Variable(start.copy())
    from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

    assert not isinstance(mirrored, BaseResourceVariable)  # the public path's case
    with variables_restored([kv, tv, counter, mirrored]):
        kv.assign(kv * 3.0 + 1e-7)
        tv.assign(tf.zeros_like(tv))
        counter.assign_add(5)
        mirrored.assign(tf.ones_like(mirrored))
    for v in (kv, tv, mirrored):
        assert v.numpy().tobytes() == start.tobytes()
    assert int(counter.numpy()) == 3


def test_a_restore_happens_when_the_body_raises():
    import tensorflow as tf

    from tfstudio.engine.probes.values import variables_restored

    v = tf.Variable([1.0, 2.0])
    with pytest.raises(RuntimeError), variables_restored([v]):
        v.assign([9.0, 9.0])
        raise RuntimeError("a layer failed")
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_the_units_matrix_is_the_mean_of_each_group_of_columns_nan_or_not():
    """A layer's samples x units picture: groups of columns averaged (the plain-mean path
    when the columns divide evenly and all is finite; NaN-aware otherwise)."""
    from tfstudio.engine.probes.activations import _downsample_columns

    x = np.arange(2 * 128, dtype=np.float32).reshape(2, 128)
    np.testing.assert_allclose(_downsample_columns(x, 64), x.reshape(2, 64, 2).mean(axis=2))
    x[0, 1] = np.nan  # a NaN unit: its group is its neighbour's value, not NaN
    got = _downsample_columns(x, 64)
    assert got[0, 0] == x[0, 0] and not np.isnan(got).any()
    odd = np.ones((1, 130), dtype=np.float32)  # 130 units in groups of 3: the last of 1
    assert (
        _downsample_columns(odd, 64).shape == (1, 44) and (_downsample_columns(odd, 64) == 1).all()
    )


def test_an_eager_loops_gradients_summarised_by_numpy_match_the_device_summary():
    """A sampled eager step's gradients in host memory are summarised by numpy: the same
    norm, min, max and histogram as the device function, sparse gradients included."""
    import tensorflow as tf

    from tfstudio.engine.loop_inspect import _eager_gradients
    from tfstudio.engine.probes.weights import BINS, summarize

    rng = np.random.default_rng(1)
    dense = tf.Variable(rng.normal(size=(6, 9)).astype("float32"), name="kernel")
    table = tf.Variable(rng.normal(size=(5, 3)).astype("float32"), name="table")
    g_dense = tf.constant(rng.normal(size=(6, 9)).astype("float32"))
    g_sparse = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 3]), tf.constant([5, 3]))
    got = _eager_gradients([(dense, g_dense), (table, g_sparse), (dense, None)])
    assert len(got) == 2
    for summary, g in zip(got, (g_dense, tf.convert_to_tensor(g_sparse)), strict=True):
        s, h = summarize(g, BINS)
        s = s.numpy()
        assert np.isclose(summary.norm, s[4], rtol=1e-6)
        assert (summary.min, summary.max) == (float(s[2]), float(s[3]))
        assert summary.hist == tuple(int(c) for c in h.numpy())


@pytest.mark.parametrize("chunk", [1 << 22, 40])
def test_gradient_summaries_over_concatenated_chunks_are_each_tensors_own(monkeypatch, chunk):
    """The gradients' in-step summaries (several tensors at once, in chunks) give each
    tensor the norm, min, max and histogram ``weights.summarize`` gives it alone."""
    import tensorflow as tf

    from tfstudio.engine.probes import gradients
    from tfstudio.engine.probes.weights import summarize

    monkeypatch.setattr(gradients, "CHUNK", chunk)
    rng = np.random.default_rng(3)
    tensors = [
        rng.normal(size=(7, 5)).astype("float32"),
        np.full((4,), 2.5, "float32"),  # min == max: every value in the middle bin
        np.array([0.0, 1.0, -1.0, 0.5], "float32"),
        rng.normal(size=(3, 3, 2)).astype("float32"),
        rng.normal(size=(64,)).astype("float64"),  # cast to float32, as weights are
        np.array([-3.0], "float32"),
    ]
    stats, hists = (t.numpy() for t in gradients.summarize_many([tf.constant(t) for t in tensors]))
    assert stats.shape == (len(tensors), 3) and hists.shape == (len(tensors), 30)
    for i, t in enumerate(tensors):
        want, want_hist = (x.numpy() for x in summarize(tf.constant(t)))
        assert np.sqrt(stats[i, 0]) == pytest.approx(want[4], rel=1e-6)
        assert stats[i, 1] == want[2] and stats[i, 2] == want[3]
        assert hists[i].tolist() == want_hist.tolist()
