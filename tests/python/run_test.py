"""Runs one Python-package test (suite 'python') against this build:
    run_test.py CASE PASCO_EXE MAKE_TABLE_EXE LIBPASCO SOURCE_ROOT [SANITIZE]
CASE: train_csv (make_table's data, 2 ps and 2 workers, every task
`python3 train_csv.py`), errors (bad arguments and the library's errors
as exceptions, on a real cluster), worker_killed (worker 1 SIGKILLed
mid-fit, restarted by `pasco launch --restart`; the fit completes with an
exact global step), tutorial (the tutorial model and data,
examples/embedding_classifier.c's, to accuracy 1.0), custom_loop
(pasco.ClusterCoordinator: the library's train step scheduled by hand,
its losses, global step and errors), traced_step (@pasco.function steps:
model_train's losses and weights on 1 worker, metric objects over 2
workers against numpy, retraces, trace-time errors), ps_tutorial
(examples/ps_tutorial.py, TensorFlow's tutorial loop ported by names: 4
epochs, evaluation accuracy >= 0.9; then tests/python/ps_tutorial_counts.py:
its accuracy metrics' state on the ps equals numpy's counts over the
batches the steps return, on 2 workers), tf_names (tests/python/tf_names.py:
TensorFlow's names in a traced step, compile, save and load, against
numpy), sample_weights
(tests/python/sample_weights.py: sample_weight, class_weight and
weighted_metrics against numpy, 3 workers), exact_epochs
(tests/python/exact_epochs.py: fit on numpy arrays reads each example
once per epoch on 3 workers), resume_epochs (tests/python/
resume_epochs.py: a numpy fit of epochs of 4, 2, 4, 2 steps crashed after
epoch 2, every process launched again, resumed by BackupAndRestore: the
uninterrupted run's losses and steps), merge_layers (Embedding(mask_zero) over
padded sequences, GlobalAveragePooling1D, Dense: accuracy >= 0.95, the
loss numpy's masked one), adapt (Normalization.adapt of a
pasco.data dataset: numpy's mean and variance), tf_config
(examples/mlp_csv.py, every task started by hand with its TF_CONFIG, no
launcher: every task exits 0, val_accuracy >= 0.9, its checkpoints),
saving (tests/python/saving.py: model.save on 2 ps, load_model on 1
and 3 ps: the same predictions bit for bit, the same resumed losses),
seq_tagger (tests/python/seq_tagger.py: Embedding(mask_zero) and a
per-step Dense trained from a TFRecord dataset of sequence labels: the
masked loss and accuracy against numpy on 1 worker, trained on 2),
numpy_data (tests/python/numpy_data.py: fit, evaluate and predict on
numpy arrays against numpy's loss and forward pass), keras_extras
(tests/python/keras_extras.py: BatchNormalization's axis and
trainable=False, activity and embeddings regularizers, a sequence's
predict, against numpy), keras_weights (tests/python/keras_weights.py:
LayerNormalization's axes, traced losses with sample weights and
loss_weights, against numpy),
keras3_metrics (issue 33's metric objects in compile and in traced steps
against numpy, tests/python/keras3_metrics.py), keras_examples
(examples/keras_digits.py and keras_breast_cancer.py within 0.03 of
scikit-learn's models on the same split; skipped without scikit-learn),
tf_data (tests/python/tf_data.py: Dataset.from_tensor_slices, map on the
workers, shuffle/batch/repeat, 2 workers), tf_scenarios
(tests/python/tf_scenarios.py: TensorFlow's coordinator scenarios on
datasets, strategy.run and reduce, 2 ps and 2 workers).
Every task carries a PASCO_TEST_MARK of this run;
any left at the end is killed and fails the test. Exit 77 (skipped) with the reason when
numpy is missing."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable} "
          f"(apt-get install python3-numpy)")
    sys.exit(77)

case, pasco, make_table, libpasco, root = sys.argv[1:6]
sanitize = sys.argv[6] if len(sys.argv) > 6 else "none"
if sanitize != "none":
    print(f"SKIP: this build uses -fsanitize={sanitize}: python3 cannot "
          f"load its libpasco (the sanitizer runtime must be the first "
          f"library); the python suite runs in the plain build")
    sys.exit(77)
here = os.path.join(root, "tests", "python")
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"),
           PASCO_LIBRARY=libpasco, PYTHONUNBUFFERED="1")


# Every task of a run carries this mark in its environment: what a test
# kills is found by it, and whatever is left at the end is killed.
MARK = f"pasco-py-{os.getpid()}-{time.monotonic_ns()}"
env["PASCO_TEST_MARK"] = MARK


def marked():
    """The pids of the processes that carry MARK (this run's tasks)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                with open(f"/proc/{p}/environ", "rb") as f:
                    if f"PASCO_TEST_MARK={MARK}".encode() in \
                            f.read().split(b"\0"):
                        out.append(int(p))
            except OSError:
                pass
    return out


def kill_leftovers():
    """Kills (SIGKILL) every process of this run still there; their pids."""
    left = marked()
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def launch(script, *args, timeout=150, launch_args=(), workers=2,
           path=None, ps=2):
    cmd = [pasco, "launch", *launch_args, "--ps", str(ps), "--workers",
           str(workers), "--", sys.executable,
           path or os.path.join(here, script), *args]
    print("+", " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", flush=True)
        print(f"FAIL: timed out after {timeout} s; killed "
              f"{kill_leftovers()}", flush=True)
        sys.exit(1)
    print(p.stdout, flush=True)
    return p


def free_ports(n):
    import socket
    socks = [socket.socket() for _ in range(n)]
    for so in socks:
        so.bind(("127.0.0.1", 0))
    ports = [so.getsockname()[1] for so in socks]
    for so in socks:
        so.close()
    return ports


def by_hand(script, *args, timeout=150):
    """Every task started here with its own TF_CONFIG (no launcher): 2
    ps, 2 workers and the chief, each `python3 SCRIPT ARGS`. Returns the
    chief's exit status and output, and the others' (role -> (status,
    output)); a task that does not end in time is killed and fails."""
    import json
    ports = free_ports(5)
    hosts = [f"127.0.0.1:{p}" for p in ports]
    spec = {"chief": hosts[:1], "ps": hosts[1:3], "worker": hosts[3:5]}
    procs = {}
    for role, n in (("ps", 2), ("worker", 2), ("chief", 1)):
        for i in range(n):
            tf = {"cluster": spec, "task": {"type": role, "index": i}}
            e = dict(env, TF_CONFIG=json.dumps(tf))
            print(f"+ TF_CONFIG='{e['TF_CONFIG']}' {sys.executable} "
                  f"{script} {' '.join(args)}", flush=True)
            procs[f"{role} {i}"] = subprocess.Popen(
                [sys.executable, os.path.join(root, script), *args], env=e,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = {}
    deadline = time.monotonic() + timeout
    for name in ["chief 0", "ps 0", "ps 1", "worker 0", "worker 1"]:
        pr = procs[name]
        try:
            text, _ = pr.communicate(
                timeout=max(1, deadline - time.monotonic()))
            out[name] = (pr.returncode, text)
        except subprocess.TimeoutExpired:
            pr.kill()
            text, _ = pr.communicate()
            out[name] = (None, text)
        print(f"--- {name}: exit status {out[name][0]}\n{out[name][1]}",
              flush=True)
    return out


def progress_bar_once(d):
    """Keras's progress bar in a real terminal: the ps and workers of
    callbacks.py's "bar" mode started here (TF_CONFIG), its chief in a
    tmux session of its own; the screen is read (capture-pane) while it
    runs, for a bar with its ETA and running loss, and at its end, for
    each epoch's final line. Installs tmux when missing (as root), else
    skips (77), saying why."""
    import json
    import re
    import shutil
    if shutil.which("tmux") is None and os.geteuid() == 0:
        print("progress_bar: installing tmux (apt-get)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "tmux"],
                       env={**os.environ,
                            "DEBIAN_FRONTEND": "noninteractive"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if shutil.which("tmux") is None:
        print("SKIP: tmux is not installed and could not be (apt-get "
              "install tmux, as root); the progress bar needs a terminal "
              "to be tested in")
        sys.exit(77)
    subprocess.run([sys.executable, os.path.join(here, "callbacks.py"), d,
                    "data"], env=env, check=True)
    hosts = [f"127.0.0.1:{p}" for p in free_ports(5)]
    spec = {"chief": hosts[:1], "ps": hosts[1:3], "worker": hosts[3:5]}
    script = os.path.join(here, "callbacks.py")
    tasks = []
    for role, i in (("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1)):
        e = dict(env, TF_CONFIG=json.dumps(
            {"cluster": spec, "task": {"type": role, "index": i}}))
        log = open(os.path.join(d, f"{role}{i}.log"), "w")
        tasks.append(subprocess.Popen([sys.executable, script, d, "bar"],
                                      env=e, stdout=log,
                                      stderr=subprocess.STDOUT))
        log.close()
    # the server's socket in the test's directory: nothing left in /tmp
    tmux = ["tmux", "-S", os.path.join(d, "tmux.sock")]
    chief_env = dict(env, TF_CONFIG=json.dumps(
        {"cluster": spec, "task": {"type": "chief", "index": 0}}),
        LANG="C.UTF-8", LC_ALL="C.UTF-8")
    cmd = (f"{sys.executable} {script} {d} bar; echo chief exit $?; "
           f"sleep 120")
    subprocess.run(tmux + ["-u", "new-session", "-d", "-x", "160", "-y", "40",
                           cmd], env=chief_env, check=True)
    # the bar's redraw mid-epoch: steps, 20 bars, ETA, time per step,
    # running loss; the epoch's final line: its time, every log
    mid = re.compile(r"^ *(\d+)/(\d+) ━{20} (\d+:)?\d+s (\d+)(ms|us)/"
                     r"step - loss: \d+\.\d{4}(e[-+]\d+)? *$")
    end = re.compile(r"^(\d+)/\1 ━{20} (\d+)s (\d+)(ms|s|us)/step - "
                     r"loss: \S+ *$")
    seen_mid, screen = None, ""
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        screen = subprocess.run(tmux + ["capture-pane", "-p"], text=True,
                                stdout=subprocess.PIPE).stdout
        for line in screen.splitlines():
            m = mid.match(line)
            if m and int(m.group(1)) < int(m.group(2)) and \
                    seen_mid is None:
                seen_mid = line
        if "chief exit" in screen:
            break
        time.sleep(0.02)
    subprocess.run(tmux + ["kill-server"])
    # a task that ended before the chief did (its output, to say why)
    dead = [(k, t.returncode) for k, t in enumerate(tasks)
            if t.poll() is not None]
    for t in tasks:
        t.kill()
        t.wait()
    for k, rc in dead:
        role, i = (("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1))[k]
        with open(os.path.join(d, f"{role}{i}.log")) as f:
            print(f"{role} {i} ended early (status {rc}):\n{f.read()}",
                  flush=True)
    for _ in range(100):  # the session's processes end on its SIGHUP
        if not marked():
            break
        time.sleep(0.05)
    print(f"screen:\n{screen}\nseen mid-epoch: {seen_mid!r}", flush=True)
    lines = screen.splitlines()
    finals = [x for x in lines if end.match(x)]
    ok = ("chief exit 0" in screen and "callbacks: OK bar" in screen and
          seen_mid is not None and len(finals) == 3 and
          lines.count("Epoch 1/2") == 1 and lines.count("Epoch 2/2") == 1
          and "auto:" in lines and end.match(lines[lines.index("auto:") + 1]))
    return subprocess.CompletedProcess([], 0 if ok else 1, screen), dead


def progress_bar(d):
    """progress_bar_once, again once when a task of its cluster ended
    before its chief did: the ports are chosen free before the tasks bind
    them, and another process (a task's bulk port) may take one between."""
    p, dead = progress_bar_once(d)
    if p.returncode != 0 and dead:
        print("progress_bar: a task ended early; once more", flush=True)
        p, dead = progress_bar_once(d)
    return p


with tempfile.TemporaryDirectory(prefix="pasco-py-") as d:
    if case == "train_csv":
        subprocess.run([make_table, d], check=True)
        p = launch("train_csv.py", d)
        ok = p.returncode == 0 and "train_csv: OK" in p.stdout
    elif case == "errors":
        p = launch("errors.py", d)
        ok = p.returncode == 0 and "errors: OK" in p.stdout
    elif case == "worker_killed":
        subprocess.run([make_table, d], check=True)
        p = launch("worker_killed.py", d, launch_args=["--restart"])
        ok = (p.returncode == 0 and "worker_killed: OK" in p.stdout and
              "worker_killed: killed worker 1 pid" in p.stdout and
              "[launch] worker 1 exited (signal 9); restarting"
              in p.stdout)
    elif case == "custom_loop":
        subprocess.run([make_table, d], check=True)
        p = launch("custom_loop.py", d)
        ok = p.returncode == 0 and "custom_loop: OK" in p.stdout
    elif case == "adapt":
        subprocess.run([make_table, d], check=True)
        p = launch("adapt.py", d)
        ok = p.returncode == 0 and "adapt: OK" in p.stdout
    elif case == "constraints":
        # MaxNorm and NonNeg applied by the ps, a Huber loss object on
        # the worker: numpy's projection of the update (issue 33)
        p = launch("constraints_cluster.py", d, workers=1)
        ok = p.returncode == 0 and "constraints: OK" in p.stdout
    elif case == "custom_layer":
        # layers and losses of pasco.ops on 1 worker: the curves of their
        # built-in equivalents, a trace-time error before any step
        subprocess.run([make_table, d], check=True)
        p = launch("custom_layer.py", d, workers=1)
        ok = p.returncode == 0 and "custom_layer: OK" in p.stdout
    elif case == "tf_config":
        subprocess.run([make_table, d], check=True)
        env["PASCO_CHECKPOINT_DIR"] = d  # the ps write mlp_csv's checkpoints
        out = by_hand("examples/mlp_csv.py", d)
        chief_status, text = out["chief 0"]
        acc = [float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("epoch 4: val_accuracy ")]
        ok = (all(st == 0 for st, _ in out.values()) and acc != [] and
              acc[0] >= 0.9 and "evaluate: {'loss': " in text and
              os.path.isdir(os.path.join(d, "ckpt-500")))
        print(f"tf_config: exit statuses "
              f"{ {k: v[0] for k, v in out.items()} }, val_accuracy {acc}, "
              f"checkpoints {sorted(os.listdir(d))}", flush=True)
        p = subprocess.CompletedProcess([], chief_status, text)
    elif case == "traced_step":
        subprocess.run([make_table, d], check=True)
        p = launch("traced_step.py", d, "equal", workers=1)
        ok = p.returncode == 0 and "traced_step: OK equal" in p.stdout
        if ok:
            p = launch("traced_step.py", d, "metrics")
            ok = p.returncode == 0 and "traced_step: OK metrics" in p.stdout
    elif case == "tf_data":
        p = launch("tf_data.py", ps=1, timeout=90)
        ok = p.returncode == 0 and "tf_data: OK" in p.stdout
        if ok:
            p = launch("tf_data.py", "once", ps=1, workers=1, timeout=60)
            ok = p.returncode == 0 and "tf_data: OK" in p.stdout
    elif case == "tf_scenarios":
        # TensorFlow's coordinator scenarios on datasets and strategy.run
        # (tests/python/tf_scenarios.py); the datasets' files under a
        # TMPDIR of this run, which must end empty
        tmp = os.path.join(d, "tmp")
        os.mkdir(tmp)
        env["TMPDIR"] = tmp
        p = launch("tf_scenarios.py", timeout=120)
        ok = p.returncode == 0 and "tf_scenarios: OK" in p.stdout
        if ok:  # 57: worker 0 killed, restarted by the launcher
            p = launch("tf_scenarios.py",
                       "dataset_creation_failure_with_dataset",
                       launch_args=["--restart"], timeout=90)
            ok = (p.returncode == 0 and "tf_scenarios: OK" in p.stdout
                  and "[launch] worker 0 exited (signal 9); restarting"
                  in p.stdout)
        if ok and os.listdir(tmp):
            print(f"FAIL: left in TMPDIR: {os.listdir(tmp)}", flush=True)
            ok = False
    elif case == "keras3_metrics":
        subprocess.run([make_table, d], check=True)
        p = launch("keras3_metrics.py", d, timeout=170)
        ok = p.returncode == 0 and "keras3_metrics: OK" in p.stdout
    elif case == "optimizer_numpy":
        # issue 33's optimizers, clipping and schedules against numpy
        p = launch("optimizer_numpy.py", workers=1)
        ok = p.returncode == 0 and "optimizer_numpy: OK" in p.stdout
    elif case == "keras_examples":
        # examples/keras_digits.py and keras_breast_cancer.py (issue 33):
        # numpy fit, BatchNormalization, a schedule, ReduceLROnPlateau;
        # each within 0.03 of scikit-learn's model on the same split
        try:
            import sklearn  # noqa: F401
        except ImportError:
            print("SKIP: scikit-learn is not installed (apt-get install "
                  "python3-sklearn); the examples load its data sets")
            sys.exit(77)
        ok = True
        for name in ("keras_digits.py", "keras_breast_cancer.py"):
            p = launch(name, path=os.path.join(root, "examples", name))
            m = re.search(r"test accuracy ([0-9.]+), scikit-learn's \S+ "
                          r"([0-9.]+)", p.stdout)
            print(f"{name}: {m.group(0) if m else 'no accuracy line'}",
                  flush=True)
            ok = ok and p.returncode == 0 and m is not None and \
                float(m.group(1)) >= float(m.group(2)) - 0.03
    elif case == "ps_tutorial":
        p = launch("ps_tutorial.py",
                   path=os.path.join(root, "examples", "ps_tutorial.py"))
        acc = [float(line.split()[-1]) for line in p.stdout.splitlines()
               if line.startswith("[chief 0] Evaluation accuracy: ")]
        epochs = [line for line in p.stdout.splitlines()
                  if line.startswith("[chief 0] Finished epoch ")]
        print(f"ps_tutorial: {len(epochs)} epochs, evaluation accuracy "
              f"{acc}", flush=True)
        ok = (p.returncode == 0 and len(epochs) == 4 and acc != [] and
              acc[0] >= 0.9)
        if ok:  # the metrics' state on the ps against numpy's counts
            p = launch("ps_tutorial_counts.py")
            ok = p.returncode == 0 and "ps_tutorial_counts: OK" in p.stdout
    elif case == "tf_names":
        # TensorFlow's names (pasco.keras, nn, distribute, tf.* ops) in
        # a traced step, compile, save and load, against numpy
        p = launch("tf_names.py", d)
        ok = p.returncode == 0 and "tf_names: OK" in p.stdout
    elif case == "prep":
        # issue 33's preprocessing layers on string columns of a CSV
        p = launch("prep_train.py", d)
        ok = p.returncode == 0 and "prep_train: OK" in p.stdout
    elif case == "tutorial":
        p = launch("tutorial.py", d)
        ok = p.returncode == 0 and "tutorial: OK" in p.stdout
    elif case == "merge_layers":
        # Embedding(mask_zero) + GlobalAveragePooling1D + Dense (issue 33)
        p = launch("merge_layers.py", d)
        ok = p.returncode == 0 and "merge_layers: OK" in p.stdout
    elif case == "batch_norm":
        # BatchNormalization's moving statistics: Keras's recurrence on 1
        # worker, every update counted once on 2, the accuracy band
        p = launch("batch_norm.py", d, "one", workers=1)
        ok = p.returncode == 0 and "batch_norm: OK one" in p.stdout
        if ok:
            p = launch("batch_norm.py", d, "two", timeout=240)
            ok = p.returncode == 0 and "batch_norm: OK two" in p.stdout
    elif case == "sample_weights":
        # tests/python/sample_weights.py: the weighted loss, steps and
        # metrics against numpy, on 3 workers
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("sample_weights.py", d, workers=3)
        ok = p.returncode == 0 and "sample_weights: OK" in p.stdout
    elif case == "keras_weights":
        # LayerNormalization's axes, weighted traced losses, loss_weights
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("keras_weights.py", d, workers=1)
        ok = p.returncode == 0 and "keras_weights: OK" in p.stdout
    elif case == "exact_epochs":
        # tests/python/exact_epochs.py: each example once per epoch on 3
        # workers
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("exact_epochs.py", d, workers=3)
        ok = p.returncode == 0 and "exact_epochs: OK" in p.stdout
        if ok:  # worker 1 killed mid-epoch, restarted by the launcher
            p = launch("exact_epochs.py", d, "kill", workers=3,
                       launch_args=["--restart"])
            ok = (p.returncode == 0 and "exact_epochs: OK" in p.stdout and
                  "exact_epochs: killed worker 1 pid" in p.stdout)
    elif case == "resume_epochs":
        # tests/python/resume_epochs.py: the chief exits after epoch 2 (the
        # launcher stops the rest), a new launch resumes from the backup
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("resume_epochs.py", d, "crash")
        ok = p.returncode != 0 and \
            "resume_epochs: crashing after epoch 2" in p.stdout and \
            "FAILED" not in p.stdout
        if ok:
            p = launch("resume_epochs.py", d, "resume")
            ok = p.returncode == 0 and "resume_epochs: OK" in p.stdout
    elif case == "saving":
        # saved on 2 ps, loaded on 1 and on 3 (the ps stage the weights
        # beside the file: under their PASCO_CHECKPOINT_DIR)
        env["PASCO_CHECKPOINT_DIR"] = d
        ok = True
        for phase, n in (("save", 2), ("load", 1), ("load", 3)):
            p = launch("saving.py", d, phase, workers=1, ps=n)
            ok = ok and p.returncode == 0 and \
                f"saving: OK {phase} on {n} ps" in p.stdout
    elif case == "seq_tagger":
        # tests/python/seq_tagger.py: a masked sequence tagger from a
        # TFRecord dataset; the loss curve against numpy on 1 worker,
        # then trained on 2
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        ok = True
        for mode, n in (("replay", 1), ("train", 2)):
            p = launch("seq_tagger.py", d, mode, workers=n)
            ok = ok and p.returncode == 0 and \
                f"seq_tagger: OK {mode}" in p.stdout
    elif case == "numpy_data":
        # the chief writes the arrays under TMPDIR, which the workers
        # (same host) read; the test checks that it ends empty
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("numpy_data.py", d)
        ok = p.returncode == 0 and "numpy_data: OK" in p.stdout
    elif case == "keras_extras":
        # BatchNormalization's axis and trainable=False, the regularizers
        # of layers' outputs and looked-up rows, a sequence's predict
        os.mkdir(os.path.join(d, "tmp"))
        env["TMPDIR"] = os.path.join(d, "tmp")
        p = launch("keras_extras.py", d, workers=1)
        ok = p.returncode == 0 and "keras_extras: OK" in p.stdout
    elif case == "callbacks":
        # Keras's callbacks (tests/python/callbacks.py); verbose=2 under
        # the launcher's pipe: one line per epoch
        subprocess.run([sys.executable, os.path.join(here, "callbacks.py"),
                        d, "data"], env=env, check=True)
        p = launch("callbacks.py", d, "lr")
        lines = [x for x in p.stdout.splitlines()
                 if x.startswith("[chief 0] Epoch ") and "/3: 5/5 steps in"
                 in x]
        ok = (p.returncode == 0 and "callbacks: OK lr" in p.stdout and
              len(lines) == 3 and "\r" not in p.stdout)
    elif case == "progress_bar":
        p = progress_bar(d)
        ok = p.returncode == 0
    else:
        sys.exit(f"unknown case {case}")
left = kill_leftovers()
if left:
    print(f"FAIL: processes of the run left behind (killed): {left}")
    ok = False
print("PASS" if ok else f"FAIL (exit status {p.returncode})")
sys.exit(0 if ok else 1)
