"""The largest inspector message so far, without pickling every event on the training thread.

The inspector's status line says how big its largest event is (pickled: what crosses
the pipe). Pickling each event just to measure it cost ~40 us an event on the
training thread (~130 us a sample of weights, gradients and its status), several
percent of a sample. An event kind's size is set by the model (its variables, layers
and histogram bins), not by the values, so each kind is measured at its first
:data:`MEASURED_FIRST` events and then every :data:`MEASURE_EVERY`-th.
"""

from __future__ import annotations

import pickle

MEASURED_FIRST = 2
MEASURE_EVERY = 16


class LargestMessage:
    """Bytes of the largest event noted so far (pickled), each kind measured now and then."""

    def __init__(self) -> None:
        self.largest = 0
        self._seen: dict[type, int] = {}

    def note(self, event: object) -> None:
        """An event about to be sent: measure it if its kind is due."""
        kind = type(event)
        seen = self._seen.get(kind, 0)
        self._seen[kind] = seen + 1
        if seen < MEASURED_FIRST or seen % MEASURE_EVERY == 0:
            size = len(pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL))
            self.largest = max(self.largest, size)
