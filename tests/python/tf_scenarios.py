"""TensorFlow's coordinator scenarios on datasets and strategy.run, ported
from its cluster_coordinator_test.py and parameter_server_strategy_v2
tests with their asserted outcomes (docs/TF_SCENARIOS.md gives each row
its function here; run_test.py's tf_scenarios case, 2 ps and 2 workers):

19 input_function_with_map (a function and a dataset): range(10).map(+10)
   gives 10 first, the map traced once.
23 disallow_remote_value_as_input: a RemoteValue as an argument of
   schedule is a ValueError (a traced step's and a name's).
24 python_function_not_allowed_to_schedule: a plain Python function is a
   TypeError (Pasco's message).
25 dataset_partially_created_on_coordinator: TensorFlow's join raises
   ClosureInputError (a dataset made on the coordinator cannot be copied
   to a worker); a pasco dataset is a description of files every worker
   reads, so the capture works: the element is one of range(1, 10).
26 pass_dataset_to_create_per_worker_dataset: range(1, 11).batch(4)
   given as a dataset: the first element is [1, 2, 3, 4].
27 multiple_datasets: next of range(0, 5) plus next of range(5, 10) is
   5; a third iterator with the second reused: >= 5.
28 repeated_iterator_creation: 10 rounds of 2 new iterators, 11
   schedules and a join, each result >= 2; then no iterator object is
   alive (weak references) and no temporary directory of a dataset is
   left once the datasets are dropped, also over 10 rounds that make new
   datasets each time.
38/88 run_not_used_with_cluster_coordinator_schedule and
   run/reduce_not_used_with_cluster_coordinator: strategy.run and
   strategy.reduce on the chief log TensorFlow's warning word for word on
   stderr, before and after a schedule, and still work; a traced step's
   run logs nothing; the scheduled run gives (2, 0).
40/41 run_and_reduce (with_assign_add): run then reduce SUM in a step,
   in and out of strategy.scope(): (4, 2); the replica's += 3 twice: 6.
44/45 distributed_dataset_inside_per_worker_dataset_fn and
   pass_distributed_dataset_to_create_per_worker_dataset (from a function
   and not): the first batch of range(1, 11).batch(4), per replica.
46 distribute_datasets_from_function: the dataset_fn gets an
   InputContext (not None); the first element per replica is [1].
47 async_schedule_with_distributed_dataset: join with nothing scheduled
   returns, 5 steps adding reduce MEAN of [2.] give 10, 5 more and 3
   joins give 20 and done().
48 input_function_with_map_with_distributed_dataset: values 10.., the map
   traced once.
49 per_worker_distribute_datasets_element_spec: the per-worker dataset's
   element_spec is the dataset's.
50 per_worker_distributed_iterator_type_spec: tracing the step with the
   iterator before scheduling it traces neither the dataset_fn nor the
   step again.
57 dataset_creation_failure_with_dataset (a launch of its own, with
   --restart): worker 0 killed while iterators of a dataset object are
   made and steps scheduled; join succeeds, >= 12 steps counted.
89 distribute_dataset_used_directly: iter() of a distributed dataset on
   the chief raises ValueError, from experimental_distribute_dataset and
   from distribute_datasets_from_function.
Pasco's graph arithmetic is on floats: the ports cast TensorFlow's int64
values before adding them (ops.cast(x, "float32") + 10).
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 tf_scenarios.py [NAME...]
    pasco launch --restart --ps 2 --workers 2 -- python3 tf_scenarios.py \
        dataset_creation_failure_with_dataset
(NAME: only the scenarios of those functions.)
Prints "tf_scenarios: OK" or "tf_scenarios: FAILED: why" (exit 1)."""

import contextlib
import gc
import glob
import io
import os
import tempfile
import weakref

import numpy as np

import pasco
from pasco import ops
from pasco.data import Dataset
from task_proc import worker_pid

NOT_SCHEDULED = (
    "A `tf.distribute.experimental.ParameterServerStrategy` method is "
    "invoked without using `ClusterCoordinator.schedule`. If you are not "
    "tracing a tf.function, this method is possibly executed on the "
    "coordinator, which can be slow. To properly dispatch functions to "
    "run on workers, methods like `run` or `reduce` should be used within "
    "a function passed to `tf.distribute.experimental.coordinator."
    "ClusterCoordinator.schedule`.")


