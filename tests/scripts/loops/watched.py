"""monitor.watch names the loop; the loop itself is found automatically."""

import tensorflow as tf

from tfstudio import monitor

w = tf.Variable([1.0, 2.0])
holder = tf.Module(name="module")
holder.w = w
monitor.watch(holder, "regressor")
for _ in range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(w))
    (grad,) = tape.gradient(loss, [w])
    w.assign_sub(0.1 * grad)
