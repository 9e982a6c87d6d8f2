#!/usr/bin/python3
"""The PyTorch RPC peer of Pasco's benchmarks, measured the same way.

    /usr/bin/python3 bench/peers/torch_rpc.py [--quick] [--workers N,M,...]

Processes on loopback TCP (TensorPipe's "uv" transport, one compute thread
each, as Pasco's processes): rank 0 drives and holds the parameters ("ps"),
ranks 1.. are workers (as many as the largest count of --workers, default
2).

  dispatch   no-op rpc_sync calls/s from rank 0 to rank 1 (synchronous), and
             with 32 rpc_async calls in flight (pipelined)
  dense      pull (a worker fetches the ps's tensor) and push (a worker sends
             a gradient, the ps applies SGD in place) in GB/s, 4 KB to 64 MB
  training   MLP 784-256-10 and softmax regression 784-10 on a fixed
             synthetic batch of 64, SGD 0.05, parameters on rank 0; each of
             N workers (for each N of --workers) loops pull parameters ->
             forward/backward -> push gradients (PyTorch's parameter-server
             tutorial's shape); total steps/s over the N workers, so
             bench/scale's figures at the same N compare

Prints a table and one JSON line per figure (bench "peer-torch"), as the C
benchmarks do. Exits 77 when torch is not installed.
"""
import json
import os
import socket
import sys
import time

os.environ.setdefault("GLOG_minloglevel", "2")  # TensorPipe's shutdown chatter

try:
    import torch
    import torch.distributed.rpc as rpc
    import torch.multiprocessing as mp
    import torch.nn.functional as F
except ImportError:
    print("torch_rpc: python3-torch is not installed; PyTorch peer skipped")
    sys.exit(77)

WORLD = 3  # set by main from --workers
LR = 0.05
STATE = {}  # this process's tensors, by name (the "ps" side)


def noop():
    return None


def set_param(name, numel):
    STATE[name] = torch.zeros(numel, dtype=torch.float32)


def pull(name):
    return STATE[name]


def push(name, grad):
    STATE[name].add_(grad, alpha=-LR)


def model_shapes(model):
    if model == "mlp":
        return [(784, 256), (256,), (256, 10), (10,)]
    return [(784, 10), (10,)]


def init_model(model):
    g = torch.Generator().manual_seed(1)
    STATE["model"] = [torch.randn(s, generator=g) * 0.05 for s in model_shapes(model)]


def pull_model():
    return STATE["model"]


def push_model(grads):
    for p, g in zip(STATE["model"], grads):
        p.add_(g, alpha=-LR)


def forward(model, params, x, y):
    if model == "mlp":
        w1, b1, w2, b2 = params
        logits = torch.relu(x @ w1 + b1) @ w2 + b2
    else:
        w, b = params
        logits = x @ w + b
    return F.cross_entropy(logits, y)


