"""Notices panel in the real window: static advice on open, live advice as it arrives."""

from __future__ import annotations

import shutil
from pathlib import Path

from tfstudio.core.events import Advice

DEMO = Path(__file__).resolve().parents[1] / "advisor" / "scripts" / "demo_pitfalls.py"


def test_opening_a_script_lists_its_pitfalls_with_lines(window, tmp_path):
    script = tmp_path / "train.py"
    shutil.copy(DEMO, script)
    assert window.open_script(str(script))
    notices = window.notices.notices()
    assert [(n.rule, n.line) for n in notices] == [
        ("python-state", 16),
        ("trace-side-effect", 17),
        ("shuffle-split", 23),
        ("subclass-save", 30),
    ]
    assert window.notices_dock.windowTitle() == "Notices (4)"
    assert window.notices.list.item(2).text() == (
        "train.py:23  Shuffled dataset split with take/skip mixes train and test"
    )
    window.notices.select(2)  # a click: the explanation, the fix and the line in its source
    html = window.notices.detail.toPlainText()
    assert "reshuffle_each_iteration=False" in html
    assert "  23  ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000)" in html
    assert window.notices.open_button.isEnabled()


def test_a_clean_script_has_no_notices(window, script):
    assert window.open_script(str(script))
    assert window.notices.notices() == []
    assert window.notices_dock.windowTitle() == "Notices"
    assert "No notices" in window.notices.detail.toPlainText()


def test_live_advice_arrives_once_and_a_new_run_clears_it(window, run, script):
    window.open_script(str(script))
    advice = Advice(
        "retracing", "Function traced again and again", "f retraced", "tf.constant", str(script), 1
    )
    run.started(str(script)).emit(advice, advice)
    run.frame()
    assert window.notices.notices() == [advice]
    assert window.notices.list.count() == 1
    assert window.notices.list.item(0).text().endswith("again and again  (from the run)")
    assert "print('hello')" in window.notices.detail.toPlainText()
    run.started(str(script))
    run.frame()
    assert window.notices.notices() == []
