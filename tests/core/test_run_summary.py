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
