"""What a rule is, and the record it produces."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfstudio.core.events import Advice

if TYPE_CHECKING:
    from tfstudio.core.advisor.analysis import Script

Finding = Advice  # one record for static and live advice


@dataclass(frozen=True)
class Rule:
    """One pitfall: a short name, a one-line title, what goes wrong, and the fix.

    ``check`` reads a parsed script and yields ``(line, message)`` pairs; it must stay
    silent when it cannot decide (no false alarms beats coverage). Live rules have no
    ``check`` (they fire in the worker, ``engine/advisor_live.py``).
    """

    name: str
    title: str
    explanation: str
    fix: str
    check: Callable[[Script], Iterable[tuple[int, str]]] | None = None

    def advice(self, message: str = "", file: str = "", line: int = 0, fix: str = "") -> Advice:
        """An ``Advice`` record for this rule (``message`` defaults to the explanation)."""
        return Advice(
            rule=self.name,
            title=self.title,
            message=message or self.explanation,
            fix=fix or self.fix,
            file=file,
            line=line,
        )
