import tensorflow as tf

ds = tf.data.Dataset.range(1000)
ds = ds.shuffle(1000, seed=1, reshuffle_each_iteration=False)
train = ds.take(800).batch(32)
test = ds.skip(800).batch(32)
other = tf.data.Dataset.range(100).shuffle(100).take(10)
