import numpy as np
import tensorflow as tf

x = np.zeros((100, 4))
train = tf.data.Dataset.from_tensor_slices(x).batch(32).shuffle(10)  # expect: batch-order
small = tf.data.Dataset.range(20).batch(64, drop_remainder=True)  # expect: batch-order
