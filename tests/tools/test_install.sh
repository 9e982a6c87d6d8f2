#!/bin/sh
# `meson install` into a temporary root, then what a user does with it: the
# README's program (examples/counter.c) built by the README's own cc lines
# (pkg-config alone) against the installed shared library, then against the
# installed static archive (`pkg-config --static`), both run by the
# installed `pasco launch`. Nothing of the build tree is on any path.
# usage: test_install.sh MESON BUILD_DIR COUNTER_SOURCE SANITIZE
set -u
meson=$1 build=$2 source=$3 sanitize=${4:-none}
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
# The README's cc lines ("A complete program", after its readme-install
# marker), as written, in order, on prog.c: the shared program, then the
# static one, each its own file (the second line once overwrote, or on a
# failed link deleted, the first's program).
readme="$(dirname "$source")/../README.md"
lines=$(awk '/<!-- readme-install/ { found = 1; next }
     found && /^```sh$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" |
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep '^cc ' |
	sed 's/[[:space:]]\{1,\}#[^#]*$//')
if [ "$(echo "$lines" | grep -c '^cc ')" -ne 2 ]; then
	fail "want 2 cc lines (shared, static) after the README's readme-install marker, found: $lines"
	finish
fi
mkdir "$tmp/user"
cp "$source" "$tmp/user/prog.c"
n=0
echo "$lines" | while IFS= read -r line; do
	n=$((n + 1))
	if (cd "$tmp/user" && sh -c "$line") > "$tmp/cc$n.log" 2>&1; then
		echo "ok" > "$tmp/cc$n.status"
	else
		cat "$tmp/cc$n.log"
	fi
done
shared_line=$(echo "$lines" | sed -n 1p)
static_line=$(echo "$lines" | sed -n 2p)
[ -f "$tmp/cc1.status" ] && ok "README's shared build: $shared_line" ||
	fail "README's shared build failed: $shared_line"
[ -f "$tmp/cc2.status" ] && ok "README's static build: $static_line" ||
	fail "README's static build failed: $static_line"
if [ -x "$tmp/user/prog" ] && LD_LIBRARY_PATH="$libdir" ldd "$tmp/user/prog" |
	grep -q "$libdir/libpasco.so.0"; then
	ok "after both lines, prog is the shared build: it loads the installed libpasco.so.0"
	run_counter "the shared build" "$tmp/user/prog"
else
	fail "after both lines, prog is missing or does not load the installed libpasco.so.0"
fi
if [ -x "$tmp/user/prog-static" ] &&
	! LD_LIBRARY_PATH="$libdir" ldd "$tmp/user/prog-static" | grep -q libpasco; then
	ok "prog-static has libpasco linked in"
	run_counter "the static build" "$tmp/user/prog-static"
else
	fail "prog-static is missing or loads libpasco.so"
fi
finish
