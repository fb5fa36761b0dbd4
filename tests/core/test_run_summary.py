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


def test_a_run_with_a_restore_counts_the_steps_trained_and_says_where_its_step_is():
    """Restored from step 18,466 to 4,096, then 734 more: 19,200 trained, run step 4,830."""
    ended = RunEnded("finished", 0, 0, 4830, 31.0, loops=1, rewound=18466 - 4096)
    assert ended.summary() == (
        "Run finished after 0:31: 0 fits, 1 loop, 19200 steps trained, run step 4830 after a "
        "restore (exit code 0)"
    )
    assert ended.steps_text(",") == "19,200 steps trained, run step 4,830 after a restore"


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


GRAPH_ERROR = (
    "Graph execution error:\n\nDetected at node sequential_1/dense_1/Relu defined at (most "
    'recent call last):\n  File "/proj/train.py", line 13, in <module>\n\n  File "/site/'
    'keras/src/backend/tensorflow/nn.py", line 34, in relu\n\nMatrix size-incompatible: '
    "In[0]: [32,5], In[1]: [8,16]\n\t [[{{node sequential_1/dense_1/Relu}}]] "
    "[Op:__inference_multi_step_on_iterator_1167]"
)
KERAS_CALL = (
    "Exception encountered when calling Sequential.call().\n\n\x1b[1mInput 0 of layer "
    "'dense' is incompatible with the layer: expected axis -1 of input shape to have value "
    "8, but received input with shape (32, 5)\x1b[0m\n\nArguments received by "
    "Sequential.call():\n  • inputs=tf.Tensor(shape=(32, 5), dtype=float32)"
)


def test_a_failed_runs_line_keeps_the_errors_telling_line_not_its_frames():
    """TensorFlow's graph errors and Keras's wrapped layer errors span many lines; the
    one-line summary (console, terminal) says the op's complaint or the layer's error."""
    graph = ScriptError("InvalidArgumentError", GRAPH_ERROR, "/proj/train.py", 13, "")
    assert graph.headline() == (
        "Matrix size-incompatible: In[0]: [32,5], In[1]: [8,16] "
        "(in graph node sequential_1/dense_1/Relu)"
    )
    line = RunEnded("failed", 1, 2, 16, 2.0, graph).summary()
    assert "\n" not in line and line.endswith("(in graph node sequential_1/dense_1/Relu) at "
                                              "/proj/train.py:13 (exit code 1)")  # fmt: skip
    keras = ScriptError("ValueError", KERAS_CALL, "/proj/train.py", 9, "")
    assert keras.headline().startswith("Input 0 of layer 'dense' is incompatible")
    assert keras.headline().endswith("received input with shape (32, 5)")  # no escape codes
    assert ScriptError("E", "first\nsecond", "", 0, "").headline() == "first …"
    long = ScriptError("E", "labels: " + "1 " * 500, "", 0, "").headline()
    assert len(long) == 300 and long.endswith("…")


# -- a run folder's comparison figures (core/run_summary.py) ------------------------------
import pytest  # noqa: E402

from tests.core.tfevents import write_events  # noqa: E402
from tfstudio.core.run_summary import SummaryReader, summarize_run  # noqa: E402


def test_last_is_the_last_epochs_mean_never_the_last_batch(tmp_path):
    """As Keras prints it: 0.2318 for the last epoch although its last batch was 0.1579."""
    run = tmp_path / "run"
    write_events(
        run,
        {
            "step/loss": [(1, 0.9), (2, 0.5), (3, 0.3), (4, 0.1579)],
            "epoch/loss": [(2, 0.7), (4, 0.2318)],
            "epoch/val_loss": [(2, 0.31), (4, 0.35)],
            "step/accuracy": [(1, 0.1), (2, 0.9), (3, 0.2), (4, 0.3)],
            "epoch/accuracy": [(2, 0.5), (4, 0.25)],
            "learning_rate": [(1, 0.01)],
            "system/cpu_percent": [(1, 50.0)],
        },
    )
    figures = summarize_run(run)
    assert set(figures) == {"loss", "val_loss", "accuracy"}  # no learning rate, no system/
    loss = figures["loss"]
    assert (loss.last, loss.best, loss.best_step, loss.per_step) == (
        pytest.approx(0.2318),
        pytest.approx(0.2318),
        4,
        False,
    )
    val = figures["val_loss"]
    assert (val.last, val.best, val.best_step) == (pytest.approx(0.35), pytest.approx(0.31), 2)
    acc = figures["accuracy"]  # the best accuracy is the highest epoch mean
    assert (acc.last, acc.best, acc.best_step) == (pytest.approx(0.25), pytest.approx(0.5), 2)
    assert list(figures)[:2] == ["loss", "val_loss"]  # loss first, each before its val_


def test_a_run_without_epochs_uses_its_per_step_values_and_says_so(tmp_path):
    run = tmp_path / "loop"
    write_events(run, {"step/loss": [(1, 3.0), (2, 1.0), (3, 2.0)], "custom": [(5, 7.0)]})
    figures = summarize_run(run)
    assert figures["loss"].per_step and figures["loss"].last == 2.0
    assert (figures["loss"].best, figures["loss"].best_step) == (1.0, 2)
    assert figures["custom"].per_step and figures["custom"].last == 7.0


def test_keras_tensorboard_folders_name_metrics_as_keras_prints_them(tmp_path):
    run = tmp_path / "keras"
    write_events(run / "train", {"epoch_loss": [(0, 0.8), (1, 0.6)], "batch_loss": [(9, 0.5)]})
    write_events(
        run / "validation",
        {"epoch_loss": [(0, 0.9), (1, 0.95)], "evaluation_loss_vs_iterations": [(20, 0.95)]},
    )
    figures = summarize_run(run)
    assert figures["loss"].last == pytest.approx(0.6) and not figures["loss"].per_step
    assert figures["val_loss"].last == pytest.approx(0.95)
    assert figures["val_loss"].best == pytest.approx(0.9)


def test_a_followed_folder_is_read_on_from_where_it_was(tmp_path):
    writer = write_events(tmp_path / "live", {"epoch/loss": [(10, 1.0)]}, keep_open=True)
    reader = SummaryReader(tmp_path / "live")
    assert reader.update()["loss"].last == 1.0
    writer.add("epoch/loss", 20, 0.5)
    writer.add("epoch/loss", 30, 0.75)
    loss = reader.update()["loss"]
    assert (loss.last, loss.best, loss.best_step, loss.epochs) == (0.75, 0.5, 20, 3)
    writer.close()
