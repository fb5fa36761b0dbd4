import tensorflow as tf


def load(v):
    return tf.cast(v, tf.float32) * 2


ds = tf.data.Dataset.range(5)
ds = ds.shuffle(5)
ds = ds.map(load)
