"""TensorFlow's parameter-server tutorial, its custom training loop
("Training with a custom training loop" and "Inline evaluation",
distributed), ported to pasco: the same vocabularies and examples, the
same model (an Embedding split over the ps, the mean of its rows, a
sigmoid Dense with L2(1e-4)), RMSprop(0.1), a traced step with a
GradientTape, apply_gradients and an accuracy metric on the ps, 4 epochs
of 5 steps scheduled on a per-worker iterator, then the evaluation
loop's eval_accuracy.

The port changes imports and names, line for line where it can
(``tf.`` -> ``pasco.``/``ops.``); what it cannot keep, and why:
- the preprocessing stages are not mapped over a tf.data dataset (workers
  run no Python): the examples go to TFRecord files that every worker
  reads (pasco.data.tfrecord), the words as strings; the feature
  StringLookup runs inside the model on the workers (the model's input
  is the raw words, dtype "string"), the label StringLookup on the chief,
  called on the labels as they are written;
- tf.reduce_mean over the Embedding's rows is the Embedding's "mean"
  combiner;
- the per-example BinaryCrossentropy and compute_average_loss are
  pasco.losses.binary_crossentropy, which is their batch mean;
- strategy.run / strategy.reduce on one replica per worker are the
  replica function's call and its value;
- result() is a number (no .numpy()).
The original cells are at the end of this file; `python3
examples/ps_tutorial.py --diff` prints how many lines differ.

Run on every task (the chief trains; the ps and workers serve in C):
    pasco launch --ps 2 --workers 2 -- python3 examples/ps_tutorial.py [DIR]
DIR (default: a new temporary directory) holds the TFRecord files; every
task must see it at the same path.
"""

import os
import random
import sys
import tempfile

import pasco
from pasco import ops


def chief(cluster):
    d = cluster.argv[1] if len(cluster.argv) > 1 else tempfile.mkdtemp(
        prefix="ps_tutorial-")
    random.seed(3)  # the original draws unseeded
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.ClusterCoordinator(strategy)

    feature_vocab = [
        "avenger", "ironman", "batman", "hulk", "spiderman", "kingkong", "wonder_woman"
    ]
    label_vocab = ["yes", "no"]

    with strategy.scope():
        feature_lookup_layer = pasco.layers.StringLookup(
            vocabulary=feature_vocab,
            mask_token=None)
        label_lookup_layer = pasco.layers.StringLookup(
            vocabulary=label_vocab,
            num_oov_indices=0,
            mask_token=None)

        raw_feature_input = pasco.layers.Input(
            shape=(3,),
            dtype="string",
            name="features")
        feature_id_input = feature_lookup_layer(raw_feature_input)

        label_preprocess_stage = label_lookup_layer  # on the chief

    def feature_and_label_gen(num_examples=200):
        examples = {"features": [], "label": []}
        for _ in range(num_examples):
            features = random.sample(feature_vocab, 3)
            label = ["yes"] if "avenger" in features else ["no"]
            examples["features"].append(features)
            examples["label"].append(label)
        return examples

    examples = feature_and_label_gen()

    def write(name, examples):  # the words; the labels looked up
        pasco.data.write_tfrecord(os.path.join(d, name), {
            "features": examples["features"],
            "label": label_preprocess_stage(examples["label"])})
        return os.path.join(d, name)

    train_file = write("train.tfrecord", examples)

    def dataset_fn(_):
        train_dataset = pasco.data.tfrecord(
            train_file, {"features": pasco.data.Feature("string", 3)},
            label="label",
            shuffle=200, batch_size=32, repeat=-1, shard="none")
        return train_dataset

    # These variables created under the `Strategy.scope` will be placed on parameter
    # servers in a round-robin fashion.
    with strategy.scope():
        # Create the model. The input needs to be compatible with Keras processing layers.
        # (Its input is the words: the feature lookup runs in it.)
        emb_layer = pasco.layers.Embedding(
            input_dim=len(feature_lookup_layer.get_vocabulary()), output_dim=16384, num_shards=2)
        emb_output = emb_layer(feature_id_input)  # combiner "mean": tf.reduce_mean(..., axis=1)
        dense_output = pasco.layers.Dense(
            units=1, activation="sigmoid",
            kernel_regularizer=1e-4,
        )(emb_output)
        model = pasco.Model(raw_feature_input, dense_output)

        optimizer = pasco.optimizers.RMSprop(learning_rate=0.1)
        accuracy = pasco.metrics.Accuracy()

    @pasco.function
    def step_fn(iterator):

        def replica_fn(batch_data, labels):
            with pasco.GradientTape() as tape:
                pred = model(batch_data, training=True)
                loss = pasco.losses.binary_crossentropy(labels, pred)
                model_losses = model.losses
                if model_losses:
                    loss += sum(model_losses)
            gradients = tape.gradient(loss, model.trainable_variables)

            optimizer.apply_gradients(zip(gradients, model.trainable_variables))

            actual_pred = ops.cast(ops.greater(pred, 0.5), "int64")
            accuracy.update_state(labels, actual_pred)
            return loss

        batch_data, labels = next(iterator)
        losses = replica_fn(batch_data, labels)
        return losses

    per_worker_dataset = coordinator.create_per_worker_dataset(dataset_fn(None))
    per_worker_iterator = iter(per_worker_dataset)

    num_epochs = 4
    steps_per_epoch = 5
    for i in range(num_epochs):
        accuracy.reset_states()
        for _ in range(steps_per_epoch):
            coordinator.schedule(step_fn, args=(per_worker_iterator,))
        # Wait at epoch boundaries.
        coordinator.join()
        print("Finished epoch %d, accuracy is %f." % (i, accuracy.result()))

    loss = coordinator.schedule(step_fn, args=(per_worker_iterator,))
    print("Final loss is %f" % loss.fetch())

    with strategy.scope():
        # Define the eval metric on parameter servers.
        eval_accuracy = pasco.metrics.Accuracy()

    @pasco.function
    def eval_step(iterator):
        def replica_fn(batch_data, labels):
            pred = model(batch_data, training=False)
            actual_pred = ops.cast(ops.greater(pred, 0.5), "int64")
            eval_accuracy.update_state(labels, actual_pred)
        batch_data, labels = next(iterator)
        replica_fn(batch_data, labels)

    def eval_dataset_fn():
        return pasco.data.tfrecord(
            write("eval.tfrecord", feature_and_label_gen(num_examples=16)),
            {"features": pasco.data.Feature("string", 3)}, label="label",
            shuffle=16, repeat=-1, batch_size=8,
            shard="none")

    per_worker_eval_dataset = coordinator.create_per_worker_dataset(eval_dataset_fn())
    per_worker_eval_iterator = iter(per_worker_eval_dataset)

    eval_steps_per_epoch = 2
    for _ in range(eval_steps_per_epoch):
        coordinator.schedule(eval_step, args=(per_worker_eval_iterator,))
    coordinator.join()
    print("Evaluation accuracy: %f" % eval_accuracy.result())
    return 0


