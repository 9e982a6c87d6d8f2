"""Errors from the Python package: bad arguments raise ValueError or
TypeError naming the argument before any C call; the library's errors
raise pasco.PascoError subclasses carrying its message (a bad model, a
worker's dataset error, a missing checkpoint). Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 errors.py DIR"""

import os
import signal
import threading
import time

import pasco

failures = []


def expect(exc, words, fn, *args, **kwargs):
    """fn(*args, **kwargs) must raise exc with every one of words in its
    message."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        missing = [w for w in words if w not in str(e)]
        if missing:
            failures.append(f"{exc.__name__} '{e}' lacks {missing}")
        else:
            print(f"ok: {type(e).__name__}: {e}", flush=True)
        return
    except Exception as e:  # the wrong kind
        failures.append(f"expected {exc.__name__} with {words}, got "
                        f"{type(e).__name__}: {e}")
        return
    failures.append(f"expected {exc.__name__} with {words}, nothing raised")


def chief(cluster):
    d = cluster.argv[1]
    path = os.path.join(d, "t.csv")
    with open(path, "w") as f:
        f.write("a,b,label\n" + "".join(f"{i},{-i},{i % 2}\n"
                                        for i in range(64)))
    L = pasco.layers
    # arguments, named, before C
    expect(ValueError, ["units"], L.Dense, 0)
    expect(ValueError, ["activation", "relu", "'gelu'"], L.Dense, 4,
           activation="gelu")
    expect(ValueError, ["rate"], L.Dropout, 1.5)
    expect(ValueError, ["input_dim"], L.Embedding, 0, 4)
    expect(ValueError, ["dynamic", "'max_rows'"], L.Embedding, 4,
           dynamic={"max_rows": 3})
    expect(TypeError, ["label"], pasco.data.csv, path, label=None)
    expect(ValueError, ["batch_size"], pasco.data.csv, path, label="label",
           batch_size=0)
    expect(ValueError, ["shard"], pasco.data.csv, path, label="label",
           shard="rows")
    expect(TypeError, ["features"], pasco.data.tfrecord, path, features=[])
    expect(ValueError, ["type"], pasco.data.Feature, "bytes")
    expect(ValueError, ["optimizer", "'lion'"], pasco.optimizers.get,
           "lion")
    expect(ValueError, ["learning_rate"], pasco.optimizers.Adam, -1)
    expect(TypeError, ["chief_fn"], pasco.main, 3)
    strategy = pasco.ParameterServerStrategy(cluster)
    data = pasco.data.csv(path, label="label", batch_size=8)
    with strategy.scope():
        model = pasco.Sequential([L.Dense(4, activation="relu"),
                                  L.Dense(2, activation="softmax")])
    expect(RuntimeError, ["compile"], model.fit, data, steps_per_epoch=1)
    expect(ValueError, ["loss", "'categorical_hinge'"], model.compile, "adam",
           loss="categorical_hinge")
    expect(ValueError, ["metrics"], model.compile, "adam",
           loss="mse", metrics=[1])
    expect(ValueError, ["metrics", "'acuracy'", "accuracy, acc"],
           model.compile, "adam", loss="mse", metrics=["acuracy"])
    model.compile("adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    expect(ValueError, ["steps_per_epoch"], model.fit, data)
    expect(ValueError, ["epochs"], model.fit, data, epochs=0,
           steps_per_epoch=1)
    expect(TypeError, ["x"], model.fit, 3, steps_per_epoch=1)
    expect(TypeError, ["callbacks"], model.fit, data, steps_per_epoch=1,
           callbacks=[print])
    # the library's errors, with its message
    with strategy.scope():
        bad = pasco.Sequential([L.Dense(2, activation="sigmoid")])
    bad.compile("sgd", loss="sparse_categorical_crossentropy")
    expect(pasco.InvalidArgumentError, ["sparse_categorical_crossentropy",
                                        "softmax"], bad.fit, data,
           steps_per_epoch=1)
    missing = pasco.data.csv(os.path.join(d, "none-*.csv"), label="label",
                             batch_size=8)
    with strategy.scope():
        m2 = pasco.Sequential([L.Dense(2, activation="softmax",
                                       input_shape=(2,))])
    m2.compile("sgd", loss="sparse_categorical_crossentropy")
    expect(pasco.PascoError, ["no file matches", "none-*.csv"], m2.evaluate,
           missing)
    wrong = pasco.data.csv(path, label="label", columns=["a"], batch_size=8)
    expect(pasco.InvalidArgumentError, ["input is 2 wide", "have 1 feature",
                                        "input_shape=(1,)"], m2.fit, wrong,
           steps_per_epoch=2)
    expect(pasco.NotFoundError, [d], strategy.restore_checkpoint,
           os.path.join(d, "nockpt"), latest=True)

    class Boom(pasco.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyError("boom in a callback")

    expect(KeyError, ["boom"], model.fit, data, steps_per_epoch=2,
           callbacks=[Boom()], verbose=0)
    # Ctrl-C (SIGINT) stops a fit with no Python callback and raises
    # KeyboardInterrupt from it: it did nothing until fit ended, and with
    # a callback it was lost in ctypes and fit failed with "unknown error
    # code". Sent once fit is running (its SIGINT handler is in place).
    def ctrl_c():
        for _ in range(2000):  # 20 s
            if signal.getsignal(signal.SIGINT) is not \
                    signal.default_int_handler:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.01)
        print("errors: FAILED: fit never took SIGINT over", flush=True)
        os._exit(1)  # the fit below would never end

    threading.Thread(target=ctrl_c, daemon=True).start()
    expect(KeyboardInterrupt, [], model.fit, data, epochs=10**6,
           steps_per_epoch=20, verbose=0)
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        failures.append("fit left its SIGINT handler installed")
    expect(ValueError, ["window", ">= 0"], model.fit, data,
           steps_per_epoch=2, window=-1, verbose=0)
    # the strategy still works after all that (with a window of its own)
    h = model.fit(data, epochs=2, steps_per_epoch=4, verbose=0, window=3)
    if len(h.history["loss"]) != 2:
        failures.append(f"fit after the errors: {h.history}")
    # Python help: the layers at the top, documented, typed
    import pydoc
    doc = pydoc.render_doc(pasco.Dense)
    if pasco.Dense is not pasco.layers.Dense or "units" not in doc \
            or "activation" not in doc:
        failures.append("help(pasco.Dense) does not document Dense")
    if not pasco.Sequential.fit.__doc__ or \
            "return" not in str(pasco.Sequential.fit.__annotations__):
        failures.append("Model.fit has no docstring or annotations")
    if failures:
        print("errors: FAILED\n  " + "\n  ".join(failures), flush=True)
        return 1
    print("errors: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
