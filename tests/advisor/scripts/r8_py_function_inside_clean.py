import tensorflow as tf


def make_dataset(n, items):
    def load(v):
        return tf.cast(v, tf.float32) * 2

    ds = tf.data.Dataset.range(n)
    ds = ds.shuffle(n)
    ds = ds.map(load)
    items = items.map(lambda v: tf.py_function(lambda t: t, [v], tf.int64))  # not a dataset
    return ds.batch(2), items


class Items:
    def map(self, fn):
        return [fn(v) for v in range(3)]


train, rest = make_dataset(5, Items())