@pasco.function
def first(iterator):
    return next(iterator)


def same(what, got, want):
    got = np.asarray(got).tolist()
    return None if got == want else f"{what}: got {got}, want {want}"


def input_function_with_map(strategy, coordinator):  # 19
    for kind in ("function", "dataset"):
        traces = [0]

        def map_fn(x):
            traces[0] += 1
            return ops.cast(x, "float32") + 10

        def input_fn():
            return Dataset.range(10).batch(1).map(map_fn)

        arg = input_fn if kind == "function" else input_fn()
        it = iter(coordinator.create_per_worker_dataset(arg))
        why = same(f"{kind}: first element",
                   coordinator.schedule(first, args=(it,)).fetch(), [10])
        if why or traces[0] != 1:
            return why or f"{kind}: map_fn traced {traces[0]} times"
    return None


def disallow_remote_value_as_input(strategy, coordinator):  # 23
    @pasco.function
    def func_0(x):
        return x + 1.0

    @pasco.function
    def func_1(x):
        return x + 1.0

    remote_v = coordinator.schedule(func_0, args=(0.0,))
    for fn in (func_1, "pasco.graph_step"):
        try:
            coordinator.schedule(fn, args=(remote_v,))
        except ValueError as e:
            if str(e) != ("args[0]: a RemoteValue is not an argument of "
                          "schedule: fetch() it and pass its value"):
                return f"{fn}: {str(e)!r}"
            continue
        return f"{fn}: a RemoteValue argument was scheduled"
    return same("func_0", remote_v.fetch(), 1.0)


def python_function_not_allowed_to_schedule(strategy, coordinator):  # 24
    def func(a):
        return a

    try:
        coordinator.schedule(func, args=(1,))
    except TypeError as e:
        if not str(e).startswith("fn: expected a step function's name or "
                                 "a @pasco.function, got <function "):
            return f"the message {str(e)!r}"
        return None
    return "a plain Python function was scheduled"


def dataset_partially_created_on_coordinator(strategy, coordinator):  # 25
    dataset = Dataset.range(1, 10)

    @pasco.function
    def input_fn():
        return dataset.shuffle(9).batch(1)

    @pasco.function
    def worker_fn(iterator):
        x = next(iterator)
        return x

    per_worker_dataset = coordinator.create_per_worker_dataset(input_fn)
    rv = coordinator.schedule(worker_fn, args=(iter(per_worker_dataset),))
    coordinator.join()  # TensorFlow's raises ClosureInputError here
    got = rv.fetch().tolist()
    if len(got) != 1 or not 1 <= got[0] <= 9:
        return f"a captured dataset's element: {got}"
    return None


def pass_dataset_to_create_per_worker_dataset(strategy, coordinator):  # 26
    dataset = Dataset.range(1, 11).batch(4)

    @pasco.function
    def worker_fn(iterator):
        return next(iterator)

    per_worker_dataset = coordinator.create_per_worker_dataset(dataset)
    result = coordinator.schedule(worker_fn,
                                  args=(iter(per_worker_dataset),))
    return same("the first batch", result.fetch(), [1, 2, 3, 4])


@pasco.function
def sum_two(iterator1, iterator2):
    return ops.cast(next(iterator1), "float32") + \
        ops.cast(next(iterator2), "float32")


def multiple_datasets(strategy, coordinator):  # 27
    def input_fn1():
        return Dataset.range(0, 5).batch(1)

    def input_fn2():
        return Dataset.range(5, 10).batch(1)

    per_worker_iterator1 = iter(coordinator.create_per_worker_dataset(
        input_fn1))
    per_worker_iterator2 = iter(coordinator.create_per_worker_dataset(
        input_fn2))
    result = coordinator.schedule(
        sum_two, args=(per_worker_iterator1, per_worker_iterator2))
    why = same("0 + 5", result.fetch(), [5])
    if why:
        return why
    per_worker_iterator3 = iter(coordinator.create_per_worker_dataset(
        input_fn1))
    result = coordinator.schedule(
        sum_two, args=(per_worker_iterator3, per_worker_iterator2))
    got = result.fetch().tolist()
    return None if got[0] >= 5 else f"a third iterator: {got} < 5"


