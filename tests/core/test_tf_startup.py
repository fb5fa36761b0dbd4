"""Which native stderr lines are TensorFlow's start-up messages (pure Python, no TF)."""

from __future__ import annotations

from tfstudio.core.tf_startup import StartupFold, describe_startup, is_startup_line

REAL = [  # TF 2.21 on a CPU-only machine, and older TF's own log format
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795485259.405270    3261 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
    "E0000 00:00:1795485264.953825    3261 cuda_platform.cc:52] failed call to cuInit: INTERNAL:"
    " CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.",
    "2024-05-01 10:00:00.123456: I tensorflow/core/util/port.cc:113] oneDNN custom operations "
    "are on. You may see slightly different numerical results.",
    "2024-05-01 10:00:00.2: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] "
    "Unable to register cuDNN factory",
]
NOT_STARTUP = [
    "epoch 1 loss 0.3",
    "I0000 00:00:1795485259.405270    3261 my_kernel.cc:31] a custom op's message",
    "W0000 00:00:1795485259.405270    3261 loop_optimizer.cc:934] Skipping loop optimization",
    "cudart_stub.cc:31] printed by a script without the log prefix",
    "Traceback (most recent call last):",
]


def test_real_start_up_lines_match_and_others_do_not():
    assert all(is_startup_line(line) for line in REAL)
    assert not any(is_startup_line(line) for line in NOT_STARTUP)


def test_description_says_whether_a_gpu_was_found():
    assert describe_startup(REAL[:3]) == "TensorFlow start-up: 3 messages, no GPU found"
    gpu = "I0000 00:00:17.1  9 gpu_device.cc:2020] Created device /job:localhost/device:GPU:0"
    assert describe_startup([gpu]) == "TensorFlow start-up: 1 message, GPU found"
    assert describe_startup([REAL[3]]) == "TensorFlow start-up: 1 message"


def test_fold_keeps_start_up_lines_and_passes_the_rest_in_order():
    fold = StartupFold()
    out = fold.feed(REAL[1][:30])  # an unfinished line that may be one: held
    assert out == ""
    out = fold.feed(REAL[1][30:] + "\nmine\n" + REAL[0] + "\n")
    assert out == "mine\n"
    assert fold.lines == [REAL[1], REAL[0]]
    assert fold.feed("progress 10%") == "progress 10%"  # cannot be one: shown at once
    assert fold.feed("I0000 00:") == "" and fold.flush() == "I0000 00:"
