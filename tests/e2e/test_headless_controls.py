"""`tfstudio run` with control flags: parsed into RunOptions, applied by the engine."""

from __future__ import annotations

import pytest

from tests.engine.test_controls import NAN_AT_STEP_7, STOP_AT
from tfstudio.cli import NAN_EXIT_CODE, gui_parser, headless_parser, main, run_options
from tfstudio.core.options import RunOptions
from tfstudio.engine import control


def test_control_flags_become_run_options_in_both_parsers():
    flags = "--eager --checkpoint-every 50 --checkpoint-dir ck --restore ck/ckpt-50"
    flags = [*flags.split(), "--lr", "0.01", "--stop-at-step", "17", "--max-to-keep", "2"]
    headless = run_options(headless_parser().parse_args([*flags, "train.py", "--x", "1"]))
    window = run_options(gui_parser().parse_args([*flags, "train.py"]))
    expected = RunOptions(
        eager=True, checkpoint_every=50, checkpoint_dir="ck", restore="ck/ckpt-50", lr=0.01,
        stop_at_step=17, max_to_keep=2,
    )  # fmt: skip
    assert window == expected
    assert headless == RunOptions(**{**_fields(expected), "on_nan": "stop"})
    assert run_options(headless_parser().parse_args(["--graph", "t.py"])).eager is False
    assert run_options(headless_parser().parse_args(["t.py"])).eager is None
    assert NAN_EXIT_CODE == control.NAN_EXIT_CODE


def _fields(options: RunOptions) -> dict:
    return {name: getattr(options, name) for name in options.__slots__}


@pytest.mark.tf
def test_headless_stop_at_step_and_nan_stop_exit_code(write_script, capfd):
    assert main(["run", "--stop-at-step", "17", str(write_script(STOP_AT))]) == 0
    _, err = capfd.readouterr()
    assert "Run finished after" in err and "1 fit, 17 steps" in err
    code = main(["run", "--nan-batch", str(write_script(NAN_AT_STEP_7, name="nan.py"))])
    _, err = capfd.readouterr()
    assert code == NAN_EXIT_CODE
    assert (
        "tfstudio: Non-finite loss (nan) at step 7. First layer with a non-finite output: ratio"
        in err
    )
    assert f"(exit code {NAN_EXIT_CODE}) — non-finite loss at step 7 (--on-nan stop)" in err