def train_loop(model, steps):
    """Runs on a worker: steps of pull -> compute -> push."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(64, 784, generator=g)
    y = torch.randint(0, 10, (64,), generator=g)
    loss = None
    for _ in range(steps):
        params = rpc.rpc_sync("rank0", pull_model)
        for p in params:
            p.requires_grad_(True)
        loss = forward(model, params, x, y)
        grads = torch.autograd.grad(loss, params)
        rpc.rpc_sync("rank0", push_model, args=(list(grads),))
    return float(loss)


def best_of(rounds, fn):
    best = 0.0
    for _ in range(rounds):
        best = max(best, fn())
    return best


def figure(out, name, value, unit):
    out.append({"bench": "peer-torch", "figure": name, "value": value, "unit": unit})


def driver(quick, counts, out):
    n = 1000 if quick else 5000
    rounds = 3

    def sync_rate():
        t = time.perf_counter()
        for _ in range(n):
            rpc.rpc_sync("rank1", noop)
        return n / (time.perf_counter() - t)

    def pipelined_rate(inflight=32):
        t = time.perf_counter()
        done = 0
        while done < n:
            futs = [rpc.rpc_async("rank1", noop) for _ in range(inflight)]
            torch.futures.wait_all(futs)
            done += inflight
        return done / (time.perf_counter() - t)

    figure(out, "no-op rpc, sync", best_of(rounds, sync_rate), "ops/s")
    figure(out, "no-op rpc, 32 in flight", best_of(rounds, pipelined_rate), "ops/s")

    sizes = [4 << 10, 256 << 10, 4 << 20] + ([] if quick else [64 << 20])
    for size in sizes:
        numel = size // 4
        rpc.rpc_sync("rank1", set_param, args=("v", numel))
        iters = max(3, min(2000 if not quick else 500, (128 << 20) // size))
        grad = torch.ones(numel, dtype=torch.float32)

        def pull_rate():
            t = time.perf_counter()
            for _ in range(iters):
                rpc.rpc_sync("rank1", pull, args=("v",))
            return size * iters / (time.perf_counter() - t) / 1e9

        def push_rate():
            t = time.perf_counter()
            for _ in range(iters):
                rpc.rpc_sync("rank1", push, args=("v", grad))
            return size * iters / (time.perf_counter() - t) / 1e9

        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        figure(out, f"pull {label}", best_of(rounds, pull_rate), "GB/s")
        figure(out, f"push {label}", best_of(rounds, push_rate), "GB/s")

    steps = 100 if quick else 500
    for model in ("mlp", "softmax"):
        for n in counts:
            init_model(model)
            futs = [rpc.rpc_async(f"rank{r}", train_loop, args=(model, 5))
                    for r in range(1, n + 1)]  # warm up
            torch.futures.wait_all(futs)
            t = time.perf_counter()
            futs = [rpc.rpc_async(f"rank{r}", train_loop, args=(model, steps))
                    for r in range(1, n + 1)]
            torch.futures.wait_all(futs)
            rate = steps * n / (time.perf_counter() - t)
            name = "MLP 784-256-10" if model == "mlp" else "softmax 784-10"
            figure(out, f"train {name}, {n} worker{'s' if n > 1 else ''}",
                   rate, "steps/s")


def run(rank, world, port, quick, counts, path):
    global WORLD
    WORLD = world
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=120,
                                           _transports=["uv"], _channels=["basic"])
    rpc.init_rpc(f"rank{rank}", rank=rank, world_size=WORLD, rpc_backend_options=opts)
    if rank == 0:
        out = []
        driver(quick, counts, out)
        with open(path, "w") as f:
            json.dump(out, f)
    rpc.shutdown()


def main():
    global WORLD
    quick = "--quick" in sys.argv
    counts = [2]
    if "--workers" in sys.argv:
        i = sys.argv.index("--workers")
        try:
            counts = sorted({int(x) for x in sys.argv[i + 1].split(",")})
        except (IndexError, ValueError):
            counts = []
        if not counts or counts[0] < 1:
            print("torch_rpc: --workers wants counts like 1,2,4", file=sys.stderr)
            return 2
    WORLD = max(counts) + 1
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    path = f"/tmp/pasco-torch-{os.getpid()}.json"
    mp.set_start_method("spawn")
    procs = [mp.Process(target=run, args=(r, WORLD, port, quick, counts, path))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 600
    for p in procs:
        p.join(max(1, deadline - time.monotonic()))
    failed = any(p.exitcode != 0 for p in procs)
    for p in procs:
        if p.is_alive():
            p.kill()
            failed = True
    if failed or not os.path.exists(path):
        print("torch_rpc: a peer process failed", file=sys.stderr)
        return 1
    with open(path) as f:
        out = json.load(f)
    os.unlink(path)
    print(f"PyTorch {torch.__version__} RPC peer (TensorPipe, uv/TCP transport), loopback")
    for fig in out:
        print(f"{fig['figure']:<44} {fig['value']:12.3f} {fig['unit']}")
    for fig in out:
        print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
