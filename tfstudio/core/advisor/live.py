"""The rules that need a running script; the worker fires them (``engine/advisor_live.py``).

Their wording lives here, with the static rules', so the README and the panel list
them all; the decisions are made in the worker from the run's events.
"""

from __future__ import annotations

from tfstudio.core.advisor.base import Rule

RETRACING = Rule(
    name="retracing",
    title="Function traced again and again",
    explanation=(
        "TensorFlow builds a new graph each time a tf.function sees a new Python value or a new "
        "input shape; every retrace costs the time of the first step."
    ),
    fix="pass tensors, not Python numbers (tf.constant(x)); fix the shapes with "
    "@tf.function(input_signature=[tf.TensorSpec([None, 28], tf.float32)]); or "
    "@tf.function(reduce_retracing=True)",
)
DIVERGENCE = Rule(
    name="divergence",
    title="Training diverges",
    explanation=(
        "The loss ran away from its best value (or became NaN): the steps are too large for "
        "this model and data."
    ),
    fix="lower the learning rate (e.g. 10x: keras.optimizers.Adam(1e-4)); clip gradients "
    "(Adam(clipnorm=1.0)); check the inputs are scaled",
)
DEAD_UNITS = Rule(
    name="dead-relu",
    title="Most ReLU units are dead",
    explanation=(
        "A ReLU unit that outputs 0 for every input gets no gradient and never recovers; a "
        "layer with most units dead has lost most of its capacity."
    ),
    fix='lower the learning rate; use activation="leaky_relu" or "gelu"; he_normal '
    "initialisation; normalise the inputs",
)
STUCK_LOSS = Rule(
    name="stuck-loss",
    title="Loss stuck at chance level, ln(classes)",
    explanation=(
        "A crossentropy loss that stays at ln(number of classes) means the model predicts the "
        "uniform distribution: it is not learning."
    ),
    fix="check from_logits matches the output layer (softmax vs logits); check the labels "
    "match the outputs; try another learning rate",
)
GRAPH_ERROR = Rule(
    name="graph-mode-error",
    title="Python value asked of a tensor while tracing",
    explanation=(
        "The script reads a tensor as a Python value (.numpy(), bool(), if/while) inside a "
        "function TensorFlow runs as a graph, where tensors have no values yet."
    ),
    fix="rewrite with TF ops (tf.cond, tf.where, tf.print); or run eagerly to find the line: "
    "tfstudio --eager SCRIPT / tfstudio run --eager SCRIPT",
)
SHAPE_MISMATCH = Rule(
    name="shape-mismatch",
    title="The data's shape does not fit the model",
    explanation=(
        "The run failed where the data met the model or the loss: a layer built for inputs "
        "of one shape got another, or the labels do not match the outputs. TensorFlow says "
        "it in terms of graph nodes and matrix sizes; the notice says it in the script's."
    ),
    fix="compare x and y's shapes with model.summary() and the loss: keras.Input's shape, "
    "the last layer's units (one per class), integer vs one-hot labels",
)
LIVE_RULES: tuple[Rule, ...] = (
    RETRACING,
    DIVERGENCE,
    DEAD_UNITS,
    STUCK_LOSS,
    GRAPH_ERROR,
    SHAPE_MISMATCH,
)
