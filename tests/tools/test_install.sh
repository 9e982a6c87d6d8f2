#!/bin/sh
# `meson install` into a temporary root, then what a user does with it: the
# README's programs (examples/mlp_csv.c, a model fit on make_table's data,
# and examples/counter.c of docs/lowlevel.md) each built by the cc lines of
# docs/guide.md ("Building your own program")
# (pkg-config alone) against the installed shared library, then against the
# installed static archive (`pkg-config --static`), all run by the
# installed `pasco launch`. Nothing of the build tree is on any path (the
# build's make_table only writes the data).
# Then the Python package as installed: examples/mlp_csv.py (the README's
# Python program) run by the installed pasco launch, the package found in
# the installed site-packages and loading the installed libpasco.so.0.
# usage: test_install.sh MESON BUILD_DIR MLP_CSV_SOURCE COUNTER_SOURCE SANITIZE MAKE_TABLE PYTHON
set -u
meson=$1 build=$2 mlp_source=$3 counter_source=$4 sanitize=${5:-none} make_table=${6:-}
python=${7:-python3}
if [ "$sanitize" != none ]; then
	# a user's plain cc cannot link a library built with -fsanitize
	echo "test_install: skipped: this build uses -fsanitize=$sanitize"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if ! "$meson" install -C "$build" --destdir "$tmp/root" --no-rebuild \
	> "$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	fail "meson install"
	finish
fi
pc=$(find "$tmp/root" -name pasco.pc)
bin=$(find "$tmp/root" -path '*/bin/pasco')
[ -n "$pc" ] && ok "pasco.pc installed" || { fail "no pasco.pc installed"; finish; }
[ -n "$bin" ] && ok "pasco command installed" || { fail "no pasco command"; finish; }
libdir=$(dirname "$(dirname "$pc")")
incdir=$(dirname "$(dirname "$bin")")/include
for f in "$libdir/libpasco.a" "$libdir/libpasco.so" "$libdir/libpasco.so.0" \
	"$incdir/pasco.h" "$incdir/pasco/coordinator.h"; do
	if [ -e "$f" ]; then
		ok "installed ${f#"$tmp/root"}"
	else
		fail "${f#"$tmp/root"} is not installed"
	fi
