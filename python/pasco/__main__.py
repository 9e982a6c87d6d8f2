"""The pasco command from Python: ``python -m pasco ARGS`` and the ``pasco``
console script that pip installs both run the C program ``pasco`` with
ARGS (``launch``, ``slurm``, ``checkpoint``, ``version``; ``--help``),
replacing this process (its exit status and signals are the program's)::

    python -m pasco launch --ps 2 --workers 2 -- python3 train.py

Where the program is looked for, first found wins:

1. ``PASCO_COMMAND``: its path;
2. ``bin/pasco`` inside this package (a pip install: the wheel ships it);
3. a development checkout's ``build/pasco`` next to this package's
   ``python/`` folder (``PASCO_BUILD_DIR`` names another build folder);
4. the bin directory the package was installed with (``meson install``
   writes it into ``_install.py``).

In a virtual environment, the environment's bin folder is put first on
the program's PATH, as activating it would, so that ``pasco launch --
python3 train.py`` runs every task under the environment's python3 (the
one that imports this package) even when it is not activated.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

__all__ = ["main", "command_path"]


def _candidates() -> List[str]:
    env = os.environ.get("PASCO_COMMAND")
    if env:
        return [env]  # named explicitly: no silent fallback
    here = Path(__file__).resolve().parent
    out = [str(here / "bin" / "pasco")]
    build = os.environ.get("PASCO_BUILD_DIR")
    if build:
        out.append(str(Path(build) / "pasco"))
    out.append(str(here.parent.parent / "build" / "pasco"))
    try:
        from . import _install  # type: ignore[attr-defined]

        out.append(str(Path(_install.BINDIR) / "pasco"))
    except (ImportError, AttributeError):
        pass  # not installed by meson install (or by one before BINDIR)
    return out


def command_path() -> str:
    """The path of the pasco program that ``main`` runs. Raises
    FileNotFoundError naming every place tried when there is none."""
    tried = []
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        why = "not executable" if os.path.exists(path) else "no such file"
        tried.append(f"{path} ({why})")
    raise FileNotFoundError(
        "pasco: cannot find the pasco program; tried " + "; ".join(tried)
        + ". Set PASCO_COMMAND to its path (a build folder's pasco, or the "
        "installed one)")


def _environment() -> dict:
    env = dict(os.environ)
    if sys.prefix != sys.base_prefix:  # a virtual environment
        bindir = os.path.dirname(os.path.abspath(sys.executable))
        path = env.get("PATH", os.defpath).split(os.pathsep)
        if not path or path[0] != bindir:
            env["PATH"] = os.pathsep.join([bindir] + path)
    return env


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the pasco program with ``argv`` (default: this process's
    arguments), replacing this process; returns only on failure to start
    it (status 127, the reason on stderr)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        path = command_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(path, ["pasco"] + args, _environment())
    except OSError as e:
        print(f"pasco: cannot run {path}: {e.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    raise SystemExit(main())
