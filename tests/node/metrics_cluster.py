"""Issue 34's live metrics on a real training cluster:
    metrics_cluster.py CASE PASCO METRICS_TRAIN MAKE_TABLE
A cluster of 1 ps, 2 workers and the chief (tests/node/metrics_train.c,
fit with steps going on) is started by `pasco launch --metrics-file`, each
task serving /metrics on a free loopback port.

CASE prometheus: every task's text is read directly (HELP and TYPE, the
task label, counters growing: the chief's steps, the workers' closures,
the ps's requests by method, the request latency histograms), crafted
requests (garbage, a 20 KB head, a half request held open) leave every
task serving and training, and worker 1 SIGKILLed (pasco launch
--restart starts it again) is counted by the chief as a loss and a
recovery while steps go on; then a real Prometheus server (Debian's
prometheus: on PATH, else its package fetched with apt-get download and
unpacked into the build directory, never installed, since installing it
enables a system service; else the test skips with 77, saying why) scrapes the tasks every
second from a generated config, with its storage in the test's
directory, and its HTTP API (/api/v1/query) must give up == 1 for every
task and a chief's pasco_steps_total that grows between two queries.
CASE top: `pasco top --file` in a tmux session (its server's socket in
the test's directory): the frame holds a line per task, up, with a step
count that grows, and q ends it with status 0.
Every wait is bounded; every process started is killed at the end."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

case, pasco, train, make_table = sys.argv[1:5]
TASKS = ["ps:0", "worker:0", "worker:1", "chief:0"]
procs = []  # (Popen, what): killed at the end


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    raise SystemExit(1)


def wait_for(what, fn, timeout):
    """fn() until it returns something true, at most timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() > end:
            fail(f"{what}: not within {timeout} s")
        time.sleep(0.2)


def scrape(addr, timeout=3):
    """The text of addr's /metrics, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{addr}/metrics",
                                    timeout=timeout) as r:
            ctype = r.headers.get("Content-Type", "")
            if "version=0.0.4" not in ctype:
                fail(f"{addr}: Content-Type {ctype!r}")
            return r.read().decode()
    except OSError:
        return None


def total(text, name, **labels):
    """The sum of name's samples whose labels include labels."""
    s = 0.0
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            s += float(m.group(3))
    return s


def check_format(addr, text):
    """The exposition format's rules, line by line."""
    family, kind = None, None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            family = line.split()[2]
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if name != family or kind not in ("counter", "gauge",
                                              "histogram"):
                fail(f"{addr}: {line!r}")
            if kind == "counter" and not name.endswith("_total"):
                fail(f"{addr}: counter {name} does not end _total")
            continue
        if not line.startswith(family) or 'task="' not in line:
            fail(f"{addr}: {line!r} outside its family {family}")
        float(line.rsplit(" ", 1)[1])


