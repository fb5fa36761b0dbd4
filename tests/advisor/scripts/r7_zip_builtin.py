import tensorflow as tf

pairs = tf.data.Dataset.range(100)
pairs = pairs.shuffle(100)
xs = pairs.map(lambda v: tf.cast(v, tf.float32))
ys = pairs.map(lambda v: v % 2)
for x, y in zip(xs, ys, strict=True):  # expect: zip-mismatch
    print(x, y)
