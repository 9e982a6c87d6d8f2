# Keras 3 (keras/src/metrics: confusion_metrics.py, accuracy_metrics.py,
# regression_metrics.py, probabilistic_metrics.py, reduction_metrics.py):
# the metric objects of issue 33 and those Pasco had before it. Defaults
# are Keras 3's.
metrics.AUC(num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False)
metrics.Precision(thresholds=None, top_k=None, class_id=None, name=None, dtype=None)
metrics.Recall(thresholds=None, top_k=None, class_id=None, name=None, dtype=None)
metrics.TopKCategoricalAccuracy(k=5, name="top_k_categorical_accuracy", dtype=None)
metrics.SparseTopKCategoricalAccuracy(k=5, name="sparse_top_k_categorical_accuracy", dtype=None, from_sorted_ids=False)
metrics.MeanSquaredError(name="mean_squared_error", dtype=None)
metrics.RootMeanSquaredError(name="root_mean_squared_error", dtype=None)
metrics.MeanAbsoluteError(name="mean_absolute_error", dtype=None)
metrics.BinaryCrossentropy(name="binary_crossentropy", dtype=None, from_logits=False, label_smoothing=0)
metrics.Mean(name="mean", dtype=None)
metrics.Sum(name="sum", dtype=None)
metrics.Accuracy(name="accuracy", dtype=None)
metrics.BinaryAccuracy(name="binary_accuracy", dtype=None, threshold=0.5)
metrics.SparseCategoricalAccuracy(name="sparse_categorical_accuracy", dtype=None)
metrics.CategoricalAccuracy(name="categorical_accuracy", dtype=None)
