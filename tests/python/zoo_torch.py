"""The model zoo (examples/zoo/) against PyTorch (meson test zoo_torch,
suites python and zoo):
    zoo_torch.py PASCO_EXE LIBPASCO SOURCE_ROOT [SANITIZE] [MODEL...]
MODEL: linear, deepfm, dcn_v2, dlrm, two_tower (default: all).

Data: examples/zoo/make_data.py's (30,000 rows here). For each model:
1. `pasco launch --ps 2 --workers 1 -- python3 examples/zoo/M.py DIR
   --check FILE`: the first 20 steps of SGD on one worker, one at a time,
   the files in order; FILE has the initial weights (read from the ps)
   and each step's loss. tests/python/zoo_models.py's PyTorch twin of the
   model starts from those weights and the dynamic tables' rows the ps
   made (computed from their seeded initializers: zoo_models.py says
   how), steps the same batches, and each loss must equal pasco's to f32
   rounding (relative 2e-5, after 20 steps of updates).
2. `pasco launch --ps 2 --workers 2 -- python3 examples/zoo/M.py DIR
   --save FILE`: fit with Adam on 2 workers (asynchronous, shuffled),
   predict the evaluation rows, AUC (recall@10 for two_tower) on the
   chief; the PyTorch twin trains as many steps of the same batch size
   with Adam from the same initial weights, three times (three batch
   orders): the score must be within 0.01 of their range. One PyTorch
   run is not the reference: from one initial state, the batch order
   alone moves these small models between plateaus (DLRM: AUC 0.916,
   0.931, 0.918; two-tower: recall@10 0.944, 0.987, 0.978), and the
   2-worker run is one more order.
And the click data are what the zoo is for: DeepFM's AUC beats the
linear model's by at least 0.02 (its label is mostly field interactions).

Needs numpy and torch for this python3 (Debian's python3-torch, which
this test installs with apt-get when it is missing and it runs as root;
otherwise it skips, exit 77, saying why), and a plain build (python3
cannot load a sanitized libpasco). Every task carries a PASCO_TEST_MARK
of this run; any left at the end is killed and fails the test."""

import os
import signal
import subprocess
import sys
import tempfile
import time


def need_torch() -> None:
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
        return
    except ImportError as e:
        missing = e.name
    if os.geteuid() == 0 and sys.executable.startswith("/usr/bin/"):
        print(f"{missing} missing: apt-get install -y python3-torch "
              f"python3-numpy", flush=True)
        r = subprocess.run("apt-get update -qq && DEBIAN_FRONTEND="
                           "noninteractive apt-get install -y -qq "
                           "--no-install-recommends python3-torch "
                           "python3-numpy", shell=True)
        if r.returncode == 0:
            return
    print(f"SKIP: {missing} is not installed for {sys.executable} and "
          f"could not be installed (apt-get install python3-torch "
          f"python3-numpy)")
    sys.exit(77)


pasco, libpasco, root = sys.argv[1:4]
sanitize = sys.argv[4] if len(sys.argv) > 4 else "none"
ALL = ["linear", "deepfm", "dcn_v2", "dlrm", "two_tower"]
models = sys.argv[5:] or ALL
if sanitize != "none":
    print(f"SKIP: this build uses -fsanitize={sanitize}: python3 cannot "
          f"load its libpasco; the zoo runs in the plain build")
    sys.exit(77)
