#!/bin/sh
# The pip wheel (pyproject.toml, meson-python, issue 34; docs/install.md) as
# a Python user gets it, offline: the wheel built with `pip wheel
# --no-build-isolation` from a venv that sees Debian's python3-mesonpy, its
# contents and size checked (libpasco.so, bin/pasco, the package, the
# console script; nothing of the C install), installed into a fresh
# --system-site-packages venv (numpy from the system), and
# examples/mlp_csv.py trained through the venv's `pasco` console script from
# a folder outside the checkout, the venv not activated, with no PYTHONPATH
# or LD_LIBRARY_PATH. Then `pip install CHECKOUT` into another fresh venv,
# and docs/install.md's newcomer steps: its make_data.py writes the data and
# mlp_csv.py trains through `python -m pasco`.
# The wheel's meson build folder is kept in BUILD_DIR/wheel-build (and the
# venv that builds it in BUILD_DIR/wheel-venv), so a second run compiles
# only what changed; a first run compiles the library (about a minute on
# two idle cores). meson lists the package's files when it configures
# (python/meson.build), and meson-python does not configure a kept folder
# again, so the folder is started afresh when python/pasco's files change.
# usage: test_wheel.sh SOURCE_ROOT BUILD_DIR PYTHON MAKE_TABLE SANITIZE
set -u
src=$1 build=$2 python=$3 make_table=$4 sanitize=${5:-none}
# absolute: meson names them from the build folder, and we cd below
src=$(cd "$src" && pwd) build=$(cd "$build" && pwd)
make_table=$(cd "$(dirname "$make_table")" && pwd)/$(basename "$make_table")
if [ "$sanitize" != none ]; then
	# the wheel is built with meson-python's options, never sanitized: the
	# plain build's run covers it
	echo "test_wheel: skipped: this build uses -fsanitize=$sanitize (the wheel's own build does not; run it in a plain build)"
	exit 77
fi
if ! "$python" -c 'import ensurepip, venv' 2> /dev/null; then
	echo "test_wheel: skipped: $python cannot make a venv with pip (Debian: apt-get install python3-venv)"
	exit 77
fi
if ! "$python" -c 'import mesonpy' 2> /dev/null; then
	echo "test_wheel: skipped: $python has no meson-python (Debian: apt-get install python3-mesonpy)"
	exit 77
fi
if ! "$python" -c 'import numpy' 2> /dev/null; then
	echo "test_wheel: skipped: $python has no numpy (Debian: apt-get install python3-numpy)"
	exit 77
fi
. "$(dirname "$0")/harness.sh"
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
# nothing of the checkout or the build may reach the installed package
unset PYTHONPATH LD_LIBRARY_PATH PASCO_LIBRARY PASCO_BUILD_DIR PASCO_COMMAND \
	VIRTUAL_ENV PYTHONHOME
export PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

t0=$(date +%s)
files=$(cd "$src/python" && find pasco -type f ! -path '*__pycache__*' | LC_ALL=C sort)
if [ "$files" != "$(cat "$build/wheel-build/.pasco-files" 2> /dev/null)" ]; then
	rm -rf "$build/wheel-build"
	mkdir -p "$build/wheel-build"
	printf '%s\n' "$files" > "$build/wheel-build/.pasco-files"
fi
[ -x "$build/wheel-venv/bin/pip" ] ||
	"$python" -m venv --system-site-packages "$build/wheel-venv" > "$tmp/venv.log" 2>&1 ||
	{ cat "$tmp/venv.log"; fail "$python -m venv --system-site-packages"; finish; }
if ! "$build/wheel-venv/bin/pip" wheel --no-build-isolation --no-deps \
	--config-settings builddir="$build/wheel-build" -w "$tmp/dist" "$src" \
	> "$tmp/wheel.log" 2>&1; then
	tail -40 "$tmp/wheel.log"
	fail "pip wheel --no-build-isolation $src"
	finish
fi
whl=$(ls "$tmp"/dist/pasco-*.whl 2> /dev/null | head -1)
[ -n "$whl" ] || { fail "pip wheel wrote no pasco-*.whl into $tmp/dist"; finish; }
ok "built $(basename "$whl") in $(($(date +%s) - t0)) s"

# Its contents: what the package needs, and nothing of the C install.
if "$python" - "$whl" << 'PY'; then
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = {i.filename: i for i in z.infolist()}
bad = []
def mode(n):
    return names[n].external_attr >> 16
for n in ("pasco/libpasco.so", "pasco/bin/pasco"):
    if n not in names:
        bad.append(f"no {n}")
    elif not mode(n) & 0o111:
        bad.append(f"{n} is not executable (mode {oct(mode(n))})")
for n in ("pasco/__init__.py", "pasco/__main__.py", "pasco/_lib.py",
          "pasco/layers.py", "pasco/py.typed"):
    if n not in names:
        bad.append(f"no {n}")
info = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
if not info or "pasco = pasco.__main__:main" not in z.read(info[0]).decode():
    bad.append("no console script 'pasco = pasco.__main__:main' in entry_points.txt")
meta = [n for n in names if n.endswith(".dist-info/METADATA")]
if not meta or "Requires-Dist: numpy" not in z.read(meta[0]).decode():
    bad.append("METADATA does not declare numpy (Requires-Dist)")
