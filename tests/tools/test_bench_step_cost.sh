#!/bin/sh
# bench/step_cost's round-trip table (issue 35): for each model, the round
# trips per step (1 + 2 per ps), then unpinned, pinned to 2 CPUs and pinned
# to 1 CPU, the worker's switches per step, its voluntary ones and its
# switches per round trip, each a number that agrees with the others (no
# timing is asserted: the figures are whatever this machine gives). A
# launch of 2 ps and 1 worker on loopback, 20 steps a figure.
# usage: test_bench_step_cost.sh PASCO STEP_COST
set -u
PASCO=$1 STEP_COST=$2
. "$(dirname "$0")/harness.sh"

out=$tmp/out
timeout 170 "$PASCO" launch --ps 2 --workers 1 -- "$STEP_COST" --steps 20 \
	> "$out" 2>&1
st=$?
if [ "$st" -eq 0 ]; then
	ok "step_cost ran with 2 ps"
else
	fail "status $st: $(tail -20 "$out")"
fi
tables=$(grep -c "worker switches per round trip (a step's round trips" "$out")
if [ "$tables" -eq 2 ]; then
	ok "a round-trip table for each of the 2 models"
else
	fail "$tables round-trip tables of 2: $(cat "$out")"
fi
rows=$(grep -c -E '^\[chief 0\]   round trips per step +3 +5$' "$out")
if [ "$rows" -eq 2 ]; then
	ok "round trips per step: 3 with 1 ps, 5 with 2"
else
	fail "round trips per step: $(grep 'round trips per step' "$out")"
fi
# Each pinning's block: its four rows with a figure per ps count, the
# switches per round trip the switches per step over the round trips (to
# the printed precision), voluntary ones at most all of them, and none
# negative or absurd (over 1000 a round trip).
for how in "unpinned" "pinned to 2 CPUs" "pinned to 1 CPU"; do
	checked=$(sed 's/^\[chief 0\] //' "$out" | awk -v how="  $how:" '
		$0 == how { on = 1; row = 0; next }
		on && row == 0 && /^    steps\/s / { rate1 = $2; rate2 = $3; row++; next }
		on && row == 1 && /^    worker switches\/step / { s1 = $3; s2 = $4; row++; next }
		on && row == 2 && /^      of them voluntary / { v1 = $4; v2 = $5; row++; next }
		on && row == 3 && /^    switches per round trip / {
			r1 = $5; r2 = $6; on = 0
			good = rate1 > 0 && rate2 > 0 && s1 >= 0 && s2 >= 0 &&
			    v1 >= 0 && v2 >= 0 && v1 <= s1 + 0.005 &&
			    v2 <= s2 + 0.005 && r1 < 1000 && r2 < 1000 &&
			    (r1 * 3 - s1) ^ 2 < 0.02 ^ 2 * 9 &&
			    (r2 * 5 - s2) ^ 2 < 0.02 ^ 2 * 25
			n += good; next }
		on { on = 0 }
		END { print n + 0 }')
	if [ "$checked" -eq 2 ]; then
		ok "$how: steps/s, switches, voluntary and per round trip agree for both models"
	elif [ "$how" = "pinned to 2 CPUs" ] && [ "$(nproc)" -lt 2 ] &&
		[ "$(grep -c "$how: not measured (fewer CPUs here)" "$out")" -eq 2 ]; then
		ok "$how: not measured on $(nproc) CPU, and said so"
	else
		fail "$how: $checked of 2 blocks sane: $(sed -n "/round trips per step/,/^\[chief 0\] *$/p" "$out")"
	fi
done
json=$(grep -c -E '"figure": "[^"]+, [12] ps, (unpinned|pinned to [12] CPUs?): worker switches per round trip", "value": [0-9.e+-]+' "$out")
if [ "$json" -eq 12 ]; then
	ok "12 JSON lines of switches per round trip (2 models, 2 ps counts, 3 pinnings)"
else
	fail "$json JSON lines of switches per round trip, not 12"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
