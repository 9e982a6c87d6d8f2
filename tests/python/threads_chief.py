#!/usr/bin/env python3
"""A Python chief's threads follow its configuration, not the core count
(issue 35): a chief that makes its strategy from TF_CONFIG, without
pasco.main (so without pasco_main's sizing), under `pasco launch --ps 1
--workers 2`, here and with tests/node/fake_cpus.c preloaded into every
task (16 cores). The package sizes the pools when it loads libpasco
(pasco_threads_configure): nng's 4 task and 2 expire threads, no OpenBLAS
pool (no other thread carries the program's name), the same total on both.
Before, 16 nng task, 16 expire and 15 more python3 threads on 16 cores.

Usage: threads_chief.py PASCO_EXE LIBPASCO FAKE_CPUS_LIB SOURCE_ROOT
[SANITIZE]. Prints "threads_chief: OK" or the failures, exit 1; 77
(skipped) in a sanitized build (python3 cannot load its libpasco, nor can
anything be preloaded before the sanitizer's runtime)."""

import json
import os
import subprocess
import sys
import time

NNG_TASK, NNG_EXPIRE = 4, 2  # PASCO_NNG_THREADS' default 2 (threads.h)


def census():
    """This process's threads by name."""
    names = {}
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                n = f.read().strip()
        except OSError:
            continue  # it ended meanwhile
        names[n] = names.get(n, 0) + 1
    return names


def chief():
    """The chief task: a strategy from TF_CONFIG, then its threads once
    nng's have named themselves (3 s at most)."""
    import pasco
    s = pasco.ParameterServerStrategy()
    me = census()
    main = open("/proc/self/comm").read().strip()
    for _ in range(300):
        me = census()
        if (me.get("nng:task") == NNG_TASK and
                me.get("nng:aio:expire") == NNG_EXPIRE and
                me.get(main) == 1):
            break
        time.sleep(0.01)
    preloaded = any("fake_cpus" in line for line in open("/proc/self/maps"))
    print("threads: " + json.dumps({"names": me, "main": main,
                                    "preloaded": preloaded}), flush=True)
    s.close()
    return 0


def launch(pasco_exe, env):
    p = subprocess.run([pasco_exe, "launch", "--ps", "1", "--workers", "2",
                        "--", sys.executable, os.path.abspath(__file__),
                        "--task"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    for line in p.stdout.splitlines():
        if line.startswith("[chief 0] threads: "):
            return json.loads(line[len("[chief 0] threads: "):])
    sys.stdout.write(p.stdout)
    sys.exit(f"threads_chief: no census from the chief (exit status "
             f"{p.returncode})")


def main():
    if sys.argv[1:2] == ["--task"]:
        role = json.loads(os.environ["TF_CONFIG"])["task"]["type"]
        if role == "chief":
            return chief()
        import pasco
        return pasco.main(lambda cluster: 0)
    pasco_exe, lib, fake, root = sys.argv[1:5]
    if len(sys.argv) > 5 and sys.argv[5] not in ("", "none"):
        print(f"SKIP: this build uses -fsanitize={sys.argv[5]}: python3 "
              f"cannot load its libpasco")
        return 77
    env = dict(os.environ, PASCO_LIBRARY=lib,
               PYTHONPATH=os.path.join(root, "python"))
    for k in ("PASCO_NNG_THREADS", "OPENBLAS_NUM_THREADS",
              "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(k, None)
    here = launch(pasco_exe, env)
    on16 = launch(pasco_exe, dict(env, LD_PRELOAD=fake,
                                  PASCO_FAKE_CPUS="16"))
    failures = []
    for what, c in (("here", here), ("on 16 cores", on16)):
        n = c["names"]
        if n.get("nng:task") != NNG_TASK or \
                n.get("nng:aio:expire") != NNG_EXPIRE:
            failures.append(f"{what}: {n.get('nng:task')} nng task and "
                            f"{n.get('nng:aio:expire')} expire threads, "
                            f"not {NNG_TASK} and {NNG_EXPIRE}")
        if n.get(c["main"]) != 1:
            failures.append(f"{what}: {n.get(c['main'])} threads named "
                            f"{c['main']}: OpenBLAS started a pool")
    if not on16["preloaded"]:
        failures.append(f"{fake} was not preloaded into the chief")
    total = (sum(here["names"].values()), sum(on16["names"].values()))
    if total[0] != total[1]:
        failures.append(f"the chief has {total[1]} threads on 16 cores, "
                        f"{total[0]} here")
    print(f"threads_chief: {total[0]} threads here: {here['names']}")
    print(f"threads_chief: {total[1]} threads on 16 cores: {on16['names']}")
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print("threads_chief: OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