def slice_dirs():
    return set(glob.glob(os.path.join(tempfile.gettempdir(),
                                      "pasco-slices-*")))


def repeated_iterator_creation(strategy, coordinator):  # 28
    before = slice_dirs()

    def input_fn():
        return Dataset.range(1, 100).batch(1)

    per_worker_dataset1 = coordinator.create_per_worker_dataset(input_fn)
    per_worker_dataset2 = coordinator.create_per_worker_dataset(input_fn)
    refs = []
    for r in range(10):
        per_worker_iterator1 = iter(per_worker_dataset1)
        per_worker_iterator2 = iter(per_worker_dataset2)
        refs += [weakref.ref(per_worker_iterator1),
                 weakref.ref(per_worker_iterator2)]
        result = coordinator.schedule(
            sum_two, args=(per_worker_iterator1, per_worker_iterator2))
        for _ in range(10):
            coordinator.schedule(
                sum_two, args=(per_worker_iterator1, per_worker_iterator2))
        coordinator.join()
        if result.fetch()[0] < 2:
            return f"round {r}: {result.fetch()} < 2"
    del per_worker_iterator1, per_worker_iterator2
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    if alive:
        return f"{alive} per-worker iterators alive after the rounds"
    held = [r for r in strategy._resources
            if isinstance(r, pasco.coordinator.PerWorkerIterator)]
    if held:
        return f"the strategy still holds {len(held)} iterators"
    if len(slice_dirs() - before) != 2:
        return f"{sorted(slice_dirs() - before)}: want the 2 datasets' dirs"
    del per_worker_dataset1, per_worker_dataset2
    gc.collect()
    if slice_dirs() - before:
        return f"{sorted(slice_dirs() - before)} left after the datasets"
    # new datasets each round too: nothing of a round is left after it
    for r in range(10):
        pw1 = coordinator.create_per_worker_dataset(input_fn)
        pw2 = coordinator.create_per_worker_dataset(input_fn)
        result = coordinator.schedule(sum_two, args=(iter(pw1), iter(pw2)))
        coordinator.join()
        gc.collect()
        new = slice_dirs() - before
        if result.fetch()[0] < 2 or len(new) != 2:
            return (f"new datasets, round {r}: {result.fetch()}, "
                    f"{len(new)} dataset dirs (want 2: this round's)")
    del pw1, pw2
    gc.collect()
    return None if not slice_dirs() - before else \
        f"{sorted(slice_dirs() - before)} left after the rounds"


