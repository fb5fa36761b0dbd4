"""The shape-mismatch notice, from the texts TensorFlow 2.21 / Keras 3 give (no TensorFlow here).

Each message below is what this stack printed for a small script that falls into the
mistake (the graph errors shortened to their last lines, which carry the sizes and the
node). A real run of one of them is in ``test_live_rules.py``.
"""

from __future__ import annotations

import pytest

from tfstudio.core.advisor.shapes import explain_shape_error
from tfstudio.core.events import RunEnded, ScriptError
from tfstudio.engine.advisor_live import LiveAdvisor

# model trained on 8 features, then fit on 5 (its train function is traced already)
MATMUL = (
    "Graph execution error:\n\nDetected at node sequential_1/dense_1/Relu defined at (most "
    'recent call last):\n  File "/tmp/train.py", line 13, in <module>\n\nMatrix '
    "size-incompatible: In[0]: [32,5], In[1]: [8,16]\n\t [[{{node sequential_1/dense_1/Relu}}]] "
    "[Op:__inference_multi_step_on_iterator_1167]"
)
# a fresh Sequential with keras.Input((8,)) fit on 5 features
AXIS = (
    "Exception encountered when calling Sequential.call().\n\n\x1b[1mInput 0 with name 'None' "
    "of layer 'dense' is incompatible with the layer: expected axis -1 of input shape to have "
    "value 8, but received input with shape (32, 5)\x1b[0m\n\nArguments received by "
    "Sequential.call():\n  • inputs=tf.Tensor(shape=(32, 5), dtype=float32)"
)
FUNCTIONAL = (
    "Input 0 with name 'input_layer' of layer 'functional' is incompatible with the layer: "
    "expected shape=(None, 8), found shape=(32, 5)"
)
NO_CHANNELS = (
    "Input 0 with name 'None' of layer 'conv2d' is incompatible with the layer: expected "
    "min_ndim=4, found ndim=3. Full shape received: (32, 28, 28)"
)
INT_LABELS = (
    "Arguments `target` and `output` must have the same rank (ndim). Received: "
    "target.shape=(32,), output.shape=(32, 3)"
)
LABEL_RANGE = (
    "Graph execution error:\n\nDetected at node compile_loss/sparse_categorical_crossentropy/"
    "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits defined at ...\n"
    "Received a label value of 4 which is outside the valid range of [0, 3).  Label values: "
    "2 2 1 4 0\n\t [[{{node compile_loss/sparse_categorical_crossentropy/"
    "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits}}]]"
)
ONE_HOT_SPARSE = (
    "Argument `output` must have rank (ndim) `target.ndim - 1`. Received: "
    "target.shape=(32, 3), output.shape=(32, 3)"
)
FEWER_CLASSES = (
    "Arguments `target` and `output` must have the same shape. Received: "
    "target.shape=(32, 5), output.shape=(32, 3)"
)
ONE_SIGMOID = (
    "Arguments `target` and `output` must have the same shape. Received: "
    "target.shape=(32, 3), output.shape=(32, 1)"
)
FLAT_IMAGES = (
    "Exception encountered when calling Sequential.call().\n\nInput 0 with name 'None' of "
    "layer 'conv2d' is incompatible with the layer: expected min_ndim=4, found ndim=2. Full "
    "shape received: (32, 784)\n\nArguments received by Sequential.call():"
)
MSE_COLUMNS = (
    "Dimensions must be equal, but are 2 and 3 for '{{node compile_loss/mse/sub}} = "
    "Sub[T=DT_FLOAT](data_1, sequential_1/dense_1_2/BiasAdd)' with input shapes: [32,2], [32,3]."
)


@pytest.mark.parametrize(
    ("text", "says", "fix"),
    [
        (MATMUL, "layer 'dense_1' was built for inputs of 8 features", "keras.Input((5,))"),
        (AXIS, "layer 'dense' takes inputs with 8 values on its last axis", "keras.Input((5,))"),
        (FUNCTIONAL, "takes inputs shaped (None, 8)", "keras.Input((5,))"),
        (NO_CHANNELS, "images without a channel axis", "x = x[..., None]"),
        (INT_LABELS, "integer class labels", 'loss="sparse_categorical_crossentropy"'),
        (LABEL_RANGE, "a label is 4, but the output layer has 3 units", "Dense(5)"),
        (MSE_COLUMNS, "the targets have 2 values per sample and the model outputs 3", "Dense(2)"),
        (ONE_HOT_SPARSE, "one-hot labels, given to a sparse loss", "categorical_crossentropy"),
        (FEWER_CLASSES, "5 values a label against 3 outputs", "Dense(5)"),
        (ONE_SIGMOID, "against a single output", 'Dense(3, activation="softmax")'),
        (FLAT_IMAGES, "flattened images", "x.reshape(-1, 28, 28, 1) for 784 values"),
        (FLAT_IMAGES.replace("784", "3072"), "flattened", "x.reshape(-1, 32, 32, 3) for 3072"),
        (FLAT_IMAGES.replace("784", "1000"), "flattened", "x.reshape(-1, height, width, ch"),
    ],
)
def test_each_known_shape_error_is_said_in_the_scripts_terms(text, says, fix):
    message, how = explain_shape_error(text)
    assert says in message and fix in how, (message, how)


def test_other_errors_get_no_shape_notice():
    assert explain_shape_error("Data cardinality is ambiguous. 'x' sizes: 64") is None
    assert explain_shape_error("division by zero") is None
    # a product of the wrong sizes inside the loss is not the data against a layer
    assert (
        explain_shape_error(MATMUL.replace("sequential_1/dense_1/Relu", "compile_loss/x/MatMul"))
        is None
    )
    # a loss's operands with no data side: which is the target is not known
    assert explain_shape_error(MSE_COLUMNS.replace("data_1", "dense_2/BiasAdd")) is None


def test_the_advisor_points_at_the_failing_line_once():
    advisor = LiveAdvisor()
    error = ScriptError("InvalidArgumentError", MATMUL, "/tmp/train.py", 13, "Traceback ...")
    ended = RunEnded("failed", 1, 2, 16, 1.5, error)
    (advice,) = advisor.feed(ended)
    assert advice.rule == "shape-mismatch" and (advice.file, advice.line) == ("/tmp/train.py", 13)
    assert advice.message.startswith("InvalidArgumentError at /tmp/train.py:13: layer 'dense_1'")
    assert "keras.Input((5,))" in advice.fix
    assert advisor.feed(ended) == []  # once per cause
    plain = ScriptError("ValueError", "division by zero", "/tmp/train.py", 3, "")
    assert LiveAdvisor().feed(RunEnded("failed", 1, 0, 0, 0.1, plain)) == []
