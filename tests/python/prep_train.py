"""Issue 33's preprocessing layers on a launched cluster, strings read from
CSV: a functional model of StringLookup -> Embedding (city, its
vocabulary adapted on the chief from the CSV dataset), Hashing ->
Embedding (color) and CategoryEncoding -> Dense (bucket), concatenated
into an MLP, trained on C workers reading the string columns of
DIR/train.csv as fingerprints, to a clear accuracy on a deterministic toy
task (the label is the majority of three signals, one per column).
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 prep_train.py DIR"""

import random

import pasco

CITIES = [f"city{k:02d}" for k in range(12)]
COLORS = ["red", "green", "blue", "amber", "violet"]


def label(city, color, bucket):
    votes = (CITIES.index(city) % 2 == 0) + (color in ("red", "blue")) + \
        (bucket >= 2)
    return int(votes >= 2)


def write(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("city,color,bucket,label\n")
        for _ in range(n):
            c, k, b = rng.choice(CITIES), rng.choice(COLORS), rng.randrange(4)
            f.write(f"{c},{k},{b},{label(c, k, b)}\n")


def fail(msg):
    print(f"prep_train: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 prep_train.py DIR")
        return 2
    d = cluster.argv[1]
    write(f"{d}/train.csv", 4000, 1)
    write(f"{d}/eval.csv", 1000, 2)
    feats = {"city": "string", "color": pasco.data.Feature("string"),
             "bucket": "int64"}
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000, features=feats)
    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=250,
                         features=feats)
    strategy = pasco.ParameterServerStrategy(cluster)
    L = pasco.layers
    city = pasco.Input(shape=(1,), name="city", dtype="string")
    color = pasco.Input(shape=(1,), name="color", dtype="string")
    bucket = pasco.Input(shape=(1,), name="bucket", dtype="int64")
    lookup = L.StringLookup()
    ids = lookup(city)
    lookup.adapt(pasco.data.csv(f"{d}/train.csv", label="label",
                                features=feats))
    if sorted(lookup.get_vocabulary()[1:]) != CITIES:
        return fail(f"adapt's vocabulary {lookup.get_vocabulary()}")
    with strategy.scope():
        x = L.Concatenate()([
            L.Embedding(lookup.vocabulary_size(), 8)(ids),
            L.Embedding(64, 8)(L.Hashing(num_bins=64)(color)),
            L.Dense(4)(L.CategoryEncoding(num_tokens=4,
                                          output_mode="one_hot")(bucket))])
        x = L.Dense(16, activation="relu")(x)
        out = L.Dense(2, activation="softmax")(x)
        model = pasco.Model(inputs=[city, color, bucket], outputs=out)
    model.compile(optimizer=pasco.optimizers.Adam(1e-2),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    cfg = model.get_config()["config"]
    sl = [ly for ly in cfg["layers"] if ly["class_name"] == "StringLookup"]
    if [i.get("dtype") for i in cfg["inputs"]] != ["string", "string", None] \
            or sl[0]["config"]["vocabulary"] != lookup.vocabulary:
        return fail(f"the config's inputs {cfg['inputs']} or vocabulary")
    history = model.fit(train, epochs=4, steps_per_epoch=60,
                        validation_data=val)
    acc = history.history["val_accuracy"][-1]
    print("history:", history.history, flush=True)
    if acc < 0.95:
        return fail(f"val_accuracy {acc} < 0.95")
    ev = model.evaluate(val, return_dict=True)
    if abs(ev["accuracy"] - acc) > 1e-9:
        return fail(f"evaluate's accuracy {ev['accuracy']} is not {acc}")
    # a Sequential model that starts with its string Input and lookup
    with strategy.scope():
        seq = pasco.Sequential([
            pasco.Input(shape=(1,), name="city", dtype="string"),
            L.StringLookup(vocabulary=CITIES),
            L.Embedding(len(CITIES) + 1, 4), L.Dense(2, activation="softmax")])
    seq.compile(optimizer=pasco.optimizers.Adam(1e-2),
                loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    only = {"city": "string"}
    h = seq.fit(pasco.data.csv(f"{d}/train.csv", label="label", shuffle=500,
                               features=only), epochs=2, steps_per_epoch=40)
    ev = seq.evaluate(pasco.data.csv(f"{d}/eval.csv", label="label",
                                     batch_size=250, features=only),
                      return_dict=True)
    print(f"sequential: {h.history['accuracy']}, evaluate {ev}", flush=True)
    if ev["accuracy"] < 0.7:  # the city alone gives 3/4 of the labels
        return fail(f"the Sequential model's accuracy {ev['accuracy']}")
    # adapt from a TFRecord file's string and int64 features (read here)
    import numpy as np
    rng = random.Random(4)
    words = [rng.choice(["b", "a", "c"]) for _ in range(50)]
    nums = [rng.choice([7, 8]) for _ in range(50)]
    pasco.data.write_tfrecord(f"{d}/w.tfrecord", {
        "word": np.array(words), "num": np.array(nums)})
    tfr = pasco.data.tfrecord(f"{d}/w.tfrecord", {
        "word": pasco.data.Feature("string"), "num": "int64"})
    sl, il = L.StringLookup(), L.IntegerLookup()
    sl(pasco.Input(shape=(1,), name="word", dtype="string"))
    il(pasco.Input(shape=(1,), name="num", dtype="int64"))
    sl.adapt(tfr)
    il.adapt(tfr)
    want_s = sorted(set(words), key=lambda w: (words.count(w), w),
                    reverse=True)
    want_i = sorted(set(nums), key=lambda v: (nums.count(v), v),
                    reverse=True)
    if sl.vocabulary != want_s or il.vocabulary != want_i:
        return fail(f"tfrecord adapt: {sl.vocabulary} {il.vocabulary}, "
                    f"want {want_s} {want_i}")
    print(f"prep_train: OK val_accuracy {acc:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
