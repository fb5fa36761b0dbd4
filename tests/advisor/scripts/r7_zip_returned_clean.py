import tensorflow as tf


def source():
    ds = tf.data.Dataset.range(100)
    return ds


pairs = source()
xs = pairs.map(lambda v: tf.cast(v, tf.float32))
ys = pairs.map(lambda v: v % 2)
train = tf.data.Dataset.zip((xs, ys)).shuffle(100)
