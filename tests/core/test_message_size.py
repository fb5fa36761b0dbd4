"""The inspector's largest message: each kind of event measured at first, then now and then."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from tfstudio.core import message_size
from tfstudio.core.message_size import LargestMessage


@dataclass
class Small:
    data: bytes


@dataclass
class Big:
    data: bytes


def test_each_kind_is_measured_at_its_first_events_then_every_nth(monkeypatch):
    pickled: list[object] = []
    dumps = pickle.dumps
    monkeypatch.setattr(
        message_size.pickle, "dumps", lambda obj, **kw: pickled.append(obj) or dumps(obj, **kw)
    )
    sizes = LargestMessage()
    events = [Small(b"x" * 10) for _ in range(40)] + [Big(b"y" * 5000)]
    for event in events:
        sizes.note(event)
    every = message_size.MEASURE_EVERY
    first = message_size.MEASURED_FIRST
    expected = [i for i in range(40) if i < first or i % every == 0]
    at = {id(e): i for i, e in enumerate(events)}
    assert [at[id(e)] for e in pickled if type(e) is Small] == expected
    assert sum(type(e) is Big for e in pickled) == 1  # a new kind: measured at once
    assert sizes.largest == len(dumps(events[-1], protocol=pickle.HIGHEST_PROTOCOL))
