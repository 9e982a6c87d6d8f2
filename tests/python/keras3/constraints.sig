# Keras 3 (keras/src/constraints, keras/src/layers): issue 33's
# constraints and the layer arguments that take them.
constraints.MaxNorm(max_value=2, axis=0)
constraints.NonNeg()
constraints.get(identifier)
layers.Dense(units, *, kernel_constraint=None, bias_constraint=None)
layers.Embedding(*, embeddings_constraint=None)  # input_dim: optional in Pasco (dynamic tables)
