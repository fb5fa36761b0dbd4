import keras


class Counting(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.calls = 0
        self.seen = 0.0

    def call(self, x):
        self.calls += 1  # expect: python-state
        self.seen = self.seen + 1.0  # expect: python-state
        return self.dense(x)


model = Counting()
model.compile("sgd", "mse")
model.fit([[1.0]], [[1.0]], verbose=0)
