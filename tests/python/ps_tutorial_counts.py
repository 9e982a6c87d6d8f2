"""The parameter-server tutorial's metrics, gathered over the workers,
against the same counts done in one process (issue 32 item 4).

The pipeline, model and steps are examples/ps_tutorial.py's (the
tutorial's, in TensorFlow's names), with each step also returning what it
counted: its labels, its predictions (cast(greater(pred, 0.5), int64))
and the batch's feature ids. Over 2 workers, 12 training steps and 6
evaluation steps:
- the accuracy and eval_accuracy states on the ps ([total, count]) equal
  numpy's count of labels == predictions over every returned batch, and
  result() is their ratio;
- the map ran on the workers: each label is 0 ("yes") exactly where the
  ids hold "avenger"'s (1: StringLookup's id after the OOV index), and
  every batch has the tutorial's size.
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 ps_tutorial_counts.py
Prints "ps_tutorial_counts: OK" or "ps_tutorial_counts: FAILED: why"."""

import random
import sys

import numpy as np

import pasco

TRAIN_STEPS, EVAL_STEPS = 12, 6


def fail(msg):
    print(f"ps_tutorial_counts: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    strategy = pasco.distribute.ParameterServerStrategy(cluster, window=1)
    random.seed(4)
    feature_vocab = [
        "avenger", "ironman", "batman", "hulk", "spiderman", "kingkong",
        "wonder_woman"]
    label_vocab = ["yes", "no"]
    with strategy.scope():
        feature_lookup_layer = pasco.keras.layers.StringLookup(
            vocabulary=feature_vocab, mask_token=None)
        label_lookup_layer = pasco.keras.layers.StringLookup(
            vocabulary=label_vocab, num_oov_indices=0, mask_token=None)
        raw_feature_input = pasco.keras.layers.Input(
            shape=(3,), dtype=pasco.string, name="feature")
        feature_preprocess_stage = pasco.keras.Model(
            {"features": raw_feature_input},
            feature_lookup_layer(raw_feature_input))
        raw_label_input = pasco.keras.layers.Input(
            shape=(1,), dtype=pasco.string, name="label")
        label_preprocess_stage = pasco.keras.Model(
            {"label": raw_label_input}, label_lookup_layer(raw_label_input))

    def feature_and_label_gen(num_examples=200):
        examples = {"features": [], "label": []}
        for _ in range(num_examples):
            features = random.sample(feature_vocab, 3)
            label = ["yes"] if "avenger" in features else ["no"]
            examples["features"].append(features)
            examples["label"].append(label)
        return examples

    def dataset(num_examples, batch):
        return pasco.data.Dataset.from_tensor_slices(
            feature_and_label_gen(num_examples)).map(
                lambda x: (
                    {"features": feature_preprocess_stage(x["features"])},
                    label_preprocess_stage(x["label"])
                )).shuffle(num_examples).repeat().batch(batch)

    with strategy.scope():
        model_input = pasco.keras.layers.Input(
            shape=(3,), dtype=pasco.int64, name="model_input")
        emb_layer = pasco.keras.layers.Embedding(
            input_dim=len(feature_lookup_layer.get_vocabulary()),
            output_dim=64)
        emb_output = pasco.reduce_mean(emb_layer(model_input), axis=1)
        dense_output = pasco.keras.layers.Dense(
            units=1, activation="sigmoid",
            kernel_regularizer=pasco.keras.regularizers.L2(1e-4))(emb_output)
        model = pasco.keras.Model({"features": model_input}, dense_output)
        optimizer = pasco.keras.optimizers.legacy.RMSprop(learning_rate=0.1)
        accuracy = pasco.keras.metrics.Accuracy()
        eval_accuracy = pasco.keras.metrics.Accuracy()

    @pasco.function
    def step_fn(iterator):
        def replica_fn(batch_data, labels):
            with pasco.GradientTape() as tape:
                pred = model(batch_data, training=True)
                per_example_loss = pasco.keras.losses.BinaryCrossentropy(
                    reduction=pasco.keras.losses.Reduction.NONE)(labels, pred)
                loss = pasco.nn.compute_average_loss(per_example_loss)
                loss += pasco.nn.scale_regularization_loss(
                    pasco.add_n(model.losses))
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients,
                                          model.trainable_variables))
            actual_pred = pasco.cast(pasco.greater(pred, 0.5), pasco.int64)
            accuracy.update_state(labels, actual_pred)
            return {"labels": labels, "pred": actual_pred,
                    "ids": batch_data["features"]}
        batch_data, labels = next(iterator)
        return strategy.run(replica_fn, args=(batch_data, labels))

    @pasco.function
    def eval_step(iterator):
        def replica_fn(batch_data, labels):
            pred = model(batch_data, training=False)
            actual_pred = pasco.cast(pasco.greater(pred, 0.5), pasco.int64)
            eval_accuracy.update_state(labels, actual_pred)
            return {"labels": labels, "pred": actual_pred,
                    "ids": batch_data["features"]}
        batch_data, labels = next(iterator)
        return strategy.run(replica_fn, args=(batch_data, labels))

    coordinator = pasco.distribute.coordinator.ClusterCoordinator(strategy)
    train = iter(coordinator.create_per_worker_dataset(
        lambda: dataset(200, 32)))
    evaluation = iter(coordinator.create_per_worker_dataset(
        lambda: dataset(16, 8)))
    for name, metric, step, it, n, batch in (
            ("accuracy", accuracy, step_fn, train, TRAIN_STEPS, 32),
            ("eval_accuracy", eval_accuracy, eval_step, evaluation,
             EVAL_STEPS, 8)):
        metric.reset_states()
        rvs = [coordinator.schedule(step, args=(it,)) for _ in range(n)]
        coordinator.join()
        outs = [rv.fetch() for rv in rvs]
        labels = np.concatenate([o["labels"].reshape(-1) for o in outs])
        pred = np.concatenate([o["pred"].reshape(-1) for o in outs])
        ids = np.concatenate([o["ids"].reshape(-1, 3) for o in outs])
        sizes = {o["labels"].size for o in outs}
        if sizes != {batch}:
            return fail(f"{name}: batches of {sorted(sizes)} "
                        f"examples, expected {batch}")
        want_labels = np.where((ids == 1).any(axis=1), 0, 1)
        if not np.array_equal(labels, want_labels):
            return fail(f"{name}: the labels are not the lookup of "
                        f"the features ({labels[:8]} against "
                        f"{want_labels[:8]})")
        total, count = metric.state.numpy()
        want = [float((labels == pred).sum()), float(labels.size)]
        print(f"ps_tutorial_counts: {name}: the ps holds "
              f"[{total}, {count}], numpy counts {want}", flush=True)
        if [total, count] != want:
            return fail(f"{name}: the ps holds [{total}, {count}], "
                        f"numpy counts {want}")
        if metric.result().numpy() != np.float64(want[0] / want[1]):
            return fail(f"{name}: result() {metric.result()}, "
                        f"numpy {want[0] / want[1]}")
    print("ps_tutorial_counts: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
