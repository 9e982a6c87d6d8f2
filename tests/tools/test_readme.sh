#!/bin/sh
# The programs of the README and of the manual (docs/*.md) are the examples
# themselves: the ```c (or ```python) block after each
# `<!-- readme-example: examples/X -->` marker, in README.md or any
# docs/*.md, must equal examples/X byte for byte (re-sync a block by
# pasting the file in), and a complete program (a main, a __main__) must
# have such a marker. The README's first must be examples/mlp_csv.c (a
# model fit by the workers), and examples/counter.c (the low-level API,
# docs/lowlevel.md) must be on some page too. Then both run
# as the README runs them and print what it says: mlp_csv on make_table's
# data through `pasco launch` (accuracy >= 0.9), counter on 1 ps.
# And examples/mlp_csv.py (the Python section) as the README runs it, the
# package from the checkout (PYTHONPATH=python) on this build's library.
# usage: test_readme.sh README SOURCE_ROOT PASCO MAKE_TABLE MLP_CSV COUNTER LIBPASCO SANITIZE PYTHON
set -u
readme=$1 root=$2 pasco=$3 make_table=$4 mlp_csv=$5 counter=$6
libpasco=${7:-} sanitize=${8:-none} python=${9:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

# The pages: the front page, then the manual (docs/*.md). In each, every
# marker's block goes to its own file: $tmp/block<N> holds the program the
# N-th marker names, $tmp/names "PAGE NAME" a line. A complete program
# (a ```c block with a main, a ```python block with __main__) that no
# marker names is listed in $tmp/unmarked: it would go unchecked.
pages=$readme
for page in "$root"/docs/*.md; do
	[ -f "$page" ] && pages="$pages $page"
done
: > "$tmp/names"
: > "$tmp/unmarked"
for page in $pages; do
	rel=${page#"$root"/}
	awk -v dir="$tmp" -v page="$rel" -v n="$(wc -l < "$tmp/names")" '
		/^<!-- readme-example: [^ ]+ -->$/ {
			n++; print page " " $3 >> (dir "/names"); want = 1; next }
		want && /^```(c|python)$/ { inside = 1; want = 0; next }
		want && !/^[[:space:]]*$/ { want = 0 } # the block must come next
		inside && /^```$/ { inside = 0; close(dir "/block" n); next }
		inside { print > (dir "/block" n); next }
		/^```(c|python)$/ { other = 1; start = FNR; program = 0; next }
		other && /^```$/ {
			if (program) print page ":" start >> (dir "/unmarked")
			other = 0; next }
		other && (/^(int|static int)?[[:space:]]*main[[:space:]]*\(/ ||
		    /^main\(/ || /__main__/) { program = 1 }' "$page"
done
if [ ! -s "$tmp/names" ]; then
	fail "no <!-- readme-example: examples/X.c --> marker in $readme or docs/"
else
	n=0
	while IFS=' ' read -r page name; do
		n=$((n + 1))
		if [ ! -f "$tmp/block$n" ]; then
			fail "$page: no \`\`\`c or \`\`\`python block right after the marker for $name"
		elif [ ! -f "$root/$name" ]; then
			fail "$page: a marker names $name, which does not exist"
		elif cmp -s "$tmp/block$n" "$root/$name"; then
			ok "$page: the block after its marker for $name is $name"
		else
			fail "$page: the block for $name differs from $name (copy the file into it):"
			diff "$tmp/block$n" "$root/$name" | head -40
		fi
	done < "$tmp/names"
	first=$(head -1 "$tmp/names")
	[ "$first" = "README.md examples/mlp_csv.c" ] &&
		ok "the README's first program is examples/mlp_csv.c" ||
		fail "the first program of README.md and docs/ is $first, not README.md's examples/mlp_csv.c"
	grep -q ' examples/counter\.c$' "$tmp/names" &&
		ok "the pages show examples/counter.c ($(grep ' examples/counter\.c$' "$tmp/names" | cut -d' ' -f1))" ||
		fail "neither README.md nor docs/ has a readme-example block for examples/counter.c"
fi
while IFS= read -r where; do
	fail "$where: a complete program with no <!-- readme-example: examples/X --> marker above it (make it an example file, and mark it)"
done < "$tmp/unmarked"

# mlp_csv, as the README runs it: make_table's data, 2 ps, 2 workers.
mkdir "$tmp/table"
if ! "$make_table" "$tmp/table" > "$tmp/table.out" 2>&1; then
	cat "$tmp/table.out"
	fail "make_table $tmp/table"
else
	out=$(timeout 120 "$pasco" launch --ps 2 --workers 2 \
		--checkpoint-root "$tmp/table" -- "$mlp_csv" "$tmp/table" 2>&1)
	status=$?
	acc=$(echo "$out" | sed -n 's/^\[chief 0\] Epoch 5\/5: .*, val_accuracy \([0-9.e+-]*\)$/\1/p')
	if [ "$status" -eq 0 ] &&
		awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }'; then
		ok "mlp_csv ends with val_accuracy $acc (>= 0.9)"
	else
		echo "$out"
		fail "mlp_csv: status $status, accuracy '$acc' (want >= 0.9)"
	fi
fi

out=$(timeout 60 "$pasco" launch --ps 1 --workers 2 -- "$counter" 2>&1)
if echo "$out" | grep -q '^\[chief 0\] counter = 100; the last closure ran on worker [01]$'; then
	ok "counter prints counter = 100"
else
	echo "counter printed: $out"
	fail "counter did not print what docs/lowlevel.md says"
fi
# The Python section's script, as the README runs it.
if [ "$sanitize" != none ]; then
	echo "skip: examples/mlp_csv.py: this build uses -fsanitize=$sanitize (python3 cannot load its libpasco)"
elif ! "$python" -c 'import numpy' 2> /dev/null; then
	echo "skip: examples/mlp_csv.py: $python has no numpy (apt-get install python3-numpy)"
elif [ -f "$tmp/table/train.csv" ]; then
	rm -rf "$tmp/table"/ckpt-*
	abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
	pasco_abs=$(abs "$pasco") lib_abs=$(abs "$libpasco")
	out=$(cd "$root" && PYTHONPATH=python PASCO_LIBRARY="$lib_abs" timeout 150 \
		"$pasco_abs" launch --ps 2 --workers 2 --checkpoint-root "$tmp/table" -- \
		"$python" examples/mlp_csv.py "$tmp/table" 2>&1)
	status=$?
	if [ "$status" -eq 0 ] &&
		echo "$out" | grep -q "^\[chief 0\] epoch 4: val_accuracy " &&
		echo "$out" | grep -q "^\[chief 0\] evaluate: {'loss': "; then
		ok "examples/mlp_csv.py prints what the README says: $(echo "$out" | grep '^\[chief 0\] epoch 4')"
	else
		echo "$out"
		fail "examples/mlp_csv.py: status $status"
	fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
