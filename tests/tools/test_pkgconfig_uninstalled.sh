#!/bin/sh
# A program built against the build tree, not installed, through
# build/meson-uninstalled/pasco-uninstalled.pc alone (the README's install
# section): its -I finds include/pasco.h, its -L the build's libpasco, and
# examples/counter.c compiled with the README's two cc lines (shared, then
# static with libpasco.a) under -Wall -Wextra -Werror runs a cluster
# through the build's `pasco launch`.
# usage: test_pkgconfig_uninstalled.sh BUILD_DIR COUNTER_SOURCE PASCO SANITIZE
set -u
build=$1 counter_source=$2 pasco=$3 sanitize=${4:-none}
pasco=$(cd "$(dirname "$pasco")" && pwd)/$(basename "$pasco") # we cd below
if [ "$sanitize" != none ]; then
	echo "test_pkgconfig_uninstalled: skipped: this build uses -fsanitize=$sanitize"
	exit 77
fi
. "$(dirname "$0")/harness.sh"
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

export PKG_CONFIG_PATH="$build/meson-uninstalled"
if ! flags=$(pkg-config --cflags --libs pasco 2>&1); then
	fail "pkg-config --cflags --libs pasco with PKG_CONFIG_PATH=$PKG_CONFIG_PATH: $flags"
	finish
fi
ok "pkg-config finds pasco-uninstalled.pc: $flags"
found_h=no
for f in $(pkg-config --cflags-only-I pasco); do
	[ -f "${f#-I}/pasco.h" ] && found_h=yes
done
[ "$found_h" = yes ] && ok "an -I directory holds pasco.h" ||
	fail "no -I of '$(pkg-config --cflags-only-I pasco)' holds pasco.h"
for f in $(pkg-config --libs-only-L pasco); do
	if [ -f "${f#-L}/libpasco.so" ] && [ -f "${f#-L}/libpasco.a" ]; then
		ok "$f holds libpasco.so and libpasco.a"
	else
		fail "$f does not hold libpasco.so and libpasco.a"
	fi
done
libdir=$(pkg-config --libs-only-L pasco | sed 's/^-L//; s/ .*//')
cp "$counter_source" "$tmp/prog.c"
cd "$tmp" || exit 1
warn="-Wall -Wextra -Werror"
# shellcheck disable=SC2046,SC2086
if cc -std=c17 $warn prog.c $(pkg-config --cflags --libs pasco) -o prog \
	> cc1.log 2>&1; then
	ok "the shared build"
else
	cat cc1.log
	fail "the shared build"
fi
# shellcheck disable=SC2046,SC2086
if cc -std=c17 $warn prog.c $(pkg-config --cflags pasco) \
	$(pkg-config --static --libs pasco | sed 's/-lpasco /-l:libpasco.a /') \
	-o prog-static > cc2.log 2>&1; then
	ok "the static build"
else
	cat cc2.log
	fail "the static build"
fi
run() { # label, binary
	out=$(LD_LIBRARY_PATH="$libdir" timeout 60 "$pasco" launch --ps 1 \
		--workers 2 -- "$2" 2>&1)
	if echo "$out" | grep -q '^\[chief 0\] counter = 100;'; then
		ok "$1 runs a cluster"
	else
		echo "$out"
		fail "$1 did not print the counter"
	fi
}
if [ -x prog ] && LD_LIBRARY_PATH="$libdir" ldd prog | grep -q "$libdir/libpasco.so"; then
	run "the shared build" ./prog
else
	fail "prog is missing or does not load $libdir/libpasco.so"
fi
if [ -x prog-static ] && ! ldd prog-static | grep -q libpasco; then
	run "the static build" ./prog-static
else
	fail "prog-static is missing or loads libpasco.so"
fi
finish
