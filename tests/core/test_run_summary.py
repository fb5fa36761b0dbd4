"""RunEnded.summary(): a failed run says what ran before it failed, and for how long."""

from __future__ import annotations

from tfstudio.core.events import RunEnded, ScriptError

ERROR = ScriptError("ValueError", "bad shape", "/proj/train.py", 40, "Traceback ...\n")


def test_a_failed_run_counts_fits_loops_and_steps_like_a_finished_one():
    failed = RunEnded("failed", 1, 1, 1234, 75.0, ERROR, "", loops=2)
    assert failed.summary() == (
        "Run failed after 1:15: 1 fit, 2 loops, 1234 steps — ValueError: bad shape "
        "at /proj/train.py:40 (exit code 1)"
    )
    finished = RunEnded("finished", 0, 1, 1234, 75.0, loops=2)
    assert finished.summary() == "Run finished after 1:15: 1 fit, 2 loops, 1234 steps (exit code 0)"


def test_a_short_run_is_never_zero_seconds():
    assert (
        "after 0.4 s: 0 fits, 1 loop, 1 step "
        in RunEnded("failed", 1, 0, 1, 0.42, ERROR, loops=1).summary()
    )
    assert "after 0:03" in RunEnded("finished", 0, 1, 10, 3.2).summary()


def test_a_crash_without_a_python_error_keeps_its_reason():
    crashed = RunEnded("failed", -11, 2, 50, 12.0, None, "died of SIGSEGV")
    assert crashed.summary() == (
        "Run failed after 0:12: 2 fits, 50 steps (exit code -11) — died of SIGSEGV"
    )
