import keras

probs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
probs.compile(
    optimizer="adam",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),  # expect: logits-mismatch
)
logits = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
logits.compile("adam", "sparse_categorical_crossentropy")  # expect: logits-mismatch
