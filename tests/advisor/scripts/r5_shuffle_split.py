import tensorflow as tf

ds = tf.data.Dataset.range(1000)
ds = ds.shuffle(1000)  # expect: shuffle-split
train = ds.take(800).batch(32)
test = ds.skip(800).batch(32)
