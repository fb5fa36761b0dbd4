import tensorflow as tf

pairs = tf.data.Dataset.range(100)
xs = pairs.map(lambda v: tf.cast(v, tf.float32))
ys = pairs.map(lambda v: v % 2)
for x, y in zip(xs, ys, strict=True):
    print(x, y)
names = ["a", "b"]
for name, n in zip(names, range(2), strict=True):
    print(name, n)