# The original's cells (TensorFlow's tutorial, "custom training loop" and
# the distributed inline evaluation), for `--diff`:
ORIGINAL = '''
feature_vocab = [
    "avenger", "ironman", "batman", "hulk", "spiderman", "kingkong", "wonder_woman"
]
label_vocab = ["yes", "no"]

with strategy.scope():
    feature_lookup_layer = tf.keras.layers.StringLookup(
        vocabulary=feature_vocab,
        mask_token=None)
    label_lookup_layer = tf.keras.layers.StringLookup(
        vocabulary=label_vocab,
        num_oov_indices=0,
        mask_token=None)

    raw_feature_input = tf.keras.layers.Input(
        shape=(3,),
        dtype=tf.string,
        name="feature")
    feature_id_input = feature_lookup_layer(raw_feature_input)
    feature_preprocess_stage = tf.keras.Model(
        {"features": raw_feature_input},
        feature_id_input)

    raw_label_input = tf.keras.layers.Input(
        shape=(1,),
        dtype=tf.string,
        name="label")
    label_id_input = label_lookup_layer(raw_label_input)

    label_preprocess_stage = tf.keras.Model(
        {"label": raw_label_input},
        label_id_input)

def feature_and_label_gen(num_examples=200):
    examples = {"features": [], "label": []}
    for _ in range(num_examples):
        features = random.sample(feature_vocab, 3)
        label = ["yes"] if "avenger" in features else ["no"]
        examples["features"].append(features)
        examples["label"].append(label)
    return examples

examples = feature_and_label_gen()

def dataset_fn(_):
    raw_dataset = tf.data.Dataset.from_tensor_slices(examples)

    train_dataset = raw_dataset.map(
        lambda x: (
            {"features": feature_preprocess_stage(x["features"])},
            label_preprocess_stage(x["label"])
        )).shuffle(200).batch(32).repeat()
    return train_dataset

# These variables created under the `Strategy.scope` will be placed on parameter
# servers in a round-robin fashion.
with strategy.scope():
    # Create the model. The input needs to be compatible with Keras processing layers.
    model_input = tf.keras.layers.Input(
        shape=(3,), dtype=tf.int64, name="model_input")

    emb_layer = tf.keras.layers.Embedding(
        input_dim=len(feature_lookup_layer.get_vocabulary()), output_dim=16384)
    emb_output = tf.reduce_mean(emb_layer(model_input), axis=1)
    dense_output = tf.keras.layers.Dense(
        units=1, activation="sigmoid",
        kernel_regularizer=tf.keras.regularizers.L2(1e-4),
    )(emb_output)
    model = tf.keras.Model({"features": model_input}, dense_output)

    optimizer = tf.keras.optimizers.legacy.RMSprop(learning_rate=0.1)
    accuracy = tf.keras.metrics.Accuracy()

@tf.function
def step_fn(iterator):

    def replica_fn(batch_data, labels):
        with tf.GradientTape() as tape:
            pred = model(batch_data, training=True)
            per_example_loss = tf.keras.losses.BinaryCrossentropy(
                reduction=tf.keras.losses.Reduction.NONE)(labels, pred)
            loss = tf.nn.compute_average_loss(per_example_loss)
            model_losses = model.losses
            if model_losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
        gradients = tape.gradient(loss, model.trainable_variables)

        optimizer.apply_gradients(zip(gradients, model.trainable_variables))

        actual_pred = tf.cast(tf.greater(pred, 0.5), tf.int64)
        accuracy.update_state(labels, actual_pred)
        return loss

    batch_data, labels = next(iterator)
    losses = strategy.run(replica_fn, args=(batch_data, labels))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

@tf.function
def per_worker_dataset_fn():
    return strategy.distribute_datasets_from_function(dataset_fn)

per_worker_dataset = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
per_worker_iterator = iter(per_worker_dataset)

num_epochs = 4
steps_per_epoch = 5
for i in range(num_epochs):
    accuracy.reset_states()
    for _ in range(steps_per_epoch):
        coordinator.schedule(step_fn, args=(per_worker_iterator,))
    # Wait at epoch boundaries.
    coordinator.join()
    print("Finished epoch %d, accuracy is %f." % (i, accuracy.result().numpy()))

loss = coordinator.schedule(step_fn, args=(per_worker_iterator,))
print("Final loss is %f" % loss.fetch())

with strategy.scope():
    # Define the eval metric on parameter servers.
    eval_accuracy = tf.keras.metrics.Accuracy()

@tf.function
def eval_step(iterator):
    def replica_fn(batch_data, labels):
        pred = model(batch_data, training=False)
        actual_pred = tf.cast(tf.greater(pred, 0.5), tf.int64)
        eval_accuracy.update_state(labels, actual_pred)
    batch_data, labels = next(iterator)
    strategy.run(replica_fn, args=(batch_data, labels))

def eval_dataset_fn():
    return tf.data.Dataset.from_tensor_slices(
        feature_and_label_gen(num_examples=16)).map(
            lambda x: (
                {"features": feature_preprocess_stage(x["features"])},
                label_preprocess_stage(x["label"])
            )).shuffle(16).repeat().batch(8)

per_worker_eval_dataset = coordinator.create_per_worker_dataset(eval_dataset_fn)
per_worker_eval_iterator = iter(per_worker_eval_dataset)

eval_steps_per_epoch = 2
for _ in range(eval_steps_per_epoch):
    coordinator.schedule(eval_step, args=(per_worker_eval_iterator,))
coordinator.join()
print("Evaluation accuracy: %f" % eval_accuracy.result())
'''


def diff() -> int:
    """How many of the original's lines the port changed: the port's
    chief (dedented) against ORIGINAL, line by line (difflib)."""
    import difflib
    import inspect
    import textwrap
    port = textwrap.dedent("\n".join(
        inspect.getsource(chief).splitlines()[1:])).splitlines()
    orig = ORIGINAL.strip("\n").splitlines()
    strip = [l for l in orig if l.strip()]
    ported = [l for l in port if l.strip()]
    sm = difflib.SequenceMatcher(a=strip, b=ported, autojunk=False)
    same = sum(b.size for b in sm.get_matching_blocks())
    print(f"ps_tutorial: {len(strip)} original lines, {same} kept as they "
          f"are, {len(strip) - same} changed or removed; the port has "
          f"{len(ported) - same} lines of its own", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--diff"]:
        raise SystemExit(diff())
    raise SystemExit(pasco.main(chief))
