"""examples/mlp_csv.c in Python: an MLP on DIR/train.csv and DIR/eval.csv
(from examples/make_table), fit with validation, a checkpoint each epoch
and a callback of your own. The same script on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/mlp_csv.py DIR
(from a checkout, not installed: PYTHONPATH=python build/pasco launch ...)"""
import pasco


class PrintAccuracy(pasco.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch}: val_accuracy {logs['val_accuracy']:.4f}")


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)  # each worker reads its share
    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=256)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train, epochs=5, steps_per_epoch=100,
                        validation_data=val, verbose=0, callbacks=[
                            pasco.callbacks.ModelCheckpoint(d),
                            PrintAccuracy()])
    print("evaluate:", model.evaluate(val, return_dict=True))
    return 0 if history.history["val_accuracy"][-1] >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))  # chief, worker or ps