def start_cluster(d):
    subprocess.run([make_table, d], check=True, stdout=subprocess.DEVNULL)
    mfile = os.path.join(d, "metrics.txt")
    log = open(os.path.join(d, "launch.log"), "w")
    p = subprocess.Popen([pasco, "launch", "--restart", "--metrics-file",
                          mfile, "--ps",
                          "1", "--workers", "2", "--", train, d, "2000"],
                         stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    log.close()
    procs.append((p, "pasco launch"))
    lines = wait_for("the metrics file", lambda: os.path.exists(mfile) and
                     len(open(mfile).read().splitlines()) == 4 and
                     open(mfile).read().splitlines(), 30)
    addrs = {}
    for line in lines:
        role, index, addr = line.split()
        addrs[f"{role}:{index}"] = addr
    if sorted(addrs) != sorted(TASKS):
        fail(f"the metrics file names {sorted(addrs)}")
    for task, addr in addrs.items():
        wait_for(f"{task}'s /metrics at {addr}",
                 lambda: p.poll() is None and scrape(addr) or
                 (p.poll() is not None and fail(
                     "the launch ended: " +
                     open(os.path.join(d, "launch.log")).read())), 60)
    return mfile, addrs


def steps(addrs):
    text = scrape(addrs["chief:0"])
    return total(text, "pasco_steps_total") if text else -1


def direct_checks(addrs):
    s0 = wait_for("the chief's first steps", lambda: steps(addrs) > 0
                  and steps(addrs), 60)
    wait_for("pasco_steps_total growing", lambda: steps(addrs) > s0, 30)
    texts = {t: scrape(a) for t, a in addrs.items()}
    for t, text in texts.items():
        check_format(t, text)
        if f'task="{t}"' not in text:
            fail(f"{t}: no task=\"{t}\" label")
        # (CPU seconds come in clock ticks: a chief's may still be 0)
        for name in ("process_resident_memory_bytes", "process_threads",
                     "process_start_time_seconds"):
            if total(text, name) <= 0:
                fail(f"{t}: {name} is {total(text, name)}")
    chief = texts["chief:0"]
    if total(chief, "pasco_closures_completed_total") <= 0 or \
            total(chief, "pasco_request_duration_seconds_count") <= 0:
        fail("the chief's closures or request latencies are not counted")
    for w in ("worker:0", "worker:1"):
        if total(texts[w], "pasco_worker_closures_total") <= 0 or \
                total(texts[w], "pasco_request_duration_seconds_count") <= 0:
            fail(f"{w}: closures or request latencies not counted")
    ps = texts["ps:0"]
    methods = set(re.findall(r'pasco_requests_total\{[^}]*method="(\w+)"',
                             ps))
    if total(ps, "pasco_requests_total") <= 0 or not methods or \
            total(ps, "pasco_request_parts_total") <= 0:
        fail("the ps's requests by method are not counted")
    if total(ps, "pasco_received_bytes_total") <= 0 or \
            total(ps, "pasco_sent_bytes_total") <= 0:
        fail("the ps's bytes are not counted")
    print(f"direct: steps {s0} -> {steps(addrs)}; ps methods "
          f"{sorted(methods)}", flush=True)


def crafted(addrs):
    """Garbage, a huge head and a held half request to every task."""
    held = []
    for t, addr in addrs.items():
        host, port = addr.rsplit(":", 1)
        for raw in (b"\x00\xffgarbage\r\n\r\n", b"GET /x HTTP/1.1\r\nA: " +
                    b"a" * 20000):
            s = socket.create_connection((host, int(port)), timeout=5)
            try:
                s.sendall(raw)
                s.recv(100)
            except OSError:
                pass
            s.close()
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"GET /metr")
        held.append(s)
    s0 = steps(addrs)
    for t, addr in addrs.items():
        t0 = time.monotonic()
        if scrape(addr) is None or time.monotonic() - t0 > 2:
            fail(f"{t} did not answer a scrape beside a held request")
    wait_for("steps going on after the crafted requests",
             lambda: steps(addrs) > s0, 30)
    for s in held:
        s.close()
    print("crafted requests: every task still serves and trains",
          flush=True)


def pid_of(port):
    """The task process started with PASCO_METRICS_PORT=port."""
    want = f"PASCO_METRICS_PORT={port}".encode()
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                if p.isdigit() and want in f.read().split(b"\0"):
                    return int(p)
        except OSError:
            pass
    return None


def worker_recovery(addrs):
    """Worker 1 SIGKILLed, restarted by pasco launch --restart: the
    chief counts a loss and a recovery, and the new worker serves."""
    pid = pid_of(addrs["worker:1"].rsplit(":", 1)[1])
    if pid is None:
        fail("worker 1's process not found")
    os.kill(pid, signal.SIGKILL)

    def counted():
        text = scrape(addrs["chief:0"])
        return text and total(text, "pasco_worker_losses_total") >= 1 and \
            total(text, "pasco_worker_recoveries_total") >= 1 and text
    text = wait_for("the chief counting worker 1's loss and return",
                    counted, 60)
    wait_for("the restarted worker 1 serving /metrics", lambda: (
        lambda t: t and total(t, "pasco_worker_closures_total") > 0)(
        scrape(addrs["worker:1"])), 60)
    s0 = steps(addrs)
    wait_for("steps going on after worker 1's return",
             lambda: steps(addrs) > s0, 30)
    print(f"worker 1 killed and back: losses "
          f"{total(text, 'pasco_worker_losses_total')}, recoveries "
          f"{total(text, 'pasco_worker_recoveries_total')}, retried "
          f"{total(text, 'pasco_closures_retried_total')}", flush=True)