need_torch()
sys.path.insert(0, os.path.join(root, "tests", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import zoo_models  # noqa: E402

os.environ["PASCO_LIBRARY"] = libpasco
sys.path[:0] = [os.path.join(root, "python"),
                os.path.join(root, "examples", "zoo")]
import zoo  # noqa: E402

torch.set_num_threads(1)  # the cluster's processes share the cores

MARK = f"pasco-zoo-{os.getpid()}-{time.monotonic_ns()}"
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"),
           PASCO_LIBRARY=libpasco, PYTHONUNBUFFERED="1",
           PASCO_TEST_MARK=MARK)
ROWS = 30000
CHECK_STEPS, CHECK_BATCH, CHECK_LR = 20, 64, 0.1
# per model: epochs, steps per epoch, batch, Adam's rate
TRAIN = {"linear": (4, 500, 256, 2e-3), "deepfm": (4, 500, 256, 2e-3),
         "dcn_v2": (4, 500, 256, 2e-3), "dlrm": (4, 500, 256, 2e-3),
         "two_tower": (8, 500, 128, 2e-3)}
SEEDS = (0, 1, 2)
failures = []


def kill_leftovers():
    """SIGKILLs every process still carrying MARK; their pids."""
    left = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                if f"PASCO_TEST_MARK={MARK}".encode() in \
                        f.read().split(b"\0"):
                    os.kill(int(p), signal.SIGKILL)
                    left.append(int(p))
        except (OSError, ProcessLookupError):
            pass
    return left


def launch(model, workers, *args, timeout=150):
    cmd = [pasco, "launch", "--ps", "2", "--workers", str(workers), "--",
           sys.executable, os.path.join(root, "examples", "zoo",
                                        f"{model}.py"), *args]
    print("+", " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", flush=True)
        print(f"FAIL: {model}: timed out after {timeout} s; killed "
              f"{kill_leftovers()}", flush=True)
        return None
    print(p.stdout, flush=True)
    if p.returncode != 0:
        failures.append(f"{model}: pasco launch exited {p.returncode}")
        return None
    return p.stdout


def check_losses(model, d, hasher):
    out = os.path.join(d, f"{model}-check.npz")
    if launch(model, 1, d, "--check", out, "--check-steps",
              str(CHECK_STEPS), "--batch", str(CHECK_BATCH), "--check-lr",
              str(CHECK_LR)) is None:
        return
    saved = np.load(out)
    ours = saved["losses"]
    twin = zoo_models.Setup(model, d, saved, hasher)
    theirs = twin.sgd_losses(CHECK_STEPS, CHECK_BATCH, CHECK_LR)
    rel = np.abs(ours - theirs) / np.abs(theirs)
    print(f"{model}: check: pasco  {' '.join(f'{x:.6f}' for x in ours)}\n"
          f"{model}: check: torch  {' '.join(f'{x:.6f}' for x in theirs)}\n"
          f"{model}: check: largest relative difference {rel.max():.2e} "
          f"(step {int(rel.argmax())})", flush=True)
    if not rel.max() <= 2e-5 or not ours[-1] < ours[0]:
        failures.append(f"{model}: the 20 SGD losses differ from "
                        f"PyTorch's by up to {rel.max():.2e} (relative), "
                        f"or do not fall ({ours[0]:.6f} -> {ours[-1]:.6f})")


def torch_score(model, d, saved, hasher, seed):
    """(name, value): the PyTorch twin's score after training as the 2-worker
    run did, from its initial weights, on the batch order of seed."""
    epochs, steps, batch, lr = TRAIN[model]
    twin = zoo_models.Setup(model, d, saved, hasher)
    twin.train(epochs * steps, batch, lr, seed)
    pred = twin.predict()
    if twin.kind == "clicks":
        return "auc", zoo.auc(twin.y[twin.train_rows:], pred[:, 0])
    half = pred.shape[1] // 2
    return "recall@10", zoo.recall_at_k(pred[:, :half], pred[:, half:],
                                        twin.items[twin.train_rows:], 10)


def compare_training(model, d, hasher):
    epochs, steps, batch, lr = TRAIN[model]
    out = os.path.join(d, f"{model}-fit.npz")
    if launch(model, 2, d, "--save", out, "--epochs", str(epochs),
              "--steps", str(steps), "--batch", str(batch), "--lr",
              str(lr)) is None:
        return None
    saved = np.load(out)
    theirs = [torch_score(model, d, saved, hasher, seed) for seed in SEEDS]
    name, ours = theirs[0][0], float(saved["score"])
    lo, hi = min(t for _, t in theirs), max(t for _, t in theirs)
    print(f"{model}: {name}: pasco {ours:.4f} (2 workers), torch "
          f"{', '.join(f'{t:.4f}' for _, t in theirs)} (batch orders "
          f"{SEEDS})", flush=True)
    if not lo - 0.01 <= ours <= hi + 0.01:
        failures.append(f"{model}: {name} {ours:.4f} is not within 0.01 of "
                        f"PyTorch's {lo:.4f} .. {hi:.4f}")
    return ours


with tempfile.TemporaryDirectory(prefix="pasco-zoo-") as d:
    t0 = time.monotonic()
    subprocess.run([sys.executable, os.path.join(root, "examples", "zoo",
                                                 "make_data.py"), d,
                    "--rows", str(ROWS)], check=True)
    hasher = zoo_models.Hasher(libpasco)
    scores = {}
    for m in models:
        check_losses(m, d, hasher)
        scores[m] = compare_training(m, d, hasher)
    if scores.get("deepfm") is not None and scores.get("linear") is not None \
            and not scores["deepfm"] >= scores["linear"] + 0.02:
        failures.append(f"deepfm's AUC {scores['deepfm']:.4f} does not beat "
                        f"the linear model's {scores['linear']:.4f} by 0.02")
    print(f"zoo: {time.monotonic() - t0:.0f} s", flush=True)
left = kill_leftovers()
if left:
    failures.append(f"processes of the run left behind (killed): {left}")
for f in failures:
    print("FAIL:", f)
print("PASS" if not failures else "FAIL")
sys.exit(1 if failures else 0)
