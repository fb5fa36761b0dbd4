import keras


class Net(keras.Model):
    def __init__(self, units):
        super().__init__()
        self.dense = keras.layers.Dense(units)

    def call(self, x):
        return self.dense(x)


model = Net(4)
model.save("net.keras")  # expect: subclass-save
