# Keras 3 (keras/src/layers, keras/src/optimizers, keras/src/regularizers):
# the layers, optimizers and regularizers Pasco had before issue 33.
layers.Dense(units, activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros")
layers.Dropout(rate, noise_shape=None, seed=None)
layers.Activation(activation)
layers.Concatenate(axis=-1)
optimizers.SGD(learning_rate=0.01, momentum=0.0, nesterov=False)
optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07, amsgrad=False)
optimizers.Adagrad(learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-07)
optimizers.RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-07, centered=False)
regularizers.L2(l2=0.01)
regularizers.L1(l1=0.01)
regularizers.L1L2(l1=0.0, l2=0.0)
