import keras


@keras.saving.register_keras_serializable(package="demo")
class Net(keras.Model):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dense = keras.layers.Dense(units)

    def call(self, x):
        return self.dense(x)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


model = Net(4)
model.save("net.keras")
