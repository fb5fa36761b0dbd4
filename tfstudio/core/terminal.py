"""Make terminal-style output readable in a plain text view.

Keras's progress bar writes ANSI colour codes and backspaces and rewrites its
line with ``\\r``; a text widget shows those as garbage. :func:`plain_text`
removes the escape codes and applies backspaces within a chunk (carriage
returns are left for the view to apply, as they can span chunks).
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves) and OSC sequences (titles).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def plain_text(text: str) -> str:
    """``text`` without ANSI escapes, with backspaces applied."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    if "\b" in text:
        out: list[str] = []
        for ch in text:
            if ch == "\b":
                if out and out[-1] not in "\n\r":
                    out.pop()
            else:
                out.append(ch)
        text = "".join(out)
    return text
