"""The explicit API: a loop tfstudio cannot see (numpy) reported with monitor.log."""

from tfstudio import monitor

for step in range(1, 6):
    monitor.log(step, loss=1.0 / step, accuracy=step / 10)
