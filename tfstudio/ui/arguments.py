"""The script's arguments, set in the window: what the next Run passes, kept per script.

Typed as on a command line (``--epochs 3 --name "first try"``) and split as a POSIX
shell splits them (quotes group, no variables or globs expanded). The window keeps
them per script in its settings, as it keeps the recent scripts.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

SETTINGS_GROUP = "script_arguments"


def parse_arguments(text: str) -> tuple[str, ...]:
    """Split ``text`` into arguments as a shell would.

    Raises:
        ValueError: an unclosed quote (the message says so).
    """
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # shlex says "No closing quotation"
        raise ValueError(f"cannot split the arguments: {str(exc).lower()}") from None


def format_arguments(args: Sequence[str]) -> str:
    """Arguments as one line that :func:`parse_arguments` splits back into them."""
    return shlex.join(args)


def _key(script: str) -> str:
    # QSettings treats "/" and "\" as group separators: keep the path in one key
    return f"{SETTINGS_GROUP}/" + script.replace("\\", "\\\\").replace("/", "\\|")


def stored_arguments(settings: QSettings | None, script: str) -> tuple[str, ...]:
    """The arguments kept for ``script`` (none kept, or unreadable: none)."""
    if settings is None or not script:
        return ()
    value = settings.value(_key(script), "")
    if not isinstance(value, str) or not value:
        return ()
    try:
        return parse_arguments(value)
    except ValueError:
        return ()


def store_arguments(settings: QSettings | None, script: str, args: Sequence[str]) -> None:
    """Keep ``args`` for ``script`` (none: forget them)."""
    if settings is None or not script:
        return
    if args:
        settings.setValue(_key(script), format_arguments(args))
    else:
        settings.remove(_key(script))


class ArgumentsDialog(QDialog):
    """Asks for the arguments the next Run passes to ``script``.

    Args:
        script: the script's name, shown in the question.
        args: the arguments set now.
    """

    def __init__(self, script: str, args: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Script arguments")
        self.args: tuple[str, ...] = tuple(args)
        question = QLabel(
            f"Arguments Run passes to <b>{script}</b>, as on a command line "
            '(<tt>--epochs 3 --name "first try"</tt>). They are kept for this script.'
        )
        question.setWordWrap(True)
        self.edit = QLineEdit(format_arguments(args))
        self.edit.setPlaceholderText("no arguments")
        self.edit.setMinimumWidth(420)
        self.error = QLabel()
        self.error.setStyleSheet("color: #c92a2a;")
        self.error.hide()
        self.edit.textChanged.connect(lambda _text: self.error.hide())
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(question)
        layout.addWidget(self.edit)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def accept(self) -> None:
        """Take the arguments if they split; else say why and stay open."""
        try:
            self.args = parse_arguments(self.edit.text())
        except ValueError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        super().accept()
