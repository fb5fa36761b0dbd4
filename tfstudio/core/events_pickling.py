"""How events pickle: as ``(cls, field values)``, not through ``dataclasses``' state.

Each module of events (:mod:`tfstudio.core.events` and its families) calls
:func:`fast_pickling` at its end, so every event class it defines is covered.
"""

from __future__ import annotations

import dataclasses
import operator


def fast_pickling(namespace: dict[str, object]) -> None:
    """Pickle every event class defined in ``namespace`` (a module's ``globals()``) as
    ``(cls, field values)``.

    Slotted dataclasses otherwise pickle through ``dataclasses``' generic state
    functions, about 4x slower; a worker sends every step event to its viewer.
    Call it at the end of the module so it covers every event class there.
    """
    module = namespace["__name__"]
    for obj in list(namespace.values()):
        if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
            continue
        if obj.__module__ != module:
            continue
        names = tuple(f.name for f in dataclasses.fields(obj) if f.init)
        if not names:
            continue
        get = operator.attrgetter(*names)
        single = len(names) == 1

        def __reduce__(self: object, _cls: type = obj, _get=get, _single: bool = single) -> tuple:  # noqa: ANN001, N807
            values = _get(self)
            return (_cls, (values,) if _single else values)

        obj.__reduce__ = __reduce__  # type: ignore[method-assign]
