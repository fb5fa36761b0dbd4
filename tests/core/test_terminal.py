"""Terminal control codes become plain text for the console view."""

from tfstudio.core.terminal import plain_text


def test_plain_text_strips_escapes_and_applies_backspaces():
    keras_line = "\r\x1b[1m1/2\x1b[0m \x1b[32m━━\x1b[0m loss: 0.39"
    assert plain_text(keras_line) == "\r1/2 ━━ loss: 0.39"
    assert plain_text("abc\b\bX\n") == "aX\n"
    assert plain_text("line\n\b") == "line\n"
