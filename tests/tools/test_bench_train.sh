#!/bin/sh
# bench/train's options (issue 35): --window and --ps reach the run (the
# header names them; each figure says how busy the machine was, from
# /proc/stat), and a ps count past the launch's or a window of 0 is refused
# naming it (status 2); --model trains one model. Launches on loopback, 20
# steps a figure.
# usage: test_bench_train.sh PASCO TRAIN
set -u
PASCO=$1 TRAIN=$2
. "$(dirname "$0")/harness.sh"

out=$tmp/out
timeout 120 "$PASCO" launch --ps 2 --workers 2 -- "$TRAIN" --steps 20 \
	--window 2 --ps 2 > "$out" 2>&1
st=$?
if [ "$st" -eq 0 ] && grep -q "parameters on 2 ps, window 2," "$out"; then
	ok "the header names --ps 2 and --window 2"
else
	fail "status $st, header: $(grep -m1 'training benchmark' "$out")"
fi
n=$(grep -c -E 'workers? +[0-9]+ steps/s .* machine [0-9]+% busy \([0-9]+% system\)$' "$out")
if [ "$n" -eq 4 ]; then
	ok "each of the 4 figures says how busy the machine was"
else
	fail "$n of 4 figures with the machine's busy share: $(cat "$out")"
fi
for bad in "--ps 3" "--window 0" "--steps x"; do
	# shellcheck disable=SC2086 # the option and its value, split
	timeout 60 "$PASCO" launch --ps 2 --workers 1 -- "$TRAIN" $bad \
		> "$out" 2>&1
	st=$?
	if [ "$st" -eq 2 ] && grep -q -- "${bad%% *} '${bad#* }' is not a number" "$out"; then
		ok "$bad is refused naming it"
	else
		fail "$bad: status $st: $(cat "$out")"
	fi
done
timeout 60 "$PASCO" launch --ps 1 --workers 1 -- "$TRAIN" --steps 20 \
	--model softmax > "$out" 2>&1
if grep -q "softmax 784-10, 1 worker" "$out" && ! grep -q MLP "$out"; then
	ok "--model softmax trains softmax alone"
else
	fail "--model softmax: $(cat "$out")"
fi
timeout 60 "$PASCO" launch --ps 1 --workers 1 -- "$TRAIN" --model cnn \
	> "$out" 2>&1
st=$?
if [ "$st" -eq 2 ] && grep -q -- "--model 'cnn' is not mlp or softmax" "$out"; then
	ok "--model cnn is refused naming it"
else
	fail "--model cnn: status $st: $(cat "$out")"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
