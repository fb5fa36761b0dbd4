"""The Help menu (shortcuts read from the actions, local docs, About) and the script's
arguments set in the window (Run > Arguments…), kept per script."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QDesktopServices, QKeySequence
from PySide6.QtWidgets import QDialog

from tfstudio import __version__
from tfstudio.ui import help as help_module
from tfstudio.ui.arguments import ArgumentsDialog, parse_arguments
from tfstudio.ui.main_window import MainWindow


def menu_titles(menu):
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def test_the_help_menu_has_shortcuts_docs_and_about(window):
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[-1] == "&Help"
    assert menu_titles(window.help_menu) == [
        "Keyboard Shortcuts",
        "Open README and Docs",
        "About tfstudio",
    ]


def test_the_shortcuts_dialog_lists_the_actions_shortcuts(window, qtbot):
    dialog = window.shortcuts_dialog()
    qtbot.addWidget(dialog)
    listed = dict(dialog.listed())
    native = QKeySequence.SequenceFormat.NativeText
    assert listed["Run"] == "F5, Ctrl+R"
    assert listed["Stop"] == "Shift+F5"
    assert listed["Open"] == QKeySequence(QKeySequence.StandardKey.Open).toString(native)
    assert listed["Arguments"] == "Ctrl+Shift+R"
    assert listed["Pause"] == "F6"
    # every menu action with a shortcut is there, with its own keys
    for menu in (a.menu() for a in window.menuBar().actions()):
        for action in menu.actions():
            if not action.shortcut().isEmpty():
                name = action.text().replace("&", "").rstrip("…")
                assert listed[name] == ", ".join(k.toString(native) for k in action.shortcuts())
    # read from the actions, not a list of its own: a changed shortcut shows
    window.stop_action.setShortcut(QKeySequence("Ctrl+Shift+X"))
    again = window.shortcuts_dialog()
    qtbot.addWidget(again)
    assert dict(again.listed())["Stop"] == "Ctrl+Shift+X"


def test_open_docs_opens_the_local_readme(window, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    window.docs_action.trigger()
    [url] = opened
    assert url.isLocalFile()
    path = Path(url.toLocalFile())
    assert path.exists() and path.name in ("README.md", "docs")


def test_open_docs_says_where_they_are_when_not_installed(window, monkeypatch):
    said = []
    monkeypatch.setattr(help_module, "docs_path", lambda: None)
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: pytest.fail("opened"))
    monkeypatch.setattr(
        "PySide6.QtWidgets.QMessageBox.information", lambda *a: said.append(a[2]) or 0
    )
    assert help_module.open_docs(window) is None
    assert "README.md" in said[0] and "docs/" in said[0]


def test_about_names_the_version(window, qtbot):
    dialog = help_module.about_dialog(window)
    qtbot.addWidget(dialog)
    assert f"tfstudio {__version__}" in dialog.label.text()


def answer(monkeypatch, text):
    """The arguments dialog, answered with ``text`` and OK (instead of a person)."""
    seen = []

    def exec_(self):
        seen.append(self.edit.text())
        self.edit.setText(text)
        self.accept()
        return self.result()

    monkeypatch.setattr(ArgumentsDialog, "exec", exec_)
    return seen


def test_run_passes_the_arguments_set_in_the_window(window, run, launcher, script, monkeypatch):
    assert window.open_script(str(script))
    answer(monkeypatch, '--epochs 3 --name "first try"')
    window.arguments_action.trigger()
    window.run_action.trigger()
    assert launcher.calls[-1] == ("start", str(script), ("--epochs", "3", "--name", "first try"))
    assert "--epochs 3 --name 'first try'" in window.run_action.toolTip()


def test_the_arguments_are_kept_per_script(
    window, run, launcher, script, tmp_path, settings, channel, qtbot, monkeypatch
):
    other = tmp_path / "other.py"
    other.write_text("print('other')\n")
    window.open_script(str(script))
    answer(monkeypatch, "--epochs 3")
    window.arguments_action.trigger()
    window.open_script(str(other))  # another script: none of the first one's arguments
    assert window.script_args == ()
    window.run_action.trigger()
    assert launcher.calls[-1] == ("start", str(other), ())
    run.ended().frame()
    seen = answer(monkeypatch, "")
    window.open_script(str(script))  # back: its arguments again
    assert window.script_args == ("--epochs", "3")
    window.arguments_action.trigger()
    assert seen == ["--epochs 3"]  # the dialog shows them; cleared, they are forgotten
    assert window.script_args == ()
    answer(monkeypatch, "--lr 0.1")
    window.arguments_action.trigger()
    # a later window with the same settings
    later = MainWindow(channel, launcher, settings)
    qtbot.addWidget(later)
    later.open_script(str(script))
    assert later.script_args == ("--lr", "0.1")
    later.bridge.stop()


def test_arguments_that_do_not_split_are_refused_with_the_reason(window, script, qtbot):
    window.open_script(str(script))
    window.set_script_arguments(["--epochs", "2"])
    dialog = ArgumentsDialog("train.py", window.script_args, window)
    qtbot.addWidget(dialog)
    dialog.edit.setText('--name "unclosed')
    dialog.accept()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert dialog.error.text() == "cannot split the arguments: no closing quotation"
    assert dialog.args == ("--epochs", "2")
    with pytest.raises(ValueError, match="no closing quotation"):
        parse_arguments("'a")