def have_prometheus():
    """The prometheus program: on PATH, or Debian's package unpacked (not
    installed: installing it would start and enable a system service) into
    the build directory, fetched with apt-get download when missing. None
    when neither works."""
    if shutil.which("prometheus") is not None:
        return "prometheus"
    cache = os.path.join(os.path.dirname(os.path.abspath(train)),
                         "prometheus-deb")
    exe = os.path.join(cache, "usr", "bin", "prometheus")
    if not os.access(exe, os.X_OK):
        print("fetching Debian's prometheus package (apt-get download), "
              f"unpacked into {cache}", flush=True)
        os.makedirs(cache, exist_ok=True)
        try:
            subprocess.run(["apt-get", "download", "-qq", "prometheus"],
                           cwd=cache, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=300)
            for deb in os.listdir(cache):
                if deb.startswith("prometheus_") and deb.endswith(".deb"):
                    subprocess.run(["dpkg-deb", "-x", deb, "."], cwd=cache,
                                   timeout=120)
                    os.remove(os.path.join(cache, deb))
        except (OSError, subprocess.SubprocessError) as e:
            print(f"could not fetch prometheus: {e}", flush=True)
    return exe if os.access(exe, os.X_OK) else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def query(base, q):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
    except OSError:
        return None
    if body.get("status") != "success":
        fail(f"query {q}: {body}")
    # up has the target's labels only (instance); the rest, task too
    return {x["metric"].get("task", x["metric"].get("instance")):
            float(x["value"][1]) for x in body["data"]["result"]}


