# Keras 3 (keras/src/layers/reshaping, merging, pooling, core,
# embeddings): the shape and merge layers of issue 33, and Embedding's
# mask_zero (by name only: Pasco's Embedding takes its combiner third,
# and input_dim may be None for a dynamic table).
layers.Flatten(data_format=None)
layers.Reshape(target_shape)
layers.Add()
layers.Multiply()
layers.Average()
layers.Dot(axes, normalize=False)
layers.Lambda(function, output_shape=None, mask=None, arguments=None)
layers.GlobalAveragePooling1D(data_format=None, keepdims=False)
layers.Embedding(*, mask_zero=False)