def warned(fn):
    """fn()'s value and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        value = fn()
    return value, err.getvalue()


def variable_of_one(name):
    """A float64 [1] variable on a ps holding 1 (a Sum metric's state):
    Pasco's Python has no tf.Variable of its own, and a step cannot read
    an int64 variable (the worker's tape refuses to watch it)."""
    m = pasco.metrics.Sum(name=name)
    m.update_state(np.array([1.0]))
    return m.state


def run_not_used_with_schedule(strategy, coordinator):  # 38, 88
    def input_fn():
        return Dataset.range(1, 3).batch(1)

    v = variable_of_one("v38")

    def replica_fn(input_tensor, v):  # numpy on the chief, traced in steps
        return input_tensor + v, input_tensor - v

    @pasco.function
    def worker_fn(iterator, v):
        return strategy.run(replica_fn, args=(
            ops.cast(next(iterator), "float32"),
            ops.sum(ops.cast(v, "float32"))))

    per_worker_dataset = coordinator.create_per_worker_dataset(input_fn)
    value, err = warned(lambda: strategy.run(
        replica_fn, args=(np.float32(1), np.float32(v.numpy()[0]))))
    if NOT_SCHEDULED not in err or value != (2, 0):
        return f"run on the chief: {value}, stderr {err!r}"
    rv, err = warned(lambda: coordinator.schedule(
        worker_fn, args=(iter(per_worker_dataset), v)))
    if err:
        return f"a traced step's run wrote {err!r}"
    _, err = warned(lambda: strategy.run(
        replica_fn, args=(np.float32(1), np.float32(v.numpy()[0]))))
    if NOT_SCHEDULED not in err:
        return f"run after a schedule: stderr {err!r}"
    got = strategy.experimental_local_results(rv.fetch())
    if np.asarray(got).tolist() != [[[2], [0]]]:
        return f"the scheduled run: {got}, want (([2], [0]),)"
    value, err = warned(lambda: strategy.reduce("SUM", None, axis=None))
    if err.count(NOT_SCHEDULED) != 1 or value is not None:
        return f"reduce on the chief: {value}, stderr {err!r}"
    value, err = warned(lambda: pasco.distribute.reduce(
        "MEAN", np.array([[1.0, 3.0]]), axis=1))
    if err.count(NOT_SCHEDULED) != 1 or value.tolist() != [2.0]:
        return f"reduce MEAN axis 1 on the chief: {value}, stderr {err!r}"
    return None


def run_and_reduce(strategy, coordinator):  # 40, 41
    v = variable_of_one("v40")
    v1 = pasco.metrics.Sum(name="only_first_replica")

    @pasco.function
    def worker_fn(input_tensor, v):
        def replica_fn(input_tensor):
            v1.update_state(input_tensor)
            vf = ops.sum(ops.cast(v, "float32"))
            return input_tensor + vf, input_tensor - vf

        run_result = strategy.run(replica_fn, args=(input_tensor,))
        return strategy.reduce("SUM", run_result, axis=None)

    with strategy.scope():
        result = coordinator.schedule(worker_fn, args=(3.0, v))
        if not isinstance(result, pasco.RemoteValue) or \
                result.fetch() != (4.0, 2.0):
            return f"in scope: {result.fetch()}, want (4.0, 2.0)"
    result = coordinator.schedule(worker_fn, args=(3.0, v))
    if result.fetch() != (4.0, 2.0):
        return f"out of scope: {result.fetch()}, want (4.0, 2.0)"
    if float(v1.result()) != 6.0:
        return f"the replica's assign_add: {float(v1.result())}, want 6"
    return None


def distributed_dataset_in_per_worker_fn(strategy, coordinator):  # 44, 45
    @pasco.function
    def worker_fn(iterator):
        return strategy.experimental_local_results(next(iterator))

    for from_function in (True, False):
        def per_worker_dataset_fn():
            if from_function:
                return strategy.distribute_datasets_from_function(
                    lambda _: Dataset.range(1, 11).batch(4))
            return strategy.experimental_distribute_dataset(
                Dataset.range(1, 11).batch(4))

        for what, arg in (("inside", per_worker_dataset_fn),
                          ("passed", per_worker_dataset_fn())):
            per_worker_dataset = coordinator.create_per_worker_dataset(arg)
            result = coordinator.schedule(
                worker_fn, args=(iter(per_worker_dataset),)).fetch()
            why = same(f"{what}, from_function={from_function}", result,
                       [[1, 2, 3, 4]])
            if why:
                return why
    return None


def distribute_datasets_from_function(strategy, coordinator):  # 46
    contexts = []

    def per_worker_dataset_fn():
        def input_worker_device_fn(input_context):
            contexts.append(input_context)
            return Dataset.range(1, 11).batch(1)

        return strategy.distribute_datasets_from_function(
            input_worker_device_fn)

    @pasco.function
    def worker_fn(iterator):
        result = strategy.experimental_local_results(next(iterator))
        return result

    distributed_dataset = coordinator.create_per_worker_dataset(
        per_worker_dataset_fn)
    result = coordinator.schedule(worker_fn,
                                  args=(iter(distributed_dataset),)).fetch()
    if len(contexts) != 1 or not isinstance(
            contexts[0], pasco.distribute.InputContext):
        return f"input contexts {contexts}: want one InputContext"
    c = contexts[0]
    if (c.num_input_pipelines, c.input_pipeline_id,
            c.num_replicas_in_sync) != (1, 0, 1):
        return f"the input context: {c!r}"
    return same("first element per replica", result,
                [[1 + i] for i in range(strategy.num_replicas_in_sync)])


def async_schedule_with_distributed_dataset(strategy, coordinator):  # 47
    def input_fn():
        dataset = Dataset.from_tensor_slices([2.]).repeat().batch(
            strategy.num_replicas_in_sync)
        return strategy.experimental_distribute_dataset(dataset)

    v = pasco.metrics.Sum(name="async_v")  # its state: a variable on a ps

    @pasco.function
    def worker_fn(iterator):
        x = next(iterator)
        reduced_value = strategy.reduce("MEAN", x, axis=None)
        v.update_state(reduced_value)

    distributed_dataset = coordinator.create_per_worker_dataset(input_fn)
    iterator = iter(distributed_dataset)
    coordinator.join()  # nothing scheduled: does not hang
    if float(v.result()) != 0.0:
        return f"before any step: {float(v.result())}"
    for _ in range(5):
        coordinator.schedule(worker_fn, args=(iterator,))
    coordinator.join()
    if float(v.result()) != 10.0:
        return f"after 5 steps: {float(v.result())}, want 10"
    for _ in range(5):
        coordinator.schedule(worker_fn, args=(iterator,))
    coordinator.join()
    coordinator.join()
    coordinator.join()
    if not coordinator.done() or float(v.result()) != 20.0:
        return f"after 10 steps: {float(v.result())}, want 20 and done"
    return None


def input_function_with_map_distributed(strategy, coordinator):  # 48
    traces = [0]

    def input_fn():
        def map_fn(x):
            traces[0] += 1
            return ops.cast(x, "float32") + 10

        dataset = Dataset.range(0, 10).batch(
            strategy.num_replicas_in_sync).map(map_fn)
        return strategy.experimental_distribute_dataset(dataset)

    @pasco.function
    def worker_fn(iterator):
        return next(iterator)

    distributed_dataset = coordinator.create_per_worker_dataset(input_fn)
    result = coordinator.schedule(worker_fn,
                                  args=(iter(distributed_dataset),))
    why = same("values", strategy.experimental_local_results(result.fetch()),
               [list(range(10, 10 + strategy.num_replicas_in_sync))])
    if why or traces[0] != 1:
        return why or f"map_fn traced {traces[0]} times"
    return None


def per_worker_element_spec(strategy, coordinator):  # 49
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(
            lambda _: Dataset.from_tensor_slices([1, 2]).batch(2))

    dataset = Dataset.from_tensor_slices([1, 2]).batch(2)
    per_worker = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
    if per_worker.element_spec != dataset.element_spec or \
            dataset.element_spec != ((None,), "int64"):
        return (f"element_spec: {per_worker.element_spec}, the dataset's "
                f"{dataset.element_spec}")
    mapped = Dataset.from_tensor_slices({"a": [[1.0, 2.0]], "b": [3]}).map(
        lambda x: {"s": x["a"] * 2.0, "b": x["b"]}).batch(1)
    per_worker = coordinator.create_per_worker_dataset(mapped)
    if per_worker.element_spec != {"s": ((None, 2), "float32"),
                                   "b": ((None,), "int64")}:
        return f"a mapped dict's element_spec: {per_worker.element_spec}"
    named = coordinator.create_per_worker_dataset("tf_scenarios_factory")
    try:
        spec = named.element_spec
    except TypeError as e:
        want = ("element_spec: the per-worker dataset is the factory "
                "'tf_scenarios_factory', whose element is known only to "
                "the workers")
        return None if str(e) == want else f"a factory's: {str(e)!r}"
    return f"a factory's element_spec: {spec}"


def per_worker_iterator_type_spec(strategy, coordinator):  # 50
    traces = [0]

    def per_worker_dataset_fn():
        traces[0] += 1
        return strategy.distribute_datasets_from_function(
            lambda _: Dataset.range(1, 2).batch(1))

    @pasco.function
    def worker_fn(iterator):
        return next(iterator)

    distributed_iterator = iter(
        coordinator.create_per_worker_dataset(per_worker_dataset_fn))
    worker_fn.trace(distributed_iterator)  # get_concrete_function
    rv = coordinator.schedule(worker_fn, args=(distributed_iterator,))
    if traces[0] != 1 or worker_fn.traces != 1:
        return (f"dataset_fn traced {traces[0]} times, the step "
                f"{worker_fn.traces}")
    return same("the element", rv.fetch(), [1])


def distribute_dataset_used_directly(strategy, coordinator):  # 89
    dataset = Dataset.range(3)
    for what, distributed in (
            ("experimental_distribute_dataset",
             strategy.experimental_distribute_dataset(dataset)),
            ("distribute_datasets_from_function",
             strategy.distribute_datasets_from_function(lambda _: dataset))):
        try:
            iter(distributed)
        except ValueError as e:
            if "create_per_worker_dataset" not in str(e):
                return f"{what}: the message {str(e)!r}"
            continue
        return f"{what}: iter() on the chief raised nothing"
    return None


def dataset_creation_failure_with_dataset(strategy, coordinator):  # 57
    """Worker 0 SIGKILLed (`pasco launch --restart` starts it again) while
    3 rounds schedule 3 steps each and make a new iterator of a dataset
    object; then 3 more steps once it is back: join succeeds, >= 12 steps
    counted, and the restarted worker is alive."""
    import signal
    import time
    dataset = Dataset.range(0, 100).repeat().batch(1)
    per_worker_dataset = coordinator.create_per_worker_dataset(dataset)
    iterations = pasco.metrics.Sum(name="iterations")

    @pasco.function
    def worker_fn(iterator):
        x = next(iterator)
        iterations.update_state(ops.cast(x, "float32") * 0.0 + 1.0)
        return x

    it = iter(per_worker_dataset)
    for _ in range(3):
        coordinator.schedule(worker_fn, args=(it,))
    coordinator.join()  # traced, and worker 0 is up
    old = worker_pid(0)
    if old is None:
        return "worker 0's process not found"
    os.kill(old, signal.SIGKILL)
    print(f"tf_scenarios: killed worker 0 pid {old}", flush=True)
    for _ in range(3):
        for _ in range(3):
            coordinator.schedule(worker_fn, args=(it,))
        it = iter(per_worker_dataset)  # built on worker 0 once it is back
        time.sleep(0.2)
    deadline = time.monotonic() + 30
    new = worker_pid(0)
    while (new is None or new == old) and time.monotonic() < deadline:
        time.sleep(0.05)
        new = worker_pid(0)
    if new is None or new == old:
        return "worker 0 was not restarted within 30 s"
    for _ in range(3):
        coordinator.schedule(worker_fn, args=(it,))
    coordinator.join()
    n = float(iterations.result())
    if n < 12:
        return f"{n} steps counted, want >= 12"
    try:
        os.kill(new, 0)
    except ProcessLookupError:
        return f"the restarted worker 0 (pid {new}) is gone"
    return None


def chief(cluster):
    strategy = pasco.distribute.ParameterServerStrategy(cluster)
    coordinator = pasco.distribute.coordinator.ClusterCoordinator(strategy)
    parts = [disallow_remote_value_as_input,
             python_function_not_allowed_to_schedule,
             input_function_with_map,
             dataset_partially_created_on_coordinator,
             pass_dataset_to_create_per_worker_dataset,
             multiple_datasets, repeated_iterator_creation,
             run_not_used_with_schedule, run_and_reduce,
             distributed_dataset_in_per_worker_fn,
             distribute_datasets_from_function,
             async_schedule_with_distributed_dataset,
             input_function_with_map_distributed,
             per_worker_element_spec, per_worker_iterator_type_spec,
             distribute_dataset_used_directly]
    if cluster.argv[1:]:  # only the scenarios named
        parts = [p for p in parts + [dataset_creation_failure_with_dataset]
                 if p.__name__ in cluster.argv[1:]]
    for part in parts:
        why = part(strategy, coordinator)
        if why is not None:
            print(f"tf_scenarios: FAILED: {part.__name__}: {why}",
                  flush=True)
            return 1
        print(f"tf_scenarios: {part.__name__} OK", flush=True)
    strategy.close()
    print("tf_scenarios: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
