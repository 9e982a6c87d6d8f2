"""The Python chief of the Python-chief benchmark (bench/python_chief.py
runs it alternately with build/bench/python_chief, the same chief in C):
examples/mlp_csv's MLP (64-64-64-10, Adam 1e-3) fit for N steps on
DIR/train.csv (batch 32, shuffle 1000), no validation, no display. Prints
    python_chief: python N steps WALL_S s CPU_S s
WALL_S the wall time of model.fit, CPU_S this process's CPU time
(time.process_time: CLOCK_PROCESS_CPUTIME_ID) over it.
    pasco launch --ps 2 --workers 2 -- python3 bench/python_chief_fit.py DIR N
"""
import time

import pasco


def chief(cluster):
    if cluster is None or len(cluster.argv) != 3:
        print("usage: pasco launch ... -- python3 python_chief_fit.py DIR N")
        return 2
    d, steps = cluster.argv[1], int(cluster.argv[2])
    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.build(train)  # the variables, as the C chief creates them first
    wall, cpu = time.monotonic(), time.process_time()
    model.fit(train, epochs=1, steps_per_epoch=steps, verbose=0)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    print(f"python_chief: python {steps} steps {wall:.6f} s {cpu:.6f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
