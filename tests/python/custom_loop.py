"""A custom training loop from a Python chief (pasco.ClusterCoordinator):
the library's train step "pasco.model_train" scheduled N times on a
per-worker iterator over make_table's DIR/train.csv, then checks:
every loss fetched (a float64 [1] array), the losses decrease, the global step is
exactly N (then N + 10 after one closure of repeat=10), join()/done(),
"pasco.model_evaluate" per shard counts every example of DIR/eval.csv
once, and errors: a bad argument (a number where the iterator goes) is
InvalidArgumentError from join() (raised once) and from fetch(), a
step function no worker has is NotFoundError, a per-worker dataset of
a missing file is InvalidArgumentError (an input that could not be
built) naming the file from fetch(), a Python object as an
argument is TypeError before anything is scheduled; the coordinator
goes on training after each. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 custom_loop.py DIR"""

import numpy as np

import pasco

N = 200


def fail(msg):
    print(f"custom_loop: FAILED: {msg}", flush=True)
    return 1


def expect(exc, what, f):
    """Runs f; the exception of class exc it raises, or None."""
    try:
        f()
    except exc as e:
        print(f"{what}: {type(e).__name__}: {e}", flush=True)
        return e
    except Exception as e:  # noqa: BLE001 - reported as a failure
        print(f"{what}: unexpected {type(e).__name__}: {e}", flush=True)
        return None
    print(f"{what}: nothing raised", flush=True)
    return None


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 custom_loop.py DIR")
        return 2
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    coordinator = pasco.ClusterCoordinator(strategy)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy")
    model.build(train)
    step = strategy.global_step_variable()
    if int(step.numpy()) != 0:
        return fail(f"a fresh cluster's global step is {step.numpy()}")
    it = iter(coordinator.create_per_worker_dataset(train))

    rvs = [coordinator.schedule("pasco.model_train", args=(model, it, step))
           for _ in range(N)]
    coordinator.join()
    if not coordinator.done():
        return fail("done() is False after join()")
    got = [rv.fetch() for rv in rvs]  # the step returns f64 [1]
    if not all(isinstance(x, np.ndarray) and x.dtype == np.float64 and
               x.shape == (1,) and np.isfinite(x[0]) for x in got):
        return fail(f"losses are not finite float64 [1] arrays: {got[:5]}")
    losses = [float(x[0]) for x in got]
    first, last = np.mean(losses[:20]), np.mean(losses[-20:])
    print(f"losses: first 20 mean {first:.4f}, last 20 mean {last:.4f}",
          flush=True)
    if not last < 0.5 * first:
        return fail(f"the loss did not decrease: {first} -> {last}")
    gs = strategy.global_step()
    if gs != N or int(step.numpy()) != N:
        return fail(f"global step {gs} ({step.numpy()}), expected {N}")

    rv = coordinator.schedule("pasco.model_train", args=(model, it, step),
                              repeat=10)
    if rv.fetch().shape != (1,):
        return fail("a repeated step's result is not a loss")
    coordinator.join()
    if strategy.global_step() != N + 10:
        return fail(f"global step {strategy.global_step()} after a closure "
                    f"of 10 steps, expected {N + 10}")

    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=256)
    parts = [coordinator.schedule("pasco.model_evaluate",
                                  args=(model, val.name(1), k, 2))
             for k in range(2)]
    sums = coordinator.fetch(parts)
    examples = sum(int(s[1]) for s in sums)
    with open(f"{d}/eval.csv") as f:
        rows = sum(1 for line in f if line.strip()) - 1
    print(f"evaluate: {sums}, {examples} examples of {rows}", flush=True)
    if examples != rows:
        return fail(f"evaluate's shards counted {examples} examples, the "
                    f"file has {rows}")
    mean_loss = sum(float(s[0]) for s in sums) / examples
    if not mean_loss < first:
        return fail(f"the evaluation loss {mean_loss} is not below the "
                    f"first steps' {first}")

    # A number where the iterator goes: the worker's step rejects it.
    bad = coordinator.schedule("pasco.model_train", args=(model, 3.0, step))
    e = expect(pasco.InvalidArgumentError, "bad argument: join",
               coordinator.join)
    if e is None or "iterator" not in str(e):
        return fail("join() did not raise the step's InvalidArgumentError "
                    "naming the iterator")
    e = expect(pasco.InvalidArgumentError, "bad argument: fetch", bad.fetch)
    if e is None or "iterator" not in str(e) or \
            "pasco.model_train" not in str(e):
        return fail("fetch() did not raise the step's InvalidArgumentError")
    coordinator.join()  # raised once: nothing pending now

    nf = coordinator.schedule("no.such_function", args=(1,))
    if expect(pasco.NotFoundError, "unknown function: fetch",
              nf.fetch) is None:
        return fail("an unknown step function is not NotFoundError")
    expect(pasco.NotFoundError, "unknown function: join", coordinator.join)

    missing = coordinator.create_per_worker_dataset(
        pasco.data.csv(f"{d}/no-such.csv", label="label"))
    mv = coordinator.schedule("pasco.model_train",
                              args=(model, iter(missing), step))
    # the library fails a step whose input could not be built with
    # PASCO_EINVAL, naming the argument and the factory's own error
    e = expect(pasco.InvalidArgumentError, "missing file: fetch", mv.fetch)
    if e is None or "no-such.csv" not in str(e) or \
            "could not be built" not in str(e):
        return fail("a missing file is not InvalidArgumentError naming it")
    expect(pasco.InvalidArgumentError, "missing file: join",
           coordinator.join)

    if expect(TypeError, "object argument", lambda: coordinator.schedule(
            "pasco.model_train", args=(model, object()))) is None:
        return fail("a Python object as an argument is not TypeError")

    before = strategy.global_step()
    again = [coordinator.schedule("pasco.model_train",
                                  args=(model, it, step)) for _ in range(5)]
    coordinator.join()
    [rv.fetch() for rv in again]
    if strategy.global_step() != before + 5:
        return fail(f"after the errors, 5 steps moved the global step from "
                    f"{before} to {strategy.global_step()}")
    print(f"custom_loop: OK global step {strategy.global_step()}",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
