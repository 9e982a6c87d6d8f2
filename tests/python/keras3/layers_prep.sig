# Keras 3 (keras/src/layers/preprocessing): the preprocessing layers that run
# inside the model on the worker (issue 33). Defaults are Keras 3's.
layers.Hashing(num_bins, mask_value=None, salt=None, output_mode="int", sparse=False)
layers.StringLookup(max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None, idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None, salt=None)
layers.IntegerLookup(max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False, output_mode="int", sparse=False, pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None)
layers.CategoryEncoding(num_tokens=None, output_mode="multi_hot", sparse=False)
layers.Discretization(bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False, dtype=None, name=None)
layers.HashedCrossing(num_bins, output_mode="int", sparse=False, name=None, dtype=None)
layers.StringLookup.adapt(data, steps=None)
layers.IntegerLookup.adapt(data, steps=None)
layers.Discretization.adapt(data, steps=None)
layers.StringLookup.set_vocabulary(vocabulary, idf_weights=None)
layers.IntegerLookup.set_vocabulary(vocabulary, idf_weights=None)
