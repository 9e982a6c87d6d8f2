"""The processes of a launched test cluster, found by the mark the tests
put in every task's environment (PASCO_TEST_MARK), shared by
worker_killed.py and tf_scenarios.py."""

import os


def worker_pid(index):
    """The pid of worker `index` of this run (its environment has our
    PASCO_TEST_MARK and its TF_CONFIG task), or None (none, or no mark)."""
    mark = os.environ.get("PASCO_TEST_MARK")
    if mark is None:
        return None
    want = f'"task":{{"type":"worker","index":{index}}}'
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if f"PASCO_TEST_MARK={mark}" in env and any(
                e.startswith("TF_CONFIG=") and want in e.replace(" ", "")
                for e in env):
            return int(p)
    return None