def prometheus(d, addrs):
    exe = have_prometheus()
    if exe is None:
        print("SKIP: prometheus is not installed and apt-get download "
              "could not fetch Debian's package (apt-get install "
              "prometheus); the direct checks above passed")
        raise SystemExit(77)
    port = free_port()
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                "  evaluation_interval: 1s\nscrape_configs:\n"
                "  - job_name: pasco\n    static_configs:\n"
                f"      - targets: {json.dumps(list(addrs.values()))}\n")
    log = open(os.path.join(d, "prometheus.log"), "w")
    p = subprocess.Popen([exe, f"--config.file={cfg}",
                          f"--storage.tsdb.path={os.path.join(d, 'tsdb')}",
                          f"--web.listen-address=127.0.0.1:{port}",
                          "--log.level=warn"],
                         stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    log.close()
    procs.append((p, "prometheus"))
    base = f"http://127.0.0.1:{port}"

    def ready():
        if p.poll() is not None:
            fail("prometheus ended: " +
                 open(os.path.join(d, "prometheus.log")).read())
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    wait_for("prometheus ready", ready, 60)
    up = wait_for("up == 1 for every task", lambda: (
        lambda r: r if r and len(r) == 4 and all(v == 1 for v in
                                                  r.values()) else None)(
        query(base, 'up{job="pasco"}')), 60)
    print(f"prometheus: up {up}", flush=True)
    v1 = wait_for("pasco_steps_total in prometheus", lambda: (
        lambda r: r and r.get("chief:0", 0) > 0 and r["chief:0"])(
        query(base, "pasco_steps_total")), 30)
    v2 = wait_for("pasco_steps_total growing in prometheus", lambda: (
        lambda r: r and r.get("chief:0", 0) > v1 and r["chief:0"])(
        query(base, "pasco_steps_total")), 30)
    rss = query(base, "process_resident_memory_bytes")
    reqs = query(base, 'sum by (task) (pasco_requests_total{task="ps:0"})')
    lat = query(base, "pasco_request_duration_seconds_count")
    print(f"prometheus: steps {v1} -> {v2}; rss {rss}; ps requests {reqs}; "
          f"request latencies counted {lat}", flush=True)
    if sorted(rss) != sorted(TASKS) or not reqs or reqs["ps:0"] <= 0 or \
            lat.get("worker:0", 0) <= 0:
        fail("series missing from prometheus")


def top(d, mfile):
    if shutil.which("tmux") is None and os.geteuid() == 0:
        print("installing tmux (apt-get)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "tmux"],
                       env={**os.environ,
                            "DEBIAN_FRONTEND": "noninteractive"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300)
    if shutil.which("tmux") is None:
        print("SKIP: tmux is not installed and could not be (apt-get "
              "install tmux, as root); pasco top needs a terminal")
        raise SystemExit(77)
    once = subprocess.run([pasco, "top", "--once", "--file", mfile],
                          stdout=subprocess.PIPE, text=True, timeout=30)
    print(once.stdout, flush=True)
    if once.returncode != 0 or any(
            not re.search(rf"^{re.escape(t)} +up ", once.stdout, re.M)
            for t in TASKS):
        fail(f"pasco top --once: status {once.returncode}")
    tmux = ["tmux", "-S", os.path.join(d, "tmux.sock")]
    cmd = f"{pasco} top --file {mfile}; echo top exit $?; sleep 60"
    subprocess.run(tmux + ["new-session", "-d", "-x", "150", "-y", "30",
                           cmd], check=True)
    try:
        def frame():
            return subprocess.run(tmux + ["capture-pane", "-p"], text=True,
                                  stdout=subprocess.PIPE).stdout

        def chief_steps():
            screen = frame()
            rows = {t: re.search(rf"^{re.escape(t)} +up +(\d+) ", screen,
                                 re.M) for t in TASKS}
            return all(rows.values()) and (int(rows["chief:0"].group(1)),
                                           screen)
        s1, screen1 = wait_for("a frame with every task up",
                               chief_steps, 30)
        s2, screen2 = wait_for("the chief's steps growing on screen",
                               lambda: (lambda r: r and r[0] > s1 and r)(
                                   chief_steps()), 30)
        print(f"top frame:\n{screen2}\nsteps {s1} -> {s2}", flush=True)
        subprocess.run(tmux + ["send-keys", "q"], check=True)
        wait_for("q ending pasco top with status 0",
                 lambda: "top exit 0" in frame(), 10)
    finally:
        subprocess.run(tmux + ["kill-server"], stderr=subprocess.DEVNULL)


def stop_all():
    for p, what in reversed(procs):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                print(f"{what}: killed", flush=True)
        try:
            os.killpg(p.pid, signal.SIGKILL)  # whatever it left
        except ProcessLookupError:
            pass
        p.wait()


status = 1
with tempfile.TemporaryDirectory(prefix="pasco-metrics-") as d:
    try:
        mfile, addrs = start_cluster(d)
        print(f"tasks: {addrs}", flush=True)
        if case == "prometheus":
            direct_checks(addrs)
            crafted(addrs)
            worker_recovery(addrs)
            prometheus(d, addrs)
        elif case == "top":
            top(d, mfile)
        else:
            fail(f"unknown case {case}")
        status = 0
    except SystemExit as e:
        status = e.code
    finally:
        stop_all()
        with open(os.path.join(d, "launch.log")) as f:
            log = f.read()
        for bad in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                    "runtime error:", "ThreadSanitizer"):
            if bad in log and status in (0, 77):
                print(f"FAIL: a task's output has '{bad}'")
                status = 1
        if status not in (0, 77):
            with open(os.path.join(d, "launch.log")) as f:
                print("launch output (last 40 lines):\n" +
                      "".join(f.readlines()[-40:]))
print("PASS" if status == 0 else "SKIP" if status == 77 else "FAIL")
sys.exit(status)