for n in names:
    if ("__pycache__" in n or n.endswith((".a", ".h", ".pc"))
            or ".data/" in n or n.startswith(".pasco.mesonpy.libs")):
        bad.append(f"{n} should not be in the wheel")
for b in bad:
    print("wheel:", b)
sys.exit(1 if bad else 0)
PY
	ok "the wheel holds pasco/libpasco.so, pasco/bin/pasco, the package and the console script; no headers, archive, caches"
else
	fail "the wheel's contents"
fi
size=$(wc -c < "$whl")
# 2.0 MB at 0.1.0; a debug build (-g) or a second copy of the library is 3x
if [ "$size" -gt 0 ] && [ "$size" -lt 4000000 ]; then
	ok "the wheel is $size bytes (under 4 MB)"
else
	fail "the wheel is $size bytes (want under 4 MB)"
fi

# A fresh venv, the wheel installed; the rest runs away from the checkout.
"$python" -m venv --system-site-packages "$tmp/venv" > "$tmp/venv.log" 2>&1 ||
	{ cat "$tmp/venv.log"; fail "$python -m venv"; finish; }
if "$tmp/venv/bin/pip" install "$whl" > "$tmp/install.log" 2>&1; then
	ok "pip install $(basename "$whl") into a fresh venv"
else
	cat "$tmp/install.log"
	fail "pip install $(basename "$whl")"
	finish
fi
mkdir "$tmp/away" "$tmp/data"
cp "$src/examples/mlp_csv.py" "$tmp/away/"
"$make_table" "$tmp/data" > "$tmp/table.log" 2>&1 ||
	{ cat "$tmp/table.log"; fail "make_table"; finish; }
cd "$tmp/away" || exit 1
out=$("$tmp/venv/bin/python" -c 'import pasco; print(pasco.__file__); print(pasco.library_path)' 2>&1)
case "$out" in
"$tmp/venv/"*"
$tmp/venv/"*) ok "import pasco: the venv's package and library: $(echo "$out" | tr '\n' ' ')" ;;
*) fail "import pasco in the venv does not use the venv's package and library: $out" ;;
esac
out=$("$tmp/venv/bin/pasco" version 2>&1)
[ "$out" = "pasco $(sed -n "s/^  version : '\(.*\)',$/\1/p" "$src/meson.build")" ] &&
	ok "the console script runs the program: $out" ||
	fail "pasco version printed: $out"
out=$(PASCO_COMMAND="$tmp/none" "$tmp/venv/bin/pasco" version 2>&1)
st=$?
[ "$st" -eq 127 ] && echo "$out" | grep -q "cannot find the pasco program; tried $tmp/none (no such file)" &&
	ok "PASCO_COMMAND naming nothing: status 127, $out" ||
	fail "PASCO_COMMAND naming nothing: status $st, $out"

train() { # label, data dir, the command before "launch"...
	label=$1 data=$2
	shift 2
	out=$(timeout 150 "$@" launch --ps 1 --workers 1 -- python3 mlp_csv.py "$data" 2>&1)
	st=$?
	acc=$(echo "$out" | sed -n "s/^\[chief 0\] evaluate: {.*'accuracy': \([0-9.e+-]*\)}$/\1/p")
	if [ "$st" -eq 0 ] && awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }'; then
		ok "$label trains examples/mlp_csv.py: accuracy $acc, status 0"
	else
		echo "$out"
		fail "$label: status $st, evaluate accuracy '$acc' (want >= 0.9)"
	fi
}
# PATH as the test got it: the venv is not activated, so python3 there is
# the venv's only through the console script
train "the wheel's console script (venv not activated, cwd $tmp/away)" \
	"$tmp/data" "$tmp/venv/bin/pasco"

# pip install CHECKOUT into another fresh venv (the same build folder:
# nothing to compile), run as python -m pasco.
cd "$tmp" || exit 1
"$python" -m venv --system-site-packages "$tmp/venv2" > "$tmp/venv.log" 2>&1 ||
	{ cat "$tmp/venv.log"; fail "$python -m venv"; finish; }
if "$tmp/venv2/bin/pip" install --no-build-isolation \
	--config-settings builddir="$build/wheel-build" "$src" \
	> "$tmp/install2.log" 2>&1; then
	ok "pip install --no-build-isolation $src into a fresh venv"
	# its data from docs/install.md's make_data.py, as a newcomer makes them
	mkdir "$tmp/run"
	awk '/<!-- install-data/ { found = 1; next }
	     found && /^```python$/ { inside = 1; next }
	     inside && /^```$/ { exit }
	     inside { print }' "$src/docs/install.md" > "$tmp/run/make_data.py"
	cp "$src/examples/mlp_csv.py" "$tmp/run/"
	cd "$tmp/run" || exit 1
	if [ -s make_data.py ] && "$tmp/venv2/bin/python" make_data.py > "$tmp/data.log" 2>&1 &&
		[ -s data/train.csv ] && [ -s data/eval.csv ]; then
		ok "docs/install.md's make_data.py wrote data/train.csv and data/eval.csv"
		train "python -m pasco after pip install of the checkout" data \
			"$tmp/venv2/bin/python" -m pasco
	else
		cat "$tmp/data.log"
		fail "docs/install.md's make_data.py (after its install-data marker) did not write data/"
	fi
else
	tail -40 "$tmp/install2.log"
	fail "pip install --no-build-isolation $src"
fi
finish
