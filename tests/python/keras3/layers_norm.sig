# Keras 3.10 (keras/src/layers/normalization/batch_normalization.py,
# layer_normalization.py): BatchNormalization and LayerNormalization.
# Keras 3.11 added BatchNormalization's renorm, renorm_clipping and
# renorm_momentum (not supported here) and moved LayerNormalization's
# rms_scaling into **kwargs (deprecated); Pasco keeps 3.10's argument.
layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True, beta_initializer="zeros", gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, synchronized=False)
layers.LayerNormalization(axis=-1, epsilon=0.001, center=True, scale=True, rms_scaling=False, beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None)
# Keras's base Layer's trainable (**kwargs): False freezes a BatchNormalization
# (inference mode in training, gamma and beta not trained)
layers.BatchNormalization(*, trainable=True)
