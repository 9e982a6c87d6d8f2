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
(examples/ps_tutorial.py, TensorFlow's tutorial loop ported: 4 epochs,
evaluation accuracy >= 0.9), adapt (Normalization.adapt of a
pasco.data dataset: numpy's mean and variance), tf_config
(examples/mlp_csv.py, every task started by hand with its TF_CONFIG, no
launcher: every task exits 0, val_accuracy >= 0.9, its checkpoints). Every task carries a PASCO_TEST_MARK of this run;
any left at the end is killed and fails the test. Exit 77 (skipped) with the reason when
numpy is missing."""

import os
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
           path=None):
    cmd = [pasco, "launch", *launch_args, "--ps", "2", "--workers",
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
    elif case == "ps_tutorial":
        p = launch("ps_tutorial.py", d,
                   path=os.path.join(root, "examples", "ps_tutorial.py"))
        acc = [float(line.split()[-1]) for line in p.stdout.splitlines()
               if line.startswith("[chief 0] Evaluation accuracy: ")]
        epochs = [line for line in p.stdout.splitlines()
                  if line.startswith("[chief 0] Finished epoch ")]
        print(f"ps_tutorial: {len(epochs)} epochs, evaluation accuracy "
              f"{acc}", flush=True)
        ok = (p.returncode == 0 and len(epochs) == 4 and acc != [] and
              acc[0] >= 0.9)
    elif case == "tutorial":
        p = launch("tutorial.py", d)
        ok = p.returncode == 0 and "tutorial: OK" in p.stdout
    else:
        sys.exit(f"unknown case {case}")
left = kill_leftovers()
if left:
    print(f"FAIL: processes of the run left behind (killed): {left}")
    ok = False
print("PASS" if ok else f"FAIL (exit status {p.returncode})")
sys.exit(0 if ok else 1)
