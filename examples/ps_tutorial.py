"""TensorFlow's parameter-server tutorial, its custom training loop
("Training with a custom training loop" and "Inline evaluation",
distributed), ported to pasco by names only: the original's cells (the
ORIGINAL string at the end of this file) with TensorFlow's names written
as Pasco's (docs/tensorflow-port.md's name table, NAMES below: tf.keras
-> pasco.keras, tf.data -> pasco.data, tf.distribute ->
pasco.distribute, tf.nn -> pasco.nn, tf.function -> pasco.function,
tf.GradientTape -> pasco.GradientTape, tf.string / tf.int64 ->
pasco.string / pasco.int64, tf.reduce_mean, tf.add_n, tf.cast,
tf.greater -> pasco.*), in the original's order. The data pipeline's
map (the two lookup models) is traced on the chief and runs on the
workers in C; the steps are traced once and run there too; the metrics'
state is on the ps.

What the port adds, and why (no original line changes beyond names):
- ``def chief(cluster):`` and ``return 0``: a Pasco program runs the same
  script on every task; ``pasco.main(chief)`` runs this on the chief
  while the ps and workers serve (the tutorial starts in-process servers
  before these cells);
- ``strategy = pasco.distribute.ParameterServerStrategy(cluster,
  window=1)``: the tutorial's set-up cell (its cluster resolver and
  variable partitioner) is Pasco's cluster entry; window=1 is
  TensorFlow's one step in flight per worker;
- ``random.seed(3)``: the original draws unseeded; seeded, a run is
  repeatable.
``python3 examples/ps_tutorial.py --diff`` prints how many of the
original's lines differ as they are, and after the name table.

Run on every task (the chief trains; the ps and workers serve in C):
    pasco launch --ps 2 --workers 2 -- python3 examples/ps_tutorial.py
"""

import random
import re
import sys

import pasco


def chief(cluster):
    strategy = pasco.distribute.ParameterServerStrategy(cluster, window=1)
    random.seed(3)  # the original draws unseeded

    feature_vocab = [
        "avenger", "ironman", "batman", "hulk", "spiderman", "kingkong", "wonder_woman"
    ]
    label_vocab = ["yes", "no"]

    with strategy.scope():
        feature_lookup_layer = pasco.keras.layers.StringLookup(
            vocabulary=feature_vocab,
            mask_token=None)
        label_lookup_layer = pasco.keras.layers.StringLookup(
            vocabulary=label_vocab,
            num_oov_indices=0,
            mask_token=None)

        raw_feature_input = pasco.keras.layers.Input(
            shape=(3,),
            dtype=pasco.string,
            name="feature")
        feature_id_input = feature_lookup_layer(raw_feature_input)
        feature_preprocess_stage = pasco.keras.Model(
            {"features": raw_feature_input},
            feature_id_input)

        raw_label_input = pasco.keras.layers.Input(
            shape=(1,),
            dtype=pasco.string,
            name="label")
        label_id_input = label_lookup_layer(raw_label_input)

        label_preprocess_stage = pasco.keras.Model(
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
        raw_dataset = pasco.data.Dataset.from_tensor_slices(examples)

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
        model_input = pasco.keras.layers.Input(
            shape=(3,), dtype=pasco.int64, name="model_input")

        emb_layer = pasco.keras.layers.Embedding(
            input_dim=len(feature_lookup_layer.get_vocabulary()), output_dim=16384)
        emb_output = pasco.reduce_mean(emb_layer(model_input), axis=1)
        dense_output = pasco.keras.layers.Dense(
            units=1, activation="sigmoid",
            kernel_regularizer=pasco.keras.regularizers.L2(1e-4),
        )(emb_output)
        model = pasco.keras.Model({"features": model_input}, dense_output)

        optimizer = pasco.keras.optimizers.legacy.RMSprop(learning_rate=0.1)
        accuracy = pasco.keras.metrics.Accuracy()

    @pasco.function
    def step_fn(iterator):

        def replica_fn(batch_data, labels):
            with pasco.GradientTape() as tape:
                pred = model(batch_data, training=True)
                per_example_loss = pasco.keras.losses.BinaryCrossentropy(
                    reduction=pasco.keras.losses.Reduction.NONE)(labels, pred)
                loss = pasco.nn.compute_average_loss(per_example_loss)
                model_losses = model.losses
                if model_losses:
                    loss += pasco.nn.scale_regularization_loss(pasco.add_n(model_losses))
            gradients = tape.gradient(loss, model.trainable_variables)

            optimizer.apply_gradients(zip(gradients, model.trainable_variables))

            actual_pred = pasco.cast(pasco.greater(pred, 0.5), pasco.int64)
            accuracy.update_state(labels, actual_pred)
            return loss

        batch_data, labels = next(iterator)
        losses = strategy.run(replica_fn, args=(batch_data, labels))
        return strategy.reduce(pasco.distribute.ReduceOp.SUM, losses, axis=None)

    coordinator = pasco.distribute.coordinator.ClusterCoordinator(strategy)

    @pasco.function
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
        eval_accuracy = pasco.keras.metrics.Accuracy()

    @pasco.function
    def eval_step(iterator):
        def replica_fn(batch_data, labels):
            pred = model(batch_data, training=False)
            actual_pred = pasco.cast(pasco.greater(pred, 0.5), pasco.int64)
            eval_accuracy.update_state(labels, actual_pred)
        batch_data, labels = next(iterator)
        strategy.run(replica_fn, args=(batch_data, labels))

    def eval_dataset_fn():
        return pasco.data.Dataset.from_tensor_slices(
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


# The name table (docs/tensorflow-port.md): TensorFlow's names -> Pasco's,
# applied in this order to the original's lines by --diff.
NAMES = [(r"\btf\.keras\.", "pasco.keras."), (r"\btf\.data\.", "pasco.data."),
         (r"\btf\.distribute\.", "pasco.distribute."),
         (r"\btf\.nn\.", "pasco.nn."),
         (r"\btf\.function\b", "pasco.function"),
         (r"\btf\.GradientTape\b", "pasco.GradientTape"),
         (r"\btf\.(string|int64|int32|float32|float64)\b", r"pasco.\1"),
         (r"\btf\.(reduce_mean|reduce_sum|add_n|cast|greater)\b",
          r"pasco.\1")]


def renamed(line):
    """line with TensorFlow's names written as Pasco's (NAMES)."""
    for pattern, repl in NAMES:
        line = re.sub(pattern, repl, line)
    return line


def diff() -> int:
    """How many of the original's lines the port changed: the port's
    chief (dedented) against ORIGINAL, line by line (difflib), as they
    are and after the name table (NAMES)."""
    import difflib
    import inspect
    import textwrap
    port = textwrap.dedent("\n".join(
        inspect.getsource(chief).splitlines()[1:])).splitlines()
    orig = [line for line in ORIGINAL.strip("\n").splitlines()
            if line.strip()]
    ported = [line for line in port if line.strip()]
    for what, lines in (("as they are", orig),
                        ("after the name table", [renamed(line)
                                                  for line in orig])):
        sm = difflib.SequenceMatcher(a=lines, b=ported, autojunk=False)
        same = sum(b.size for b in sm.get_matching_blocks())
        print(f"ps_tutorial: {len(lines)} original lines, {what}: {same} "
              f"the same, {len(lines) - same} changed or removed; the port "
              f"has {len(ported) - same} lines of its own", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--diff"]:
        raise SystemExit(diff())
    raise SystemExit(pasco.main(chief))
