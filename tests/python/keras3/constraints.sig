# Keras 3 (keras/src/constraints, keras/src/layers): issue 33's
# constraints and the layer arguments that take them.
constraints.MaxNorm(max_value=2, axis=0)
constraints.NonNeg()
constraints.get(identifier)
layers.Dense(units, *, kernel_constraint=None, bias_constraint=None)
layers.Embedding(*, embeddings_constraint=None)  # input_dim: optional in Pasco (dynamic tables)
# Keras's regularizer arguments of Dense (regularizers.L1, L2, L1L2 or
# "l1", "l2", "l1_l2"; activity_regularizer is not taken)
layers.Dense(units, *, kernel_regularizer=None, bias_regularizer=None)
# activity_regularizer (Keras's base Layer's, Dense's and Embedding's) and
# Embedding's embeddings_regularizer
layers.Dense(units, *, activity_regularizer=None)
layers.Embedding(*, embeddings_regularizer=None, activity_regularizer=None)
