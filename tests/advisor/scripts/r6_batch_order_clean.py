import numpy as np
import tensorflow as tf

x = np.zeros((100, 4))
train = tf.data.Dataset.from_tensor_slices(x).shuffle(100).batch(32)
small = tf.data.Dataset.range(200).batch(64, drop_remainder=True)
again = tf.data.Dataset.range(20).batch(4).unbatch().shuffle(20).batch(4)
