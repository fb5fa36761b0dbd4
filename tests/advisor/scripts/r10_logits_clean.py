import keras

probs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
probs.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
logits = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
logits.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
reg = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
reg.compile("adam", "mse")