done
# Every man page of the source's man/ lands in share/man/manN, as
# `man pasco-launch` finds it after an install (mandir: the prefix's).
prefix=$(dirname "$(dirname "$bin")")
srcman="$(dirname "$mlp_source")/../man"
npages=0
for page in "$srcman"/*.[1-9]; do
	[ -f "$page" ] || continue
	npages=$((npages + 1))
	name=${page##*/} section=${page##*.}
	if [ -f "$prefix/share/man/man$section/$name" ]; then
		ok "man page installed: ${prefix#"$tmp/root"}/share/man/man$section/$name"
	else
		fail "man/$name is not installed in ${prefix#"$tmp/root"}/share/man/man$section"
	fi
done
[ "$npages" -gt 0 ] || fail "no man page in $srcman"
if command -v man > /dev/null 2>&1 && [ -f "$prefix/share/man/man1/pasco-launch.1" ]; then
	MANPATH="$prefix/share/man" MANWIDTH=80 man pasco-launch 2> /dev/null |
		grep -q -- '--checkpoint-root' &&
		ok "man pasco-launch (MANPATH the installed share/man) shows the page" ||
		fail "man pasco-launch, MANPATH=$prefix/share/man, does not show the installed page"
fi
if [ "$(head -c 8 "$libdir/libpasco.a")" = '!<arch>' ]; then
	ok "libpasco.a is a whole archive"
else
	fail "libpasco.a is not a whole archive (thin?)"
fi
bad=$(nm -D --defined-only "$libdir/libpasco.so" | awk '{ print $3 }' |
	grep -v '^pasco_[a-z]' | head -5)
[ -z "$bad" ] && ok "the shared library exports pasco_ symbols only" ||
	fail "the shared library exports $bad"

# pkg-config reads the installed file; the sysroot maps its /usr/local
# paths into the temporary root
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
export PKG_CONFIG_LIBDIR=/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig
run_counter() { # name, binary
	out=$(LD_LIBRARY_PATH="$libdir" timeout 60 "$bin" launch --ps 1 \
		--workers 2 -- "$2" 2>&1)
	if echo "$out" | grep -q '^\[chief 0\] counter = 100;'; then
		ok "$1 runs a cluster"
	else
		echo "$out"
		fail "$1 did not print the counter"
	fi
}
mkdir "$tmp/table"
"$make_table" "$tmp/table" > "$tmp/table.log" 2>&1 || { cat "$tmp/table.log"; fail "make_table"; finish; }
run_mlp_csv() { # name, binary: fit on make_table's data, accuracy >= 0.9
	rm -rf "$tmp/table"/ckpt-* "$tmp/table/train" "$tmp/table/eval"
	out=$(LD_LIBRARY_PATH="$libdir" timeout 120 "$bin" launch --ps 2 \
		--workers 2 --checkpoint-root "$tmp/table" -- "$2" "$tmp/table" 2>&1)
	acc=$(echo "$out" | sed -n 's/^\[chief 0\] Epoch 5\/5: .*, val_accuracy \([0-9.e+-]*\)$/\1/p')
	if awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }'; then
		ok "$1 fits the model on a cluster: accuracy = $acc"
	else
		echo "$out"
		fail "$1 did not end with val_accuracy >= 0.9"
	fi
}
# The manual's cc lines (docs/guide.md, "Building your own program", after
# its readme-install marker), as written, in order, on prog.c: the shared program, then the
# static one, each its own file (the second line once overwrote, or on a
# failed link deleted, the first's program).
readme="$(dirname "$mlp_source")/../docs/guide.md"
lines=$(awk '/<!-- readme-install/ { found = 1; next }
     found && /^```sh$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" |
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep '^cc ' |
	sed 's/[[:space:]]\{1,\}#[^#]*$//')
if [ "$(echo "$lines" | grep -c '^cc ')" -ne 2 ]; then
	fail "want 2 cc lines (shared, static) after docs/guide.md's readme-install marker, found: $lines"
	finish
fi
# Each program in its own directory, as prog.c, through the two lines.
build_and_run() { # label, source, run function
	dir=$tmp/user-$1
	mkdir "$dir"
	cp "$2" "$dir/prog.c"
	n=0
	echo "$lines" | while IFS= read -r line; do
		n=$((n + 1))
		if (cd "$dir" && sh -c "$line") > "$dir/cc$n.log" 2>&1; then
			echo "ok" > "$dir/cc$n.status"
		else
			cat "$dir/cc$n.log"
		fi
	done
	[ -f "$dir/cc1.status" ] && ok "$1: README's shared build: $shared_line" ||
		fail "$1: README's shared build failed: $shared_line"
	[ -f "$dir/cc2.status" ] && ok "$1: README's static build: $static_line" ||
		fail "$1: README's static build failed: $static_line"
	if [ -x "$dir/prog" ] && LD_LIBRARY_PATH="$libdir" ldd "$dir/prog" |
		grep -q "$libdir/libpasco.so.0"; then
		ok "$1: after both lines, prog is the shared build: it loads the installed libpasco.so.0"
		"$3" "$1, the shared build," "$dir/prog"
	else
		fail "$1: after both lines, prog is missing or does not load the installed libpasco.so.0"
	fi
	if [ -x "$dir/prog-static" ] &&
		! LD_LIBRARY_PATH="$libdir" ldd "$dir/prog-static" | grep -q libpasco; then
		ok "$1: prog-static has libpasco linked in"
		"$3" "$1, the static build," "$dir/prog-static"
	else
		fail "$1: prog-static is missing or loads libpasco.so"
	fi
}
shared_line=$(echo "$lines" | sed -n 1p)
static_line=$(echo "$lines" | sed -n 2p)
build_and_run mlp_csv "$mlp_source" run_mlp_csv
build_and_run counter "$counter_source" run_counter

# The Python package, installed: found under the root's site-packages.
pkg=$(find "$tmp/root" -path '*/pasco/__init__.py' | head -1)
if [ -z "$pkg" ]; then
	fail "the pasco Python package is not installed"
elif ! "$python" -c 'import numpy' 2> /dev/null; then
	echo "skip: the installed Python package: $python has no numpy"
else
	ok "installed ${pkg#"$tmp/root"}"
	site=$(dirname "$(dirname "$pkg")")
	# where a real install puts it, python3 finds it with no PYTHONPATH
	if "$python" -c 'import site, sys; sys.exit(sys.argv[1] not in site.getsitepackages())' \
		"${site#"$tmp/root"}"; then
		ok "${site#"$tmp/root"} is on $python's path (no PYTHONPATH needed)"
	else
		fail "${site#"$tmp/root"} is not among $python's site-packages: $("$python" -c 'import site; print(site.getsitepackages())')"
	fi
	rm -rf "$tmp/table"/ckpt-*
	out=$(cd "$tmp" && PYTHONPATH="$site" PASCO_LIBRARY="$libdir/libpasco.so.0" \
		LD_LIBRARY_PATH="$libdir" timeout 150 "$bin" launch --ps 2 --workers 2 \
		--checkpoint-root "$tmp/table" -- "$python" \
		"$(dirname "$mlp_source")/mlp_csv.py" "$tmp/table" 2>&1)
	if echo "$out" | grep -q "^\[chief 0\] evaluate: {'loss': "; then
		ok "the installed package trains examples/mlp_csv.py: $(echo "$out" | grep '^\[chief 0\] epoch 4')"
	else
		echo "$out"
		fail "the installed package did not run examples/mlp_csv.py"
	fi
fi
finish
